/**
 * The profile row: where the CPU goes, from V8's CPU profiles (`node --cpu-prof`).
 *
 *   npm run bench -- profile            Keyward (`node --cpu-prof dist/src/main.js`) under saturation load
 *                                       through the fast fake provider, then a summary of the profile's self
 *                                       time. The .cpuprofile is kept under bench/results/profiles/ (open it in
 *                                       Chrome DevTools → Performance, or speedscope).
 *     BENCH_PROFILE_S   seconds of load (default 10)
 *     BENCH_PROFILE_SSE events per request for an SSE profile instead of JSON (e.g. 20)
 *     BENCH_MAIN        another build's main.js (default dist/src/main.js)
 *     BENCH_KEYWARD_ENV extra environment for Keyward, e.g. KEYWARD_LOG_LEVEL=warn
 *     BENCH_PROFILE_POOL=1 through a pooled token (a round-robin pool of three healthy keys) instead of a plain one
 *     BENCH_PROFILE_SCOPES a plain token's scopes as JSON, e.g. '{"tokens_per_minute":1000000000}' (gpt-4o-mini must
 *                          be priced for budget_usd: BENCH_KEYWARD_ENV=KEYWARD_PROVIDERS_DIR=… as pricedProvidersDir makes)
 *   npm run bench -- profile diff       µs of self time per request by function, Keyward's minus the bare proxy's
 *                                       (or the floor's, or a plain token's): ./diff.ts
 *   npm run bench -- profile summary <json before> <json after> <sse before> <sse after> [<json ref> <sse ref>]
 *                                       the Markdown before/after summary of bench/results/profile-<date>.md: ./summary.ts
 *   npm run bench -- profile show <file.cpuprofile> [top]    self time by area and the top functions of any profile
 *   npm run bench -- profile show --compare <before> <after> two profiles' areas side by side
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { compare, render } from '../../lib/cpuprofile.js';
import type { SatResult } from '../../lib/load.js';
import { BENCH, provision, provisionPool, runLoad, startFake, startKeyward } from '../../lib/servers.js';

import { BODY, KEY } from '../../lib/settings.js';
import { diff } from './diff.js';
import { summary } from './summary.js';

/** Keyward alone under --cpu-prof at saturation; its self time summarised. */
async function profileKeyward(): Promise<void> {
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

/** `npm run bench -- profile [diff | summary <files…> | show <file> [top] | show --compare <before> <after>]`. */
export async function run(args: string[]): Promise<void> {
  const [what, ...rest] = args;
  if (what === undefined || what === 'keyward') return profileKeyward();
  if (what === 'diff') return diff();
  if (what === 'summary') return summary(rest);
  if (what === 'show' && rest[0] === '--compare' && rest[1] && rest[2]) {
    process.stdout.write(compare(rest[1], rest[2]) + '\n');
    return;
  }
  if (what === 'show' && rest[0]) {
    process.stdout.write(render(rest[0], Number(rest[1] ?? 30)) + '\n');
    return;
  }
  throw new Error('usage: npm run bench -- profile [diff | summary <json before> <json after> <sse before> <sse after> [<json ref> <sse ref>] | show <file.cpuprofile> [top] | show --compare <before> <after>]');
}
