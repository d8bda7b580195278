/**
 * The alloc row, `npm run bench -- alloc`: bytes allocated per proxied request, by the function that allocated them (V8's sampling
 * heap profiler, objects a minor or major GC collected included: garbage is what a proxy makes most). Keyward
 * (or the floor) under 64 connections of the JSON chat completion; sampling runs for 4 s after a 2 s warm-up,
 * started and stopped by SIGUSR2 through the preload bench/lib/heap-sample.mjs.
 *   BENCH_ALLOC_FLOOR=1          bench/lib/floor-proxy.mjs with every piece instead of Keyward
 *   BENCH_ALLOC_SCOPES='{…}'     the token's scopes (budget_usd needs the priced providers: given then)
 *   BENCH_ALLOC_OUT=<file>       where the profile goes (default a temp file); <file>.per-request.json holds the table
 *   BENCH_ALLOC_BASE=<file>.per-request.json  print the difference against an earlier run instead
 *   BENCH_MAIN=<main.js>         another build (default dist/src/main.js)
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LIB, pricedProvidersDir, provision, runLoad, sleep, startFake, startKeyward, startReadyLine } from '../lib/servers.js';
import type { SatResult } from '../lib/load.js';
import { BODY, KEY } from '../lib/settings.js';

interface Node { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Node[] }

export async function run(): Promise<void> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-alloc-'));
  const out = process.env.BENCH_ALLOC_OUT ?? path.join(tmp, 'heap.json');
  const floor = process.env.BENCH_ALLOC_FLOOR === '1';
  const preload = ['--import', path.join(LIB, 'heap-sample.mjs')];
  const fake = await startFake();
  const server = floor
    ? await startReadyLine('floor', path.join(LIB, 'floor-proxy.mjs'), { PORT: '0', UPSTREAM: `127.0.0.1:${fake.port}`, BENCH_KEY: KEY, FLOOR_PARTS: 'hp3,hash,log,metrics,mask', FLOOR_LOG: path.join(tmp, 'floor.log'), HEAP_OUT: out }, preload)
    : await startKeyward(path.join(tmp, 'data'), fake.port, path.join(tmp, 'keyward.log'), { nodeFlags: preload, ...(process.env.BENCH_MAIN ? { main: path.resolve(process.env.BENCH_MAIN) } : {}), env: { HEAP_OUT: out, ...(process.env.BENCH_ALLOC_SCOPES ? { KEYWARD_PROVIDERS_DIR: pricedProvidersDir(tmp) } : {}) } });
  const ptok = floor ? `ptok_${'x'.repeat(38)}` : await provision(`http://127.0.0.1:${server.port}`, KEY, JSON.parse(process.env.BENCH_ALLOC_SCOPES ?? '{}'));
  const target = { url: `http://127.0.0.1:${server.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok }, body: BODY };
  await runLoad<SatResult>({ mode: 'sat', target, connections: 64, durationS: 2, warmupS: 0 });
  process.kill(server.pids()[0]!, 'SIGUSR2');
  await sleep(100);
  const r = await runLoad<SatResult>({ mode: 'sat', target, connections: 64, durationS: 4, warmupS: 0 });
  process.kill(server.pids()[0]!, 'SIGUSR2');
  await sleep(1500);
  await server.stop();
  await fake.stop();

  const by = new Map<string, number>();
  const walk = (n: Node): void => {
    const cf = n.callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^.*\/(dist|node_modules)\//, '').replace(/^file:\/\/.*\/bench\//, 'bench/')}:${cf.lineNumber + 1}`;
    by.set(key, (by.get(key) ?? 0) + n.selfSize / r.total);
    for (const c of n.children) walk(c);
  };
  walk((JSON.parse(readFileSync(out, 'utf8')) as { head: Node }).head);
  writeFileSync(`${out}.per-request.json`, JSON.stringify(Object.fromEntries(by)));
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  process.stdout.write(`${floor ? 'floor' : 'keyward'}: ${r.total} requests sampled, ${sum(by).toFixed(0)} bytes allocated per request (${out}.per-request.json)\n\n`);
  const base = process.env.BENCH_ALLOC_BASE ? new Map(Object.entries(JSON.parse(readFileSync(process.env.BENCH_ALLOC_BASE, 'utf8')) as Record<string, number>)) : undefined;
  if (base) {
    process.stdout.write(`against ${process.env.BENCH_ALLOC_BASE}: ${sum(base).toFixed(0)} bytes per request\n\n    this    base  function\n`);
    const rows = [...new Set([...by.keys(), ...base.keys()])].map((k) => ({ k, a: by.get(k) ?? 0, b: base.get(k) ?? 0 })).sort((x, y) => (y.a - y.b) - (x.a - x.b));
    for (const row of rows.slice(0, 45)) process.stdout.write(`${(row.a - row.b).toFixed(0).padStart(7)} ${row.a.toFixed(0).padStart(7)} ${row.b.toFixed(0).padStart(7)}  ${row.k}\n`);
  } else {
    for (const [k, v] of [...by].sort((a, b) => b[1] - a[1]).slice(0, 45)) process.stdout.write(`${v.toFixed(0).padStart(7)}  ${k}\n`);
  }
}
