/** Calendar months and days in UTC: the free tier's and the monthly spend limit's period, and the daily counters' day. */

/** The last month and day computed (every proxied request asks for both): [from, to) in ms and their names. */
let lastPeriod = { from: 0, to: 0, value: '' };
let lastDay = { from: 0, to: 0, value: '' };

/** The UTC month of `ms`, `YYYY-MM`. */
export function periodOf(ms: number): string {
  if (ms >= lastPeriod.from && ms < lastPeriod.to) return lastPeriod.value;
  const d = new Date(ms);
  const year = d.getUTCFullYear();
  const value = `${year}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  // (Date.UTC reads years 0–99 as 1900–1999: such months are computed each time, never cached.)
  if (year >= 100) lastPeriod = { from: Date.UTC(year, d.getUTCMonth(), 1), to: Date.UTC(year, d.getUTCMonth() + 1, 1), value };
  return value;
}

export function nextPeriodStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

const DAY_MS = 86_400_000;

/** The UTC day of `ms`, `YYYY-MM-DD`. */
export function dayOf(ms: number): string {
  if (ms >= lastDay.from && ms < lastDay.to) return lastDay.value;
  const value = new Date(ms).toISOString().slice(0, 10);
  // Only for days a Date can name as YYYY-MM-DD (years 0–9999): others are computed each time.
  if (value.length === 10) {
    const from = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
    lastDay = { from, to: from + DAY_MS, value };
  }
  return value;
}

/** `YYYY-MM-DD` → the UTC midnight it starts at; undefined when it is not a real calendar day (`2026-02-30`). */
export function dayStart(day: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined;
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  return Number.isNaN(ms) || dayOf(ms) !== day ? undefined : ms;
}

/** Every day from `from` to `to` (inclusive, both `YYYY-MM-DD` from dayStart), in order. */
export function daysBetween(fromMs: number, toMs: number): string[] {
  const days: string[] = [];
  for (let ms = fromMs; ms <= toMs; ms += DAY_MS) days.push(dayOf(ms));
  return days;
}

export { DAY_MS };
