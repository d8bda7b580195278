/**
 * The audit trail under a flood of refusals: refusals are aggregated per
 * (org, action, address, minute) with a count, so they cannot crowd out the
 * records of changes, which are stored before their response.
 */
import 'reflect-metadata';
import test from 'ava';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { BAD_CURSOR, type AuditRecord, type AuditStore } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';
import { AuditLog } from '../../src/controls/audit-log.js';
import { ADMIN_TOKEN, api, createOrg, startApp, TEST_ABUSE_LIMITS } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { ManualClock } from '../support/clocks.js';

async function allRecords(store: AuditStore, org: string): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await store.listAudit(org, after === undefined ? { limit: 100 } : { limit: 100, startingAfter: after });
    if (page === BAD_CURSOR) throw new Error('bad cursor');
    out.push(...page.data);
    if (!page.hasMore) return out;
    after = page.data[page.data.length - 1]!.id;
  }
}

/** Runs `jobs` with at most `width` in flight. */
async function pool<T>(jobs: Array<() => Promise<T>>, width: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < jobs.length) {
      const i = next++;
      out[i] = await jobs[i]!();
    }
  }));
  return out;
}

const sum = (records: AuditRecord[], action: string) => records.filter((r) => r.action === action).reduce((n, r) => n + r.count, 0);

test('2,000 refusals for org A leave a few records whose counts add up; org B\'s changes made meanwhile are all there', async (t) => {
  const f = await proxyFixture(t, { env: { ...TEST_ABUSE_LIMITS, KEYWARD_FREE_PROXY_REQUESTS: '1', KEYWARD_ADMIN_RATE: '40' } });
  const proxy = (token: string) => fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': token } }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });
  t.is(await proxy(f.tokens.openai.token), 200, 'the month\'s one proxied request');

  const b = await createOrg(f.app, 'bystander');
  const refusals: Array<() => Promise<string>> = [];
  for (let i = 0; i < 2000; i++) {
    if (i % 5 < 2) refusals.push(async () => `bad:${await proxy(`ptok_not_a_real_token_${i}`)}`);
    else if (i % 5 < 4) refusals.push(async () => `quota:${await proxy(f.tokens.openai.token)}`);
    else refusals.push(async () => `admin:${(await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).status}`);
  }
  const changes = (async () => {
    const made: Array<{ action: string; id: string }> = [];
    for (let i = 0; i < 10; i++) {
      const c = await api(f.app, 'POST', '/v1/credentials', { token: b.token, body: { provider: 'openai', api_key: `sk-bystander-${i}-0123456789` } });
      t.is(c.status, 201);
      made.push({ action: 'credential.create', id: c.body.id });
      const d = await api(f.app, 'DELETE', `/v1/credentials/${c.body.id}`, { token: b.token });
      t.is(d.status, 200);
      made.push({ action: 'credential.delete', id: c.body.id });
    }
    return made;
  })();
  const [outcomes, made] = await Promise.all([pool(refusals, 32), changes]);

  const tally = new Map<string, number>();
  for (const o of outcomes) tally.set(o, (tally.get(o) ?? 0) + 1);
  t.is(tally.get('bad:401'), 800);
  t.is(tally.get('quota:429'), 800);
  const rateLimited = tally.get('admin:429') ?? 0;
  t.true(rateLimited > 300, `admin refusals: ${JSON.stringify([...tally])}`);

  const audit = f.app.server.container.resolve(AuditLog);
  await audit.flush();
  const store = f.app.server.container.resolve<AuditStore>(Symbols.AuditStore);
  const mine = await allRecords(store, f.org.id);
  const anonymous = await allRecords(store, '');
  const refusalsOfA = mine.filter((r) => r.outcome === 'denied');
  // One record per action and minute (two if the run crossed a minute's edge).
  t.true(refusalsOfA.length <= 4, `org A refusal records: ${refusalsOfA.length}`);
  t.true(anonymous.length <= 2, `records with no organisation: ${anonymous.length}`);
  t.is(sum(mine, 'quota.refused'), 800);
  t.is(sum(mine, 'admin.rate_limited'), rateLimited);
  t.is(sum(anonymous, 'auth.failed'), 800);
  for (const r of [...refusalsOfA, ...anonymous]) t.is(r.ip, '127.0.0.1');

  const theirs = await allRecords(store, b.id);
  t.deepEqual(
    theirs.filter((r) => r.action.startsWith('credential.')).map((r) => ({ action: r.action, id: r.target })).reverse(),
    made,
  );
  t.true(theirs.every((r) => r.outcome === 'success' && r.count === 1));
  // The API shows the count, 1 for a change.
  const listed = await api(f.app, 'GET', '/v1/audit?limit=100', { token: b.token });
  t.is(listed.status, 200);
  t.true(listed.body.data.every((e: { count: number }) => e.count === 1));
  void ADMIN_TOKEN;
});

test('an admin change\'s record is in the store when its response arrives, success or failure, with no flush', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  // Another connection to the same file: what another process would read.
  const reader = new SqliteStore(app.dataDir);
  t.teardown(() => reader.close());
  const cred = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-now-0123456789' } });
  t.is(cred.status, 201);
  let records = await allRecords(reader, org.id);
  t.deepEqual(records.map((r) => [r.action, r.target, r.outcome, r.count]).slice(0, 1), [['credential.create', cred.body.id, 'success', 1]]);
  const bad = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'nope', api_key: 'sk-now-0123456789' } });
  t.is(bad.status, 400);
  const del = await api(app, 'DELETE', `/v1/credentials/${cred.body.id}`, { token: org.token });
  t.is(del.status, 200);
  records = await allRecords(reader, org.id);
  t.deepEqual(records.map((r) => `${r.action}:${r.outcome}`), ['credential.delete:success', 'credential.create:failure', 'credential.create:success', 'org.create:success']);
});

test('a change whose audit write fails is still answered, logged in full at ERROR, and stored by the retry', async (t) => {
  const timers = new ManualClock();
  const app = await startApp(t, { timers });
  const org = await createOrg(app);
  const store = app.server.container.resolve<AuditStore>(Symbols.AuditStore);
  const append = store.appendAudit.bind(store);
  let failures = 1;
  store.appendAudit = async (records) => {
    if (failures-- > 0) throw new Error('disk full');
    return append(records);
  };
  t.teardown(() => {
    store.appendAudit = append;
  });
  const cred = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-retry-0123456789' } });
  t.is(cred.status, 201, 'the change was made: the caller is told so');
  const line = app.logs.find((l) => l.message === 'audit record not stored (the change was made); retrying every second');
  t.truthy(line);
  t.is(line!.severity, 'ERROR');
  t.like(line!.audit as object, { action: 'credential.create', target: cred.body.id, org: org.id, outcome: 'success' });
  t.false(app.logText().includes('sk-retry-0123456789'));
  t.deepEqual((await allRecords(store, org.id)).filter((r) => r.action === 'credential.create'), [], 'not stored yet');
  await timers.tick(1000); // the retry, a second later
  const records = await allRecords(store, org.id);
  t.deepEqual(records.filter((r) => r.action === 'credential.create').map((r) => r.target), [cred.body.id]);
});
