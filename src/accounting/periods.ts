/** Calendar months and days in UTC: the free tier's and the monthly spend limit's period, and the daily counters' day. */
export function periodOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

export function nextPeriodStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
}

const DAY_MS = 86_400_000;

/** The UTC day of `ms`, `YYYY-MM-DD`. */
export function dayOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
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
