/**
 * The latency rows of the side-by-side run, every path in rotated rounds:
 *   c=1          sequential requests on one keep-alive connection
 *   100/s, 1,000/s  open loop at a fixed rate (requests sent on schedule, whatever is still in flight)
 *   first SSE byte  sequential 5-event streams: time to the first body byte
 * Reported as added latency: each path's percentile minus the direct path's.
 *
 * Alone: `npm run bench -- latency` (every path started and warmed up first, as in the whole run).
 */
import type { LatencyResult, TtfbResult } from '../lib/load.js';
import { stats } from '../lib/load.js';
import { mergeLatency, phase, type Paths } from '../lib/paths.js';
import { D } from '../lib/settings.js';
import { sideBySide } from '../lib/standalone.js';

export async function latencyPhases(p: Paths): Promise<void> {
  await phase<LatencyResult>(p, 'c=1', (target) => ({ mode: 'c1', target, durationMs: D.c1Ms, warmupMs: 200 }), (r, o) => (r.c1 = mergeLatency(o.map((x) => x.out))));
  await phase<LatencyResult>(p, '100/s', (target) => ({ mode: 'rate', target, rate: 100, durationMs: D.rate100Ms, warmupMs: 200 }), (r, o) => (r.rate100 = mergeLatency(o.map((x) => x.out))));
  await phase<LatencyResult>(p, '1000/s', (target) => ({ mode: 'rate', target, rate: 1000, durationMs: D.rate1000Ms, warmupMs: 200 }), (r, o) => (r.rate1000 = mergeLatency(o.map((x) => x.out))));
  await phase<TtfbResult>(p, 'ttfb', (target) => ({ mode: 'ttfb', target, events: 5, durationMs: D.ttfbMs, warmupMs: 100 }), (r, o) => {
    r.ttfb = { firstByte: stats(o.flatMap((x) => x.out.samples)), errors: o.reduce((a, x) => a + x.out.errors, 0), non2xx: o.reduce((a, x) => a + x.out.non2xx, 0) };
  });
}

/** `npm run bench -- latency`: the row alone. */
export const run = (): Promise<void> => sideBySide('latency', (p) => latencyPhases(p));
