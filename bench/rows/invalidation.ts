/**
 * The invalidation row, `npm run bench -- invalidation [--main <file>]`: what deleting a credential with many cached
 * tokens costs everyone else. One built gateway (`node dist/src/main.js`,
 * SQLite, local key) in front of the fake provider; 50,000 proxy tokens
 * (10,000 of them on one credential of org A) written straight into its
 * database and warmed into its token cache with cheap refused requests
 * (403 path_not_allowed: resolved, never forwarded). Then, while org B's token
 * is proxied at a steady concurrency, org A's credential is deleted through
 * the admin API. Prints org B's latency before and during the invalidation
 * window (the delete's start until 1 s after its answer, which covers the
 * change feed bringing the event back) and how long the delete took.
 *
 *   --main <file>   another build's main.js (to compare with older code)
 *   BENCH_TOKENS / BENCH_DOOMED / BENCH_CONCURRENCY override the sizes.
 */
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { performance } from 'node:perf_hooks';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { stats, type Stats } from '../lib/load.js';
import { ADMIN_TOKEN, sleep, startFake, startKeyward } from '../lib/servers.js';

const TOTAL = Number(process.env.BENCH_TOKENS ?? 50_000);
const DOOMED = Number(process.env.BENCH_DOOMED ?? 10_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const WARM_CONCURRENCY = 64;
const BASELINE_MS = 3000;
const AFTER_MS = 1000;

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One request on the keep-alive agent; resolves with the status once the body is read. */
function request(port: number, method: string, p: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: p, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function admin(port: number, method: string, p: string, token: string, body?: unknown): Promise<any> {
  const r = await request(port, method, p, { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body));
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
  return JSON.parse(r.text);
}

/** Runs `count` tasks, `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await task(next++);
  }));
}

/** `keyward_cache_requests_total` for the token cache. */
async function tokenCacheCounts(port: number): Promise<{ hit: number; miss: number }> {
  const text = (await request(port, 'GET', '/metrics', {})).text;
  const read = (result: string) => Number(new RegExp(`keyward_cache_requests_total\\{cache="token",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? NaN);
  return { hit: read('hit'), miss: read('miss') };
}

/** Writes proxy tokens straight into the gateway's database, in one transaction (the admin API would take minutes). */
function insertTokens(dbFile: string, batches: Array<{ orgId: string; credentialId: string; count: number }>): Map<string, string[]> {
  const db = new DatabaseSync(dbFile);
  db.exec('PRAGMA busy_timeout = 5000');
  const insert = db.prepare('INSERT INTO tokens (id, org_id, credential_id, token_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  // Scoped to one route, so a GET of v1/models is resolved (and cached) then refused with 403: never forwarded.
  const scopes = JSON.stringify({ paths: ['v1/chat/completions'] });
  const now = Date.now();
  const out = new Map<string, string[]>();
  db.exec('BEGIN IMMEDIATE');
  for (const b of batches) {
    const list: string[] = [];
    for (let i = 0; i < b.count; i++) {
      const token = newToken('ptok');
      insert.run(newId('tok'), b.orgId, b.credentialId, sha256Hex(token), scopes, now, now + 86_400_000);
      list.push(token);
    }
    out.set(b.credentialId, list);
  }
  db.exec('COMMIT');
  db.close();
  return out;
}

const fmt = (s: Stats) => `n=${s.n} p50=${s.p50.toFixed(2)} ms p99=${s.p99.toFixed(2)} ms max=${s.max.toFixed(2)} ms`;

async function main(MAIN: string | undefined): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-inval-'));
  const fake = await startFake();
  const dataDir = path.join(dir, 'data');
  // The sampled tokens of the deleted credential must meet 401, not the failed-auth cool-down.
  const env = { KEYWARD_AUTH_FAILURES: '1000000', KEYWARD_ADMIN_RATE: '1000000' };
  const gw = await startKeyward(dataDir, fake.port, path.join(dir, 'keyward.log'), { env, ...(MAIN ? { main: MAIN } : {}) });
  try {
    const port = gw.port;
    const orgA = await admin(port, 'POST', '/v1/orgs', ADMIN_TOKEN, { name: 'bench-a' });
    const orgB = await admin(port, 'POST', '/v1/orgs', ADMIN_TOKEN, { name: 'bench-b' });
    const cred = async (org: any, n: number) => (await admin(port, 'POST', '/v1/credentials', org.token, { provider: 'openai', api_key: `sk-bench-inval-${n}-${'k'.repeat(32)}` })).id as string;
    const doomed = await cred(orgA, 1);
    const aOther = await cred(orgA, 2);
    const bCred = await cred(orgB, 3);
    const bToken = (await admin(port, 'POST', '/v1/tokens', orgB.token, { credential_id: bCred, ttl: '1d' })).token as string;

    let t0 = performance.now();
    const rest = TOTAL - DOOMED;
    const minted = insertTokens(path.join(dataDir, 'keyward.db'), [
      { orgId: orgA.id, credentialId: doomed, count: DOOMED },
      { orgId: orgA.id, credentialId: aOther, count: Math.floor(rest / 2) },
      { orgId: orgB.id, credentialId: bCred, count: rest - Math.floor(rest / 2) },
    ]);
    const all = [...minted.values()].flat();
    console.log(`inserted ${all.length} tokens (${DOOMED} on org A's credential) in ${(performance.now() - t0).toFixed(0)} ms`);

    t0 = performance.now();
    const before = await tokenCacheCounts(port);
    let refused = 0;
    await pool(all.length, WARM_CONCURRENCY, async (i) => {
      const r = await request(port, 'GET', '/v1/proxy/v1/models', { 'x-proxy-token': all[i]! });
      if (r.status === 403) refused++;
    });
    const warmed = await tokenCacheCounts(port);
    console.log(`warmed ${all.length} tokens in ${(performance.now() - t0).toFixed(0)} ms: ${refused} refused with 403, token cache misses +${warmed.miss - before.miss}`);
    // A second pass proves they are cached: all hits.
    await pool(2000, WARM_CONCURRENCY, async (i) => { await request(port, 'GET', '/v1/proxy/v1/models', { 'x-proxy-token': all[(i * 25) % all.length]! }); });
    const again = await tokenCacheCounts(port);
    console.log(`re-check of 2000 spread tokens: hits +${again.hit - warmed.hit}, misses +${again.miss - warmed.miss}`);

    // Org B's steady load; every request's start and latency is kept.
    const samples: Array<{ at: number; ms: number; status: number }> = [];
    let running = true;
    const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const load = Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (running) {
        const at = performance.now();
        const r = await request(port, 'POST', '/v1/proxy/v1/chat/completions', { 'x-proxy-token': bToken, 'content-type': 'application/json' }, body);
        samples.push({ at, ms: performance.now() - at, status: r.status });
      }
    }));
    await sleep(BASELINE_MS);
    const delStart = performance.now();
    await admin(port, 'DELETE', `/v1/credentials/${doomed}`, orgA.token);
    const delEnd = performance.now();
    await sleep(AFTER_MS);
    running = false;
    await load;

    const baseline = samples.filter((s) => s.at + s.ms < delStart && s.at >= delStart - BASELINE_MS + 500);
    const window = samples.filter((s) => s.at + s.ms >= delStart && s.at <= delEnd + AFTER_MS);
    const bad = samples.filter((s) => s.status !== 200).length;
    const doomedTokens = minted.get(doomed)!;
    let stillServed = 0;
    await pool(500, 32, async (i) => {
      const r = await request(port, 'GET', '/v1/proxy/v1/models', { 'x-proxy-token': doomedTokens[i * Math.floor(DOOMED / 500)]! });
      if (r.status !== 401) stillServed++;
    });

    console.log(`\ngateway: ${MAIN ?? 'dist/src/main.js'}; org B load at concurrency ${CONCURRENCY}; ${bad} non-200 answers`);
    console.log(`delete of org A's credential (${DOOMED} cached tokens): ${(delEnd - delStart).toFixed(1)} ms`);
    console.log(`org B before the delete:        ${fmt(stats(baseline.map((s) => s.ms)))}`);
    console.log(`org B in the invalidation window: ${fmt(stats(window.map((s) => s.ms)))}`);
    console.log(`deleted credential's tokens still served afterwards (of 500 sampled): ${stillServed}`);
  } finally {
    await gw.stop();
    await fake.stop();
    agent.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `npm run bench -- invalidation [--main <file>]`. */
export async function run(args: string[]): Promise<void> {
  const mainArg = args.indexOf('--main');
  await main(mainArg >= 0 ? path.resolve(args[mainArg + 1]!) : undefined);
}
