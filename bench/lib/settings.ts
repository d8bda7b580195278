/**
 * The bench's settings: how long and how many rounds each phase of the side-by-side run lasts (every row of
 * `npm run bench` reads them, so a row run alone measures as it does inside the whole run), the one request
 * every row sends, the key the fake provider is given, and the progress log on stderr.
 *
 * BENCH_QUICK=1 shortens every phase (a smoke run, not for numbers). BENCH_SIDE_ROUNDS overrides the side
 * rows' rounds (budget, federation, pool, mcp-call).
 */
export const QUICK = process.env.BENCH_QUICK === '1';

/** Every latency and throughput phase runs in `rounds` rounds, each round visiting every path (in a rotated order), so a machine whose load changes over the run affects every path alike. */
export const D = {
  rounds: QUICK ? 1 : 3,
  /** The side rows (budget, federation, pool) compare two ways on one process: their ratios are goals, so more rounds steady the median (a plain token's CPU per request spread 198-214 µs over 3). */
  sideRounds: Number(process.env.BENCH_SIDE_ROUNDS ?? (QUICK ? 1 : 5)),
  warmupS: QUICK ? 1 : 2,
  c1Ms: QUICK ? 1000 : 1500,
  rate100Ms: QUICK ? 1000 : 2000,
  rate1000Ms: QUICK ? 1000 : 2000,
  ttfbMs: QUICK ? 500 : 1000,
  satS: QUICK ? 2 : 3,
  satConnections: 64,
  soakStreams: Number(process.env.BENCH_SOAK_STREAMS ?? (QUICK ? 200 : 1000)),
  soakEvents: 200,
  soakDelayMs: 10,
  soakRampMs: 500,
  soakRounds: QUICK ? 1 : 3,
  coldStarts: QUICK ? 2 : 5,
};

/** The side rows' settings (c=1 and saturation per way, in `sideRounds` rounds). */
export const sideOptions = () => ({ rounds: D.sideRounds, c1Ms: D.c1Ms, satS: D.satS, connections: D.satConnections });

/** The provider key every credential holds; the fake provider answers any key. */
export const KEY = `sk-bench-${'k'.repeat(40)}`;
/** The 97-byte chat completion request every proxied request sends. */
export const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });

export function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}
