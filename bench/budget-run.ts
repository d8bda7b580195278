/**
 * `npm run bench:budget [dist…]`: the bench's spend-budget row (bench/budget.ts) alone, for one build or
 * several (each its own Keyward, one after the other): an unbudgeted token's req/s against a models-scoped, a
 * budgeted and a tokens_per_minute token's on the same process, 3 interleaved rounds. Ratios within one build
 * are what to compare; absolute req/s move with the machine between builds. Default: dist.
 *   e.g. cp -r dist bench/.ab/base/dist, change, npm run build, npm run bench:budget -- bench/.ab/base/dist dist
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { budgetProvidersDir, budgetRow } from './budget.js';
import { LoadWorker, startFake, startKeyward } from './lib/servers.js';
const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });
const tmp = mkdtempSync(path.join(os.tmpdir(), 'zb-'));
const fake = await startFake();
const dists = process.argv.slice(2).length ? process.argv.slice(2) : ['dist'];
const worker = new LoadWorker('w');
// A build may be named more than once (A B A B): each run gets folders of its own.
for (const [i, d] of dists.entries()) {
  const dir = path.join(tmp, `${i}-${d.replace(/\W/g, '_')}`);
  const k = await startKeyward(dir, fake.port, path.join(tmp, 'k.log'), { main: path.resolve(d, 'src/main.js'), env: { KEYWARD_PROVIDERS_DIR: budgetProvidersDir(`${dir}p`) } });
  const r = await budgetRow(worker, `http://127.0.0.1:${k.port}`, KEY, BODY, { rounds: 3, c1Ms: 500, satS: 3, connections: 64 }, () => {});
  console.log(d, 'plain', r.plain.rps.toFixed(0), 'scoped', r.scoped.rps.toFixed(0), 'budgeted', r.budgeted.rps.toFixed(0), `(${r.rpsRatio.toFixed(2)}x)`, 'tpm', r.tpm.rps.toFixed(0), `(${r.tpmRpsRatio.toFixed(2)}x)`);
  await k.stop();
}
worker.close();
await fake.stop();
