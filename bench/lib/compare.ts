/**
 * Two ways through the same Keyward process, measured alike: each warmed up for a second of saturation,
 * then interleaved rounds (the order alternating)
 * of c=1 latency and saturation, with the server's CPU per request during each saturation run; the
 * median of each. The federation row (a key against a federated credential) and the pool row (a plain
 * token against a pooled one) are both this comparison; the body-hooks row compares Keyward processes started
 * with different plugins (`procs`: whose CPU each target's requests are charged to).
 */
import type { LatencyResult, SatResult, Target } from './load.js';
import { cpuSeconds, type LoadWorker, type Proc } from './servers.js';

export interface Measured {
  p50: number;
  rps: number;
  cpuUsPerRequest: number;
}

export interface CompareOptions {
  rounds: number;
  c1Ms: number;
  satS: number;
  connections: number;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Measures each target of `targets` (two or more, by name); `label` prefixes the log lines; `procs`: a target served by another process. */
export async function compareTargets<N extends string>(worker: LoadWorker, keyward: Proc, targets: Record<N, Target>, o: CompareOptions,
  label: string, log: (m: string) => void, procs: Partial<Record<N, Proc>> = {}): Promise<Record<N, Measured>> {
  const order = Object.keys(targets) as N[];
  const seen = Object.fromEntries(order.map((n) => [n, { p50: [] as number[], rps: [] as number[], cpu: [] as number[] }])) as Record<N, { p50: number[]; rps: number[]; cpu: number[] }>;
  // Each way warmed up first, unmeasured: one that the bench's earlier phases never ran (a pooled token's
  // router, a federated signer) would otherwise be measured while V8 still compiles it.
  for (const name of order) await worker.run<SatResult>({ mode: 'sat', target: targets[name], connections: o.connections, durationS: 1, warmupS: 0 });
  for (let round = 0; round < o.rounds; round++) {
    for (let j = 0; j < order.length; j++) {
      const name = order[(j + round) % order.length]!;
      const t = targets[name];
      const c1 = await worker.run<LatencyResult>({ mode: 'c1', target: t, durationMs: o.c1Ms, warmupMs: 200 });
      // CPU over the whole run: its 1 s warm-up (round 0) is served too, so count every request sent.
      const server = procs[name] ?? keyward;
      const before = cpuSeconds(server.pids());
      const sat = await worker.run<SatResult>({ mode: 'sat', target: t, connections: o.connections, durationS: o.satS, warmupS: 0 });
      const cpuUs = ((cpuSeconds(server.pids()) - before) * 1e6) / sat.total;
      if (c1.errors + c1.non2xx + sat.errors + sat.non2xx > 0) throw new Error(`${label} row: ${name} had failed requests`);
      seen[name].p50.push(c1.latency.p50);
      seen[name].rps.push(sat.rps);
      seen[name].cpu.push(cpuUs);
      log(`${label} ${name.padEnd(9)} c=1 p50 ${c1.latency.p50.toFixed(3)} ms, ${sat.rps.toFixed(0)} req/s, ${cpuUs.toFixed(0)} µs CPU/req`);
    }
  }
  return Object.fromEntries(order.map((n) => [n, { p50: median(seen[n].p50), rps: median(seen[n].rps), cpuUsPerRequest: median(seen[n].cpu) }])) as Record<N, Measured>;
}
