/**
 * `npm run bench:pool`: the pool row of `npm run bench` alone (bench/pool.ts), with more rounds, for working
 * on a pooled request's cost: a plain token against a pooled one on one Keyward (embedded default), CPU per
 * request and c=1 p50, the median of BENCH_POOL_ROUNDS rounds (default 7). Prints the ratio; writes nothing.
 * BENCH_POOL_AFTER=budget,federation first runs those rows of `npm run bench` on the same process, with its
 * settings, as the whole bench does before its pool row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LoadWorker, startFake, startKeyward, type Proc } from './lib/servers.js';
import { budgetProvidersDir, budgetRow } from './budget.js';
import { federationEnv, federationRow, startEntraStub } from './federation.js';
import { poolRow } from './pool.js';

const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });
const rounds = Number(process.env.BENCH_POOL_ROUNDS ?? 7);
const log = (m: string) => process.stderr.write(`${m}\n`);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-pool-'));
const procs: Proc[] = [];
const worker = new LoadWorker('keyward');
try {
  const fake = await startFake();
  procs.push(fake);
  const after = (process.env.BENCH_POOL_AFTER ?? '').split(',').filter(Boolean);
  const entra = await startEntraStub();
  const keyward = await startKeyward(path.join(tmp, 'data'), fake.port, path.join(tmp, 'keyward.log'), { env: { KEYWARD_PROVIDERS_DIR: budgetProvidersDir(tmp), ...federationEnv(entra.url, fake.port) } });
  procs.push(keyward);
  const rows = { rounds: 3, c1Ms: 1500, satS: 3, connections: 64 };
  if (after.includes('budget')) await budgetRow(worker, `http://127.0.0.1:${keyward.port}`, KEY, BODY, rows, log);
  if (after.includes('federation')) await federationRow(worker, keyward, entra, KEY, BODY, rows, log);
  entra.close();
  if (os.loadavg()[0]! > os.availableParallelism()) log(`warning: load average ${os.loadavg()[0]!.toFixed(1)}: other work is running`);
  const row = await poolRow(worker, keyward, KEY, BODY, { rounds, c1Ms: 1500, satS: 3, connections: 64 }, log);
  console.log(JSON.stringify(row, null, 1));
  console.log(`pooled CPU per request ${row.cpuRatio.toFixed(3)}× plain (target ≤ 1.10×)`);
} finally {
  worker.close();
  for (const p of procs) await p.stop();
  rmSync(tmp, { recursive: true, force: true });
}
