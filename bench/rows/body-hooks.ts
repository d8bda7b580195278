/**
 * The body-hooks row: what a plugin's streaming body hook costs. Three Keyward processes of the same build, each
 * with the logging plugin, one organisation and a plain token, measured alike in interleaved rounds
 * (bench/lib/compare.ts, each process charged its own CPU):
 *   plain     no other plugin: no hook, the relay's usual path
 *   hook      a no-op `responseBody` plugin (answers undefined: every piece passes), loaded from a folder
 *   boundary  a no-op `access` plugin declared through an identity `defineMiddleware`, as an SDK author writes
 *             one: the cost of the plugin boundary alone
 * each on the JSON answer and on an SSE stream of 20 events (the hook is called per piece).
 * Targets: a request through the no-op hook costs CPU within 10% of one without (JSON and SSE); the boundary
 * within the noise of the plain token (reported, its ratio shown).
 *
 * Alone: `npm run bench -- body-hooks` (BENCH_SIDE_ROUNDS for more rounds).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compareTargets } from '../lib/compare.js';
import type { Target } from '../lib/load.js';
import { startSideKeyward } from '../lib/paths.js';
import { fmt, type Goal } from '../lib/report.js';
import { LoadWorker, provision } from '../lib/servers.js';
import { BODY, D, KEY, log, sideOptions } from '../lib/settings.js';
import { standaloneSide } from '../lib/standalone.js';

const PLUGINS: Record<string, string> = {
  'noop-body': 'export default { apiVersion: 1, name: "noop-body", priority: 400, maxBuffer: 0, create() { return { responseBody() { return undefined; } }; } };\n',
  'noop-access': 'const defineMiddleware = (m) => m;\nexport default defineMiddleware({ apiVersion: 1, name: "noop-access", priority: 400, create() { return { access() {} }; } });\n',
};

const SSE_BODY = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });

export async function run(): Promise<void> {
  await standaloneSide('body-hooks', async (s, up) => {
    const dir = path.join(s.tmp, 'plugins');
    mkdirSync(dir, { recursive: true });
    for (const [name, source] of Object.entries(PLUGINS)) writeFileSync(path.join(dir, `${name}.js`), source);
    const start = (name: string, plugins: string) => startSideKeyward(s, up, { name, env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: plugins } });
    const plain = await start('plain', 'logging');
    const hook = await start('hook', 'noop-body,logging');
    const boundary = await start('boundary', 'noop-access,logging');
    const worker = new LoadWorker('keyward');
    s.closers.push(() => worker.close());
    const target = async (port: number, body: string, sse: boolean): Promise<Target> => ({
      url: `http://127.0.0.1:${port}/v1/proxy/v1/chat/completions`,
      headers: { 'x-proxy-token': await provision(`http://127.0.0.1:${port}`, KEY), ...(sse ? { 'x-bench-sse': '20:0' } : {}) },
      body,
    });
    const m = await compareTargets(worker, plain, {
      plain: await target(plain.port, BODY, false),
      hook: await target(hook.port, BODY, false),
      boundary: await target(boundary.port, BODY, false),
      plainSse: await target(plain.port, SSE_BODY, true),
      hookSse: await target(hook.port, SSE_BODY, true),
    }, sideOptions(), 'body-hooks', log, { hook, boundary, hookSse: hook });
    const json = m.hook.cpuUsPerRequest / m.plain.cpuUsPerRequest;
    const sse = m.hookSse.cpuUsPerRequest / m.plainSse.cpuUsPerRequest;
    const sdk = m.boundary.cpuUsPerRequest / m.plain.cpuUsPerRequest;
    const line = (name: string, x: { p50: number; rps: number; cpuUsPerRequest: number }) => `${name} ${fmt(x.p50, 3)} ms c=1 p50, ${fmt(x.rps, 0)} req/s, ${fmt(x.cpuUsPerRequest, 0)} µs CPU/request`;
    const targets: Goal[] = [
      { target: 'a JSON request through a no-op responseBody hook: CPU within 10% of none', value: `${json.toFixed(2)}×`, met: json <= 1.1 },
      { target: 'an SSE stream (20 events) through a no-op responseBody hook: CPU within 10% of none', value: `${sse.toFixed(2)}×`, met: sse <= 1.1 },
      { target: 'the plugin boundary alone (a no-op access plugin through defineMiddleware): within 5% of none', value: `${sdk.toFixed(2)}×`, met: sdk <= 1.05 },
    ];
    return {
      fields: { bodyHooks: { ...m, ratios: { json, sse, boundary: sdk } } },
      lines: [`Body hooks (three Keywards of one build, median of ${D.sideRounds} interleaved rounds): JSON ${line('plain', m.plain)}; ${line('no-op responseBody', m.hook)} (${json.toFixed(2)}× CPU); ${line('no-op access plugin', m.boundary)} (${sdk.toFixed(2)}×). SSE of 20 events: ${line('plain', m.plainSse)}; ${line('no-op responseBody', m.hookSse)} (${sse.toFixed(2)}×).`],
      targets,
    };
  });
}
