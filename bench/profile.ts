/**
 * `npm run bench:profile`: Keyward (`node --cpu-prof dist/src/main.js`) under
 * saturation load through the fast fake provider, then a summary of the
 * profile's self time. The .cpuprofile is kept under bench/results/profiles/
 * (open it in Chrome DevTools → Performance, or speedscope).
 *   BENCH_PROFILE_S   seconds of load (default 10)
 *   BENCH_PROFILE_SSE events per request for an SSE profile instead of JSON (e.g. 20)
 *   BENCH_MAIN        another build's main.js (default dist/src/main.js)
 *   BENCH_KEYWARD_ENV extra environment for Keyward, e.g. KEYWARD_LOG_LEVEL=warn
 *   BENCH_PROFILE_POOL=1 through a pooled token (a round-robin pool of three healthy keys) instead of a plain one
 *   BENCH_PROFILE_SCOPES a plain token's scopes as JSON, e.g. '{"tokens_per_minute":1000000000}' (gpt-4o-mini must
 *                        be priced for budget_usd: BENCH_KEYWARD_ENV=KEYWARD_PROVIDERS_DIR=… as bench/budget.ts makes)
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { render } from './lib/cpuprofile.js';
import type { SatResult } from './lib/load.js';
import { BENCH, provision, provisionPool, runLoad, startFake, startKeyward } from './lib/servers.js';

const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });

async function main(): Promise<void> {
  const seconds = Number(process.env.BENCH_PROFILE_S ?? 10);
  const sse = process.env.BENCH_PROFILE_SSE;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-prof-'));
  const profDir = path.join(tmp, 'prof');
  const fake = await startFake();
  const keyward = await startKeyward(path.join(tmp, 'data'), fake.port, path.join(tmp, 'keyward.log'), {
    nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${profDir}`],
    ...(process.env.BENCH_MAIN ? { main: path.resolve(process.env.BENCH_MAIN) } : {}),
    env: Object.fromEntries((process.env.BENCH_KEYWARD_ENV ?? '').split(',').filter(Boolean).map((p) => p.split('=') as [string, string])),
  });
  try {
    const ptok = process.env.BENCH_PROFILE_POOL === '1' ? await provisionPool(`http://127.0.0.1:${keyward.port}`, KEY) : await provision(`http://127.0.0.1:${keyward.port}`, KEY, JSON.parse(process.env.BENCH_PROFILE_SCOPES ?? '{}'));
    const headers: Record<string, string> = { 'x-proxy-token': ptok };
    if (sse) headers['x-bench-sse'] = `${sse}:0`;
    const target = { url: `http://127.0.0.1:${keyward.port}/v1/proxy/v1/chat/completions`, headers, body: BODY };
    const r = await runLoad<SatResult>({ mode: 'sat', target, connections: 64, durationS: seconds, warmupS: 2 });
    process.stdout.write(`load: ${r.rps.toFixed(0)} req/s over ${seconds} s, p99 ${r.latencyP99} ms, ${r.errors + r.non2xx} bad\n\n`);
  } finally {
    await keyward.stop();
    await fake.stop();
  }
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  const outDir = path.join(BENCH, 'results', 'profiles');
  mkdirSync(outDir, { recursive: true });
  const dest = path.join(outDir, `keyward-${sse ? 'sse' : 'json'}${process.env.BENCH_PROFILE_POOL === '1' ? '-pool' : ''}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
  copyFileSync(path.join(profDir, file), dest);
  rmSync(tmp, { recursive: true, force: true });
  process.stdout.write(render(dest, 30) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`profile failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
