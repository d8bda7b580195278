/**
 * The bench's pool row: on the same Keyward process and body, a plain token (one OpenAI credential)
 * against a pooled one (a round-robin pool of three OpenAI credentials, every member healthy), measured
 * alike (compare.ts). With no member failing, a pooled request costs a member pick and the body read
 * whole for a possible replay: the target is CPU per request within 10% of the plain token's.
 * BENCH_POOL_MEMBERS (3) sets the pool's size, to tell the router's own cost from spreading over more keys.
 */
import type { Target } from './lib/load.js';
import { ADMIN_TOKEN, postJson as post, type LoadWorker, type Proc } from './lib/servers.js';
import { compareTargets, type CompareOptions, type Measured } from './lib/compare.js';

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
