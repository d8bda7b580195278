/**
 * A/B for hot-path changes: several builds of Keyward (and the bare Node proxy
 * as a yardstick) under the same saturation load, interleaved in rounds so a
 * busy machine hurts each alike. Reports requests/s and, steadier on a shared
 * machine, the server's CPU time per request (user + system from /proc).
 *
 *   npx tsx bench/ab.ts [distDir[,VAR=value…]…]   default: dist
 *   a variant floor:<parts> is bench/floor-proxy.mjs with those parts (hp3,hash,log,metrics,mask): what the pieces
 *   Keyward cannot drop cost before any of its own code runs
 *   e.g. mkdir -p bench/.ab/base && cp -r dist bench/.ab/base/dist, change, npm run build, then
 *   npx tsx bench/ab.ts bench/.ab/base/dist dist   (keep the copy inside the repo, named dist: it
 *   resolves node_modules and its providers/ and plugins/ from there)
 *   BENCH_AB_ROUNDS (5), BENCH_AB_S (4), BENCH_AB_SSE=N (SSE of N events instead of JSON), BENCH_AB_C (64)
 *   BENCH_AB_SOAK=N: instead, N concurrent SSE streams of 200 events 10 ms apart (wall time, peak RSS),
 *   started over BENCH_AB_RAMP ms (default 500; 0 = one burst)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { LatencyResult, SatResult, SoakResult, Target, TtfbResult } from './lib/load.js';
import { ROOT, cpuSeconds, memory, provision, resetPeak, runLoad, sleep, startBare, startFake, startFloor, startKeyward, type Proc } from './lib/servers.js';

const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });

async function main(): Promise<void> {
  const dists = process.argv.slice(2).length ? process.argv.slice(2) : ['dist'];
  const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5);
  const seconds = Number(process.env.BENCH_AB_S ?? 4);
  const connections = Number(process.env.BENCH_AB_C ?? 64);
  const sse = process.env.BENCH_AB_SSE;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-ab-'));
  const procs: Proc[] = [];
  try {
    const fake = await startFake();
    procs.push(fake);
    const variants: Array<{ name: string; proc: Proc; target: Target }> = [];
    const bare = await startBare(fake.port, KEY);
    procs.push(bare);
    const extra: Record<string, string> = sse ? { 'x-bench-sse': `${sse}:0` } : {};
    let ptok = '';
    const floors: string[] = [];
    for (const [i, spec] of dists.entries()) {
      // floor:<parts>: bench/floor-proxy.mjs, the pieces Keyward cannot drop without its own code (started after the token exists).
      if (spec.startsWith('floor:')) {
        floors.push(spec);
        continue;
      }
      // A variant is a dist folder, optionally with environment overrides: dist,KEYWARD_LOG_LEVEL=warn
      // (a piece without `=` continues the previous value: dist,KEYWARD_PLUGINS=auth,quota)
      const [d, ...pieces] = spec.split(',');
      const envPairs: string[] = [];
      for (const p of pieces) {
        if (p.includes('=') || envPairs.length === 0) envPairs.push(p);
        else envPairs[envPairs.length - 1] += `,${p}`;
      }
      // (the pseudo-variable @log=FILE sends Keyward's stdout there instead of a file in the temp dir)
      const env = Object.fromEntries(envPairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)] as [string, string]));
      const logFile = env['@log'] ?? path.join(tmp, `k${i}.log`);
      delete env['@log'];
      const k = await startKeyward(path.join(tmp, `data${i}`), fake.port, logFile, { main: path.resolve(ROOT, d!, 'src/main.js'), env });
      procs.push(k);
      ptok = await provision(`http://127.0.0.1:${k.port}`, KEY);
      variants.push({ name: spec, proc: k, target: { url: `http://127.0.0.1:${k.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok, ...extra }, body: BODY } });
    }
    for (const [i, spec] of floors.entries()) {
      const f = await startFloor(fake.port, KEY, spec.slice('floor:'.length), path.join(tmp, `floor${i}.log`));
      procs.push(f);
      variants.push({ name: spec, proc: f, target: { url: `http://127.0.0.1:${f.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok || 'ptok_floor', ...extra }, body: BODY } });
    }
    variants.unshift({ name: 'bare', proc: bare, target: { url: `http://127.0.0.1:${bare.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok, ...extra }, body: BODY } });

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
    for (const p of procs.reverse()) await p.stop().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`ab failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
