/**
 * The saturation row of the side-by-side run: autocannon at 64 connections on every path in rotated rounds
 * (plus a 1 s warm-up in round 1): req/s (median of rounds), p99 latency, and the server's CPU µs per request
 * (user + system of all its threads, from /proc/<pid>/stat, over the requests served): the steadiest number
 * on a shared machine.
 *
 * Alone: `npm run bench -- saturation` (every path started and warmed up first, as in the whole run).
 */
import type { SatResult } from '../lib/load.js';
import { median, phase, type Paths } from '../lib/paths.js';
import { D } from '../lib/settings.js';
import { sideBySide } from '../lib/standalone.js';

export async function saturationPhase(p: Paths): Promise<void> {
  await phase<SatResult>(p, 'saturate', (target, round) => ({ mode: 'sat', target, connections: D.satConnections, durationS: D.satS, warmupS: round === 0 ? 1 : 0 }), (r, o) => {
    const outs = o.map((x) => x.out);
    r.sat = {
      rps: median(outs.map((x) => x.rps)),
      rpsRounds: outs.map((x) => Math.round(x.rps)),
      latencyP50: median(outs.map((x) => x.latencyP50)),
      latencyP99: median(outs.map((x) => x.latencyP99)),
      errors: outs.reduce((a, x) => a + x.errors, 0),
      non2xx: outs.reduce((a, x) => a + x.non2xx, 0),
      timeouts: outs.reduce((a, x) => a + x.timeouts, 0),
      // Round 0 includes a 1 s warm-up whose requests autocannon does not count: leave it out.
      cpuUsPerRequest: median(o.slice(o.length > 1 ? 1 : 0).map((x) => (x.cpuS * 1e6) / x.out.total)),
    };
  });
}

/** `npm run bench -- saturation`: the row alone. */
export const run = (): Promise<void> => sideBySide('saturation', (p) => saturationPhase(p));
