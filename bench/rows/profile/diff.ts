/**
 * Where Keyward's CPU per request goes beyond the bare Node proxy's: both run under
 * `--cpu-prof` through the same fake provider at the same saturation load (64
 * connections), one after the other; only the samples of the measured window count
 * (start-up and provisioning are left out). Prints µs of self time per request by
 * function, Keyward's minus bare's, largest first, per request.
 *   npm run bench -- profile diff   BENCH_PROFILE_S (default 8),
 *   BENCH_PROFILE_SSE=N (SSE responses of N events instead of JSON), BENCH_PROFILE_TOP (rows, default 60),
 *   BENCH_PROFILE_FLOOR=hp3,hash,log,metrics,mask: the base is bench/lib/floor-proxy.mjs with those parts, not the bare proxy
 *   BENCH_PROFILE_SCOPES='{"tokens_per_minute":1000000000}': the base is Keyward with a plain token, against Keyward with
 *   a token of these scopes (what a scope costs, by function)
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SatResult } from '../../lib/load.js';
import { LIB, pricedProvidersDir, provision, runLoad, startFake, startKeyward, type Proc } from '../../lib/servers.js';

import { BODY, KEY } from '../../lib/settings.js';

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

/** Self-time µs per function over the samples taken between `fromUs` and `toUs` (profile clock). */
function selfTimes(file: string, fromUs: number, toUs: number): Map<string, number> {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const out = new Map<string, number>();
  let t = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i]!;
    t += dt;
    if (t < fromUs || t > toUs) continue;
    const cf = byId.get(prof.samples[i]!)!.callFrame;
    if (cf.functionName === '(idle)') continue;
    const where = cf.url.includes('node_modules/') ? cf.url.slice(cf.url.lastIndexOf('node_modules/') + 13) : cf.url.replace(/^.*\/dist\//, '').replace(/^file:\/\/.*\/bench\//, 'bench/');
    const key = `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
    out.set(key, (out.get(key) ?? 0) + (prof.timeDeltas[i + 1] ?? dt));
  }
  return out;
}

function profileStart(file: string): number {
  return (JSON.parse(readFileSync(file, 'utf8')) as CpuProfile).startTime;
}

async function measure(name: string, start: (dir: string) => Promise<Proc & { target: string; headers: Record<string, string> }>, seconds: number): Promise<{ perReq: Map<string, number>; requests: number }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `keyward-pdiff-${name}-`));
  const p = await start(dir);
  const sse = process.env.BENCH_PROFILE_SSE;
  if (sse) p.headers['x-bench-sse'] = `${sse}:0`;
  const before = Date.now();
  await runLoad<SatResult>({ mode: 'sat', target: { url: p.target, headers: p.headers, body: BODY }, connections: 64, durationS: 1, warmupS: 0 });
  const from = Date.now();
  const r = await runLoad<SatResult>({ mode: 'sat', target: { url: p.target, headers: p.headers, body: BODY }, connections: 64, durationS: seconds, warmupS: 0 });
  const to = Date.now();
  await p.stop();
  const file = path.join(dir, readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!);
  // The profile's clock is monotonic µs; its start is mapped to wall time by the process start (before the warm-up).
  const t0 = profileStart(file);
  const self = selfTimes(file, t0 + (from - before) * 1000 + 0, t0 + (to - before) * 1000 + 5e6);
  const perReq = new Map<string, number>();
  for (const [k, v] of self) perReq.set(k, v / r.total);
  process.stdout.write(`${name}: ${r.rps.toFixed(0)} req/s, ${r.total} requests measured\n`);
  return { perReq, requests: r.total };
}

export async function diff(): Promise<void> {
  const seconds = Number(process.env.BENCH_PROFILE_S ?? 8);
  const fake = await startFake();
  try {
    const scopes = process.env.BENCH_PROFILE_SCOPES ? JSON.parse(process.env.BENCH_PROFILE_SCOPES) as Record<string, unknown> : undefined;
    const keywardWith = (tokenScopes: Record<string, unknown>) => async (dir: string) => {
      const k = await startKeyward(path.join(dir, 'data'), fake.port, path.join(dir, 'keyward.log'), { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`], env: { KEYWARD_PROVIDERS_DIR: pricedProvidersDir(dir) } });
      const ptok = await provision(`http://127.0.0.1:${k.port}`, KEY, tokenScopes);
      return { ...k, target: `http://127.0.0.1:${k.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok } };
    };
    const bare = scopes ? await measure('plain', keywardWith({}), seconds) : await measure('bare', async (dir) => {
      const floor = process.env.BENCH_PROFILE_FLOOR;
      const script = path.join(LIB, floor ? 'floor-proxy.mjs' : 'bare-proxy.mjs');
      const env = { ...process.env, PORT: '0', UPSTREAM: `127.0.0.1:${fake.port}`, BENCH_KEY: KEY, ...(floor ? { FLOOR_PARTS: floor, FLOOR_LOG: path.join(dir, 'floor.log') } : {}) };
      const proc = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
      const port = await new Promise<number>((resolve) => proc.stdout!.on('data', (d: Buffer) => { const m = /ready (\d+)/.exec(String(d)); if (m) resolve(Number(m[1])); }));
      return { name: 'bare', proc, port, pids: () => [proc.pid!], stderr: () => '', stop: async () => { proc.kill('SIGTERM'); await new Promise((r) => proc.once('exit', r)); }, target: `http://127.0.0.1:${port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': `ptok_${'x'.repeat(38)}` } }; // a ptok's length: the floor hashes it as Keyward does
    }, seconds);
    const keyward = await measure('keyward', keywardWith(scopes ?? {}), seconds);
    const keys = new Set([...bare.perReq.keys(), ...keyward.perReq.keys()]);
    const rows = [...keys].map((k) => ({ k, b: bare.perReq.get(k) ?? 0, w: keyward.perReq.get(k) ?? 0 })).sort((x, y) => (y.w - y.b) - (x.w - x.b));
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    process.stdout.write(`\nself time per request: bare ${sum(bare.perReq).toFixed(1)} µs, keyward ${sum(keyward.perReq).toFixed(1)} µs\n\n  keyward−bare  keyward    bare  function\n`);
    for (const r of rows.slice(0, Number(process.env.BENCH_PROFILE_TOP ?? 60))) {
      process.stdout.write(`${(r.w - r.b).toFixed(2).padStart(12)} ${r.w.toFixed(2).padStart(8)} ${r.b.toFixed(2).padStart(7)}  ${r.k}\n`);
    }
  } finally {
    await fake.stop();
  }
}
