/**
 * `npm run bench:pool`: the pool row of `npm run bench` alone (bench/pool.ts), with more rounds, for working
 * on a pooled request's cost: a plain token against a pooled one on one Keyward (embedded default), CPU per
 * request and c=1 p50, the median of BENCH_POOL_ROUNDS rounds (default 7). Prints the ratio; writes nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LoadWorker, startFake, startKeyward, type Proc } from './servers.js';
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
  const keyward = await startKeyward(path.join(tmp, 'data'), fake.port, path.join(tmp, 'keyward.log'));
  procs.push(keyward);
  if (os.loadavg()[0]! > os.availableParallelism()) log(`warning: load average ${os.loadavg()[0]!.toFixed(1)}: other work is running`);
  const row = await poolRow(worker, keyward, KEY, BODY, { rounds, c1Ms: 1500, satS: 3, connections: 64 }, log);
  console.log(JSON.stringify(row, null, 1));
  console.log(`pooled CPU per request ${row.cpuRatio.toFixed(3)}× plain (target ≤ 1.10×)`);
} finally {
  worker.close();
  for (const p of procs) await p.stop();
  rmSync(tmp, { recursive: true, force: true });
}
