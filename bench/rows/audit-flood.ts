/**
 * The audit-flood row, `npm run bench -- audit-flood`: a flood of refused requests against the built gateway
 * (`node dist/src/main.js`, embedded default) while another organisation makes
 * changes. Prints how many audit records the flood left (refusals are
 * aggregated per organisation, action, address and minute), that their counts
 * add up to the refusals seen, and that none of the other organisation's
 * changes was dropped. AUDIT_FLOOD_REQUESTS sets the flood's size (default 100,000).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { ADMIN_TOKEN, memory, sleep, startFake, startKeyward } from '../lib/servers.js';

const TOTAL = Number(process.env.AUDIT_FLOOD_REQUESTS ?? 100_000);
const CONCURRENCY = 64;
const CHANGES = 100; // credential create + delete pairs by the bystander organisation
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });

async function call(url: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
  const r = await fetch(url, init);
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

const post = (base: string, p: string, token: string, body: unknown) =>
  call(`${base}${p}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-audit-flood-'));
  const dataDir = path.join(dir, 'data');
  const fake = await startFake();
  const keyward = await startKeyward(dataDir, fake.port, path.join(dir, 'keyward.log'), {
    // One proxied request a month, so every later one is a quota refusal; failed authentications never cool down here
    // (a cool-down answers 429 before authenticating, which is not audited), so every bad token is audited.
    env: { KEYWARD_FREE_PROXY_REQUESTS: '1', KEYWARD_AUTH_FAILURES: '1000000', KEYWARD_ADMIN_RATE: '600' },
  });
  const base = `http://127.0.0.1:${keyward.port}`;
  try {
    const a = (await post(base, '/v1/orgs', ADMIN_TOKEN, { name: 'flooded' })).body;
    const cred = (await post(base, '/v1/credentials', a.token, { provider: 'openai', api_key: `sk-flood-${'k'.repeat(40)}` })).body;
    const tok = (await post(base, '/v1/tokens', a.token, { credential_id: cred.id, ttl: '1d' })).body;
    const b = (await post(base, '/v1/orgs', ADMIN_TOKEN, { name: 'bystander' })).body;
    const proxied = (token: string) => call(`${base}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json' }, body: BODY });
    if ((await proxied(tok.token)).status !== 200) throw new Error('the one allowed proxied request failed');

    // The flood: 40 % unknown proxy tokens (auth.failed), 40 % quota refusals, 20 % org A's admin GETs past its rate (admin.rate_limited).
    const kinds = ['auth', 'auth', 'quota', 'quota', 'admin'] as const;
    const statuses = new Map<string, number>();
    let next = 0;
    const started = performance.now();
    let floodSeconds = 0;
    let changesSeconds = 0;
    const flood = Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < TOTAL) {
        const i = next++;
        const kind = kinds[i % kinds.length]!;
        const r = kind === 'auth' ? await proxied(`ptok_flood_${i}`)
          : kind === 'quota' ? await proxied(tok.token)
          : await call(`${base}/v1/credentials`, { headers: { authorization: `Bearer ${a.token}` } });
        const key = `${kind}:${r.status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }
    })).then(() => {
      floodSeconds = (performance.now() - started) / 1000;
    });
    // Meanwhile the bystander makes changes; each one's id is remembered.
    const changes = (async () => {
      const made: string[] = [];
      for (let i = 0; i < CHANGES; i++) {
        const c = await post(base, '/v1/credentials', b.token, { provider: 'openai', api_key: `sk-bystander-${i}-${'x'.repeat(20)}` });
        if (c.status !== 201) throw new Error(`bystander create: ${c.status}`);
        made.push(`credential.create:${c.body.id}`);
        const d = await call(`${base}/v1/credentials/${c.body.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${b.token}` } });
        if (d.status !== 200) throw new Error(`bystander delete: ${d.status}`);
        made.push(`credential.delete:${c.body.id}`);
      }
      changesSeconds = (performance.now() - started) / 1000;
      return made;
    })();
    const [, made] = await Promise.all([flood, changes]);
    const rss = memory(keyward.pids());
    await sleep(2500); // two flush intervals

    const db = new DatabaseSync(path.join(dataDir, 'keyward.db'), { readOnly: true });
    const total = (db.prepare('SELECT COUNT(*) AS n FROM audit').get() as { n: number }).n;
    const perAction = db.prepare(`SELECT CASE org WHEN ? THEN 'A' WHEN ? THEN 'B' ELSE '(none)' END AS org, action, outcome,
      COUNT(*) AS records, SUM(count) AS events FROM audit GROUP BY 1, action, outcome ORDER BY 1, action`).all(a.id, b.id) as Array<Record<string, string | number>>;
    const theirs = new Set((db.prepare('SELECT action, target FROM audit WHERE org = ?').all(b.id) as Array<{ action: string; target: string }>).map((r) => `${r.action}:${r.target}`));
    db.close();
    const missing = made.filter((m) => !theirs.has(m));
    const refused = (statuses.get('auth:401') ?? 0) + (statuses.get('quota:429') ?? 0) + (statuses.get('admin:429') ?? 0);
    const events = (action: string) => perAction.filter((r) => r.action === action).reduce((n, r) => n + Number(r.events), 0);

    console.log(`\n${TOTAL.toLocaleString('en')} requests in ${floodSeconds.toFixed(1)} s (${Math.round(TOTAL / floodSeconds)} req/s, ${CONCURRENCY} connections); gateway RSS ${rss.rssMb.toFixed(0)} MB (peak ${rss.hwmMb.toFixed(0)} MB)`);
    console.log(`meanwhile the bystander's ${made.length} changes took ${changesSeconds.toFixed(1)} s (${(changesSeconds * 1000 / made.length).toFixed(1)} ms each, audit record written before each answer)`);
    console.log(`answers: ${[...statuses].map(([k, v]) => `${k} ×${v}`).join(', ')}`);
    console.log(`refused: ${refused.toLocaleString('en')}\n`);
    console.log('| org | action | outcome | records | events (sum of count) |\n|---|---|---|---|---|');
    for (const r of perAction) console.log(`| ${r.org} | ${r.action} | ${r.outcome} | ${r.records} | ${r.events} |`);
    console.log(`\naudit records in the store after the flood: ${total}`);
    const countsAddUp = events('auth.failed') === (statuses.get('auth:401') ?? 0) && events('quota.refused') === (statuses.get('quota:429') ?? 0)
      && events('admin.rate_limited') === (statuses.get('admin:429') ?? 0);
    console.log(`refusal counts add up to the refusals answered: ${countsAddUp ? 'yes' : 'NO'}`);
    console.log(`bystander changes: ${made.length} made, ${made.length - missing.length} audited, ${missing.length} dropped`);
    if (!countsAddUp || missing.length > 0) process.exitCode = 1;
  } finally {
    await keyward.stop();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `npm run bench -- audit-flood`. */
export const run = (): Promise<void> => main();
