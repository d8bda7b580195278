/**
 * The ab row, A/B for hot-path changes: several builds of Keyward (and the bare Node proxy as a yardstick) under
 * the same load, interleaved in rounds so a busy machine hurts each alike. Reports requests/s and, steadier on a
 * shared machine, the server's CPU time per request (user + system from /proc), c=1 p50 and first SSE byte p50.
 * The variants (builds, builds with environment overrides, floor:<parts>) are bench/lib/ab.ts's.
 *
 *   npm run bench -- ab [<dist dir>[,VAR=value…] | floor:<parts>]…   default: dist
 *   e.g. mkdir -p bench/.ab/base && cp -r dist bench/.ab/base/dist, change, then
 *   npm run bench -- ab bench/.ab/base/dist dist
 *   BENCH_AB_ROUNDS (5), BENCH_AB_S (4), BENCH_AB_SSE=N (SSE of N events instead of JSON), BENCH_AB_C (64)
 *   BENCH_AB_SOAK=N: instead, N concurrent SSE streams of 200 events 10 ms apart (wall time, peak RSS),
 *   started over BENCH_AB_RAMP ms (default 500; 0 = one burst)
 */
import os from 'node:os';
import { startVariants } from '../lib/ab.js';
import type { LatencyResult, SatResult, SoakResult, TtfbResult } from '../lib/load.js';
import { Session } from '../lib/paths.js';
import { cpuSeconds, memory, resetPeak, runLoad, sleep, startFake } from '../lib/servers.js';

export async function run(args: string[]): Promise<void> {
  const dists = args.length ? args : ['dist'];
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5);
  const seconds = Number(process.env.BENCH_AB_S ?? 4);
  const connections = Number(process.env.BENCH_AB_C ?? 64);
  const sse = process.env.BENCH_AB_SSE;
  const session = new Session();
  try {
    const fake = session.add(await startFake());
    const variants = await startVariants(session, fake, dists, sse ? { 'x-bench-sse': `${sse}:0` } : {});

    const soakStreams = Number(process.env.BENCH_AB_SOAK ?? 0);
    if (soakStreams > 0) {
      for (let r = 0; r < rounds; r++) {
        for (let j = 0; j < variants.length; j++) {
          const v = variants[(j + r) % variants.length]!;
          resetPeak(v.proc.pids());
          const before = cpuSeconds(v.proc.pids());
          const s = await runLoad<SoakResult>({ mode: 'soak', target: { ...v.target, headers: { 'x-proxy-token': v.target.headers['x-proxy-token']! } }, streams: soakStreams, events: 200, delayMs: 10, timeoutMs: 60_000, rampMs: Number(process.env.BENCH_AB_RAMP ?? 500) });
          const cpu = cpuSeconds(v.proc.pids()) - before;
          process.stderr.write(`round ${r} ${v.name.padEnd(34)} ${s.completed}/${s.streams}  wall ${(s.wallMs / 1000).toFixed(2)} s  first event p50 ${s.firstEvent.p50.toFixed(1)} p99 ${s.firstEvent.p99.toFixed(1)} ms  peak RSS ${memory(v.proc.pids()).hwmMb.toFixed(0)} MB  CPU ${cpu.toFixed(2)} s  load ${os.loadavg()[0]!.toFixed(1)}\n`);
          await sleep(500);
        }
      }
      return;
    }
    const res = new Map<string, { rps: number[]; cpuUs: number[]; c1: number[]; ttfb: number[] }>(variants.map((v) => [v.name, { rps: [], cpuUs: [], c1: [], ttfb: [] }]));
    for (const v of variants) await runLoad({ mode: 'sat', target: v.target, connections: 16, durationS: 2, warmupS: 0 });
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < variants.length; j++) {
        const v = variants[(j + r) % variants.length]!;
        const before = cpuSeconds(v.proc.pids());
        const s = await runLoad<SatResult>({ mode: 'sat', target: v.target, connections, durationS: seconds, warmupS: 0 });
        const cpu = cpuSeconds(v.proc.pids()) - before;
        const c1 = await runLoad<LatencyResult>({ mode: 'c1', target: v.target, durationMs: 1500, warmupMs: 200 });
        const ttfb = await runLoad<TtfbResult>({ mode: 'ttfb', target: v.target, events: 5, durationMs: 1500, warmupMs: 200 });
        const m = res.get(v.name)!;
        m.ttfb.push(ttfb.firstByte.p50);
        m.rps.push(s.rps);
        m.cpuUs.push((cpu * 1e6) / s.total);
        m.c1.push(c1.latency.p50);
        process.stderr.write(`round ${r} ${v.name.padEnd(34)} ${s.rps.toFixed(0).padStart(6)} req/s  ${((cpu * 1e6) / s.total).toFixed(0).padStart(5)} µs CPU/req  c=1 p50 ${c1.latency.p50.toFixed(3)} ms  first SSE byte p50 ${ttfb.firstByte.p50.toFixed(3)} ms  bad ${s.errors + s.non2xx}  load ${os.loadavg()[0]!.toFixed(1)}\n`);
        await sleep(200);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    process.stdout.write(`\n${sse ? `SSE ${sse} events` : 'JSON'}, ${connections} connections, ${rounds} rounds × ${seconds} s (medians):\n`);
    for (const [name, m] of res) {
      process.stdout.write(`  ${name.padEnd(34)} ${med(m.rps).toFixed(0).padStart(6)} req/s  ${med(m.cpuUs).toFixed(0).padStart(5)} µs CPU/req  c=1 p50 ${med(m.c1).toFixed(3)} ms  first SSE byte p50 ${med(m.ttfb).toFixed(3)} ms\n`);
    }
  } finally {
    await session.close();
  }
}
