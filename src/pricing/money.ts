/**
 * Money as integers: amounts are micro-dollars (1 USD = 1_000_000 µ$) and
 * prices are micro-dollars per million tokens, so every sum and comparison is
 * exact (no floating-point drift). On the wire an amount is a decimal string
 * with at most six places ("12.5", "0.000125"); parseUsd/formatUsd are the
 * only converters, so the API, the CLI and the logs write amounts the same way.
 */

export const MICROS_PER_USD = 1_000_000;

/** Largest amount accepted: 10^12 USD, far below 2^53 µ$ (so every sum of a few stays a safe integer). */
const USD_PATTERN = /^(0|[1-9]\d{0,11})(?:\.(\d{1,6}))?$/;
/** The same grammar for schemas (the admin API's `budget_usd`, `spend_limit_usd`). */
export const USD_AMOUNT = USD_PATTERN;

/** "12.50" → 12_500_000 µ$; undefined for anything else (negative, exponent, more than six places, too large). */
export function parseUsd(s: unknown): number | undefined {
  if (typeof s !== 'string') return undefined;
  const m = USD_PATTERN.exec(s);
  if (!m) return undefined;
  const fraction = (m[2] ?? '').padEnd(6, '0');
  return Number(m[1]) * MICROS_PER_USD + Number(fraction);
}

/** 12_500_000 µ$ → "12.50"; at least two places, at most six, trailing zeros past the cents dropped. */
export function formatUsd(micros: number): string {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`not an amount of micro-dollars: ${micros}`);
  const sign = micros < 0 ? '-' : '';
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / MICROS_PER_USD);
  const fraction = String(abs % MICROS_PER_USD).padStart(6, '0').replace(/0{1,4}$/, '');
  return `${sign}${whole}.${fraction}`;
}

/**
 * A price in USD per million tokens as a provider file writes it (2.5, 0.075) → micro-dollars per
 * million tokens (2_500_000, 75_000). Undefined when it is not a finite amount ≥ 0 with at most six places.
 */
export function priceMicrosPerMillion(usdPerMillion: unknown): number | undefined {
  if (typeof usdPerMillion !== 'number' || !Number.isFinite(usdPerMillion) || usdPerMillion < 0 || usdPerMillion > 1_000_000) return undefined;
  const micros = Math.round(usdPerMillion * MICROS_PER_USD);
  // More than six places would be rounded away silently: refuse instead.
  if (Math.abs(micros - usdPerMillion * MICROS_PER_USD) > 1e-6 * Math.max(1, micros)) return undefined;
  return micros;
}

/** The cost in µ$ of `tokens` at `microsPerMillion`, rounded up (a reservation never falls short by rounding). */
export function tokensCost(tokens: number, microsPerMillion: number): number {
  if (tokens <= 0 || microsPerMillion <= 0) return 0;
  // BigInt: a 64 MB body's bound (~7·10^7 tokens) times a price can pass 2^53.
  const scaled = BigInt(tokens) * BigInt(microsPerMillion);
  const micros = (scaled + 999_999n) / 1_000_000n;
  return micros > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(micros);
}
