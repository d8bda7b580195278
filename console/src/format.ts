/**
 * How the console writes numbers and names, one way everywhere: counts with thousands separators
 * (10,000, never "10k" beside "10000"; millions as 1.2M), dollars with the precision their scale needs,
 * chart axes on round ticks in the figure's own unit, and a record by its name (else its provider and
 * key hint, else its id), so no list or form shows an opaque id alone where a name exists.
 */
import type { Credential, Provider } from './api.js';

/** A count as the console writes it: 1,234 (below a million), 1.2M (at and above). */
export function count(n: number): string {
  if (Math.abs(n) >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1).replace(/\.0$/, '')}M`;
  return Math.round(n).toLocaleString('en-US');
}

/** Dollars with `decimals` places (0 for whole dollars), thousands separated. */
export function dollars(n: number, decimals = 2): string {
  return `$${n.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals })}`;
}

/** An amount in dollars as a figure (not a tick): cents at least, more places only where they count ($20.00, $0.0035). */
export function money(n: number): string {
  const places = Math.min(6, Math.max(2, ...[2, 3, 4, 5, 6].filter((d) => Math.abs(Number(n.toFixed(d)) - n) > 1e-12).map((d) => d + 1)));
  return dollars(Number(n.toFixed(places)), places).replace(/(\.\d\d\d*?)0+$/, '$1');
}

/** An amount the API gave as a decimal string, as written: $12.50 (the API's own precision, at least cents). */
export const usdText = (amount: string): string => `$${amount}`;

export interface Axis {
  /** The tick values from 0 to the top, evenly spaced on a round step. */
  ticks: number[];
  top: number;
  /** Writes every tick with the same precision, the step's own. */
  label(n: number): string;
}

/** A round step (1, 2 or 5 × 10^k) that splits `max` into about `want` parts. */
export function niceStep(max: number, want = 4): number {
  const raw = max / want;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5]) if (m * p >= raw) return m * p;
  return 10 * p;
}

/**
 * An axis from 0 to at least `max` on round ticks. `unit` says how a tick is written: `count` in whole
 * numbers (a step below 1 is rounded up to 1), `usd` in dollars with as many decimals as the step needs
 * (every tick alike: $0.000, $0.005, $0.010, never "$0" beside "$0.0000"). An empty series gets one step.
 */
export function axis(max: number, unit: 'count' | 'usd'): Axis {
  // The smallest top: one request, or a tenth of a cent (a day of test traffic still gets a scale of its own).
  const floor = unit === 'count' ? 1 : 0.001;
  let step = niceStep(Math.max(max, floor * 4) || floor * 4);
  if (unit === 'count') step = Math.max(1, Math.round(step));
  const n = Math.max(1, Math.ceil(max / step - 1e-9));
  const ticks = Array.from({ length: n + 1 }, (_, i) => Number((i * step).toPrecision(12)));
  const decimals = unit === 'usd' ? Math.max(step >= 1 ? 0 : 2, -Math.floor(Math.log10(step) + 1e-9)) : 0;
  return { ticks, top: ticks[ticks.length - 1]!, label: (v) => (unit === 'usd' ? dollars(v, decimals) : count(v)) };
}

/** A credential in a sentence or a picker: its name, the provider and the key's last characters. */
export function credentialLabel(c: Credential, providers: readonly Provider[] = []): string {
  const provider = providers.find((p) => p.id === c.provider)?.name ?? c.provider;
  return c.name ? `${c.name} (${provider}, key ${c.key_hint})` : `${provider} key ${c.key_hint}`;
}

/** A record's name, or a dash where it has none. */
export const nameOrDash = (r: { name?: string | undefined }): string => r.name ?? '—';
