/**
 * The pool row: on the same Keyward process and body, a plain token (one OpenAI credential)
 * against a pooled one (a round-robin pool of three OpenAI credentials, every member healthy), measured
 * alike (bench/lib/compare.ts). With no member failing, a pooled request costs a member pick and the body read
 * whole for a possible replay: the target is CPU per request within 10% of the plain token's.
 * BENCH_POOL_MEMBERS (3) sets the pool's size, to tell the router's own cost from spreading over more keys;
 * BENCH_POOL_STRATEGY (round_robin) its strategy.
 *
 * Alone: `npm run bench -- pool`, on one fresh Keyward set up as the whole run's (BENCH_SIDE_ROUNDS for more
 * rounds when working on a pooled request's cost). BENCH_POOL_AFTER=budget,federation first runs those rows on
 * the same process, as the whole run does before its pool row.
 */
import { compareTargets, type CompareOptions, type Measured } from '../lib/compare.js';
import type { Target } from '../lib/load.js';
import { startSideKeyward } from '../lib/paths.js';
import { fmt, type Goal } from '../lib/report.js';
import { ADMIN_TOKEN, LoadWorker, postJson as post, type Proc } from '../lib/servers.js';
import { BODY, D, KEY, log, sideOptions } from '../lib/settings.js';
import { standaloneSide } from '../lib/standalone.js';
import { budgetRow } from './budget.js';
import { federationRow } from './federation.js';

export interface PoolRow {
  plain: Measured;
  pooled: Measured;
  /** Pooled CPU µs/request ÷ plain. */
  cpuRatio: number;
}

export async function poolRow(worker: LoadWorker, keyward: Proc, key: string, body: string, o: CompareOptions, log: (m: string) => void): Promise<PoolRow> {
  const base = `http://127.0.0.1:${keyward.port}`;
  const org = await post(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench-pool' });
  const creds: string[] = [];
  const members = Number(process.env.BENCH_POOL_MEMBERS ?? 3);
  for (let i = 0; i < members; i++) creds.push((await post(`${base}/v1/credentials`, org.token, { provider: 'openai', api_key: key })).id as string);
  const pool = await post(`${base}/v1/pools`, org.token, { strategy: process.env.BENCH_POOL_STRATEGY ?? 'round_robin', members: creds.map((credential_id) => ({ credential_id })) });
  const tokens = {
    plain: (await post(`${base}/v1/tokens`, org.token, { credential_id: creds[0], ttl: '1d' })).token as string,
    pooled: (await post(`${base}/v1/tokens`, org.token, { pool_id: pool.id, ttl: '1d' })).token as string,
  };
  const target = (token: string): Target => ({ url: `${base}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': token }, body });
  const { plain, pooled } = await compareTargets(worker, keyward, { plain: target(tokens.plain), pooled: target(tokens.pooled) }, o, 'pool', log);
  return { plain, pooled, cpuRatio: pooled.cpuUsPerRequest / plain.cpuUsPerRequest };
}

/** The row's line in the bench's tables. */
export const poolSummary = (p: PoolRow, rounds: number): string =>
  `Pooled token (same Keyward, same body, a round-robin pool of three healthy OpenAI keys; median of ${rounds} rounds): plain ${fmt(p.plain.p50, 3)} ms c=1 p50, ${fmt(p.plain.rps, 0)} req/s, ${fmt(p.plain.cpuUsPerRequest, 0)} µs CPU/request; pooled ${fmt(p.pooled.p50, 3)} ms, ${fmt(p.pooled.rps, 0)} req/s, ${fmt(p.pooled.cpuUsPerRequest, 0)} µs CPU/request (${p.cpuRatio.toFixed(2)}× CPU).`;

export const poolTargets = (p: PoolRow): Goal[] => [
  { target: 'pooled token CPU per request within 10% of a plain token (no member failing)', value: `${p.cpuRatio.toFixed(2)}×`, met: p.cpuRatio <= 1.1 },
];

/** `npm run bench -- pool`: the row alone (after the budget and federation rows with BENCH_POOL_AFTER). */
export async function run(): Promise<void> {
  await standaloneSide('pool', async (s, up) => {
    const keyward = await startSideKeyward(s, up);
    const worker = new LoadWorker('keyward');
    s.closers.push(() => worker.close());
    const after = (process.env.BENCH_POOL_AFTER ?? '').split(',').filter(Boolean);
    if (after.includes('budget')) await budgetRow(worker, `http://127.0.0.1:${keyward.port}`, KEY, BODY, sideOptions(), log);
    if (after.includes('federation')) await federationRow(worker, keyward, up.entra, KEY, BODY, sideOptions(), log);
    const pool = await poolRow(worker, keyward, KEY, BODY, sideOptions(), log);
    return { fields: { pool }, lines: [poolSummary(pool, D.sideRounds)], targets: poolTargets(pool) };
  });
}
