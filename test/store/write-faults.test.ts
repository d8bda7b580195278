/**
 * Writes that land and then time out, on both adapters: two gateways on one store (two SQLite
 * connections on one file; two Firestore clients on one emulator) serve budgeted, quota-counted traffic
 * and audited refusals while a third of their counting writes (usage shards, lease holders, idempotency
 * claims, audit counts) land and are reported failed. After the faults stop and both drain, the store's
 * counts equal what the provider received and billed: nothing counted twice, nothing lost; quota and
 * spend pools hold nothing and count exactly what was used; an Idempotency-Key retried through the
 * faults made one token.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, type TestApp } from '../support/app.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { BACKENDS, sharedStore } from '../support/shared-store.js';
import { landThenFail, seeded } from '../support/store-faults.js';
import { pool } from '../support/pool.js';
import { ManualClock } from '../support/clocks.js';
import { formatUsd } from '../../src/pricing/money.js';
import { Symbols } from '../../src/symbols.js';
import { BAD_CURSOR, type Store } from '../../src/store/ports.js';

const storeOf = (app: TestApp) => app.server.container.resolve<Store>(Symbols.Store);

for (const name of BACKENDS) {
  test(`${name}: counting writes that land and time out are counted once: the store equals the provider after drain`, async (t) => {
    t.timeout(180_000);
    const shared = await sharedStore(t, name, { KEYWARD_FREE_PROXY_REQUESTS: '100000' });
    const { up } = shared;
    // Both gateways' flushes run on these timers: the test moves them a flush apart between rounds.
    const timers = new ManualClock();
    const [a, b] = [await shared.start({ timers }), await shared.start({ timers })];
    const org = await createOrg(a);
    const cred = await createCredential(a, org, 'priced', 'sk-priced-0123456789');
    const w = worstCase(chatBody(0));
    t.is((await api(a, 'PATCH', '/v1/orgs/self', { token: org.token, body: { spend_limit_usd: formatUsd(1000 * w) } })).status, 200);
    const tok = await mintToken(a, org, cred, '1h', { budget_usd: formatUsd(1000 * w), max_requests: 100_000 });

    const faults = [landThenFail(storeOf(a), 0.4, seeded(11)), landThenFail(storeOf(b), 0.4, seeded(12))];
    const statuses: number[] = [];
    // Four rounds a flush apart, so usage and audit flushes meet faults too. Refusals (bad tokens) are audited as counts.
    for (let round = 0; round < 4; round++) {
      statuses.push(...await pool(40, 8, async (i) => (await chat((i % 2 === 0 ? a : b).url, tok.token, chatBody(i))).status));
      const bad = await pool(10, 5, async (i) => (await chat((i % 2 === 0 ? a : b).url, 'ptok_not_a_token', chatBody(i))).status);
      t.true(bad.every((s) => s === 401));
      await timers.tick(1000);
    }
    // An Idempotency-Key retried through the faults (a 503 says try again) makes one token.
    let minted = 0;
    faults[0]!.failNext('idempotency');
    for (let attempt = 0; attempt < 20; attempt++) {
      const r = await api(a, 'POST', '/v1/tokens', { token: org.token, headers: { 'idempotency-key': 'faulty-1' }, body: { credential_id: cred, ttl: '2h' } });
      if (r.status === 201) {
        minted++;
        break;
      }
      t.is(r.status, 503, JSON.stringify(r.body));
    }
    t.is(minted, 1);
    for (const f of faults) f.off();
    t.log(`injected: ${JSON.stringify(faults.map((f) => f.injected))}; statuses ${JSON.stringify(statuses.reduce<Record<number, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {}))}`);
    for (const kind of ['usage', 'lease', 'audit', 'idempotency']) {
      t.true(faults.some((f) => (f.injected[kind] ?? 0) > 0), `${kind} writes met faults`);
    }
    const replay = await api(b, 'POST', '/v1/tokens', { token: org.token, headers: { 'idempotency-key': 'faulty-1' }, body: { credential_id: cred, ttl: '2h' } });
    t.is(replay.status, 201);
    t.is(replay.headers.get('idempotent-replayed'), 'true');

    // Drain both: usage flushed, every lease holder retired. Then read what the store counts.
    const forwarded = up.received.length;
    t.is(statuses.filter((s) => s === 200).length, forwarded, 'every 200 was forwarded once');
    await a.stop();
    await b.stop();
    const c = await shared.start();
    const store = storeOf(c);
    const month = new Date().toISOString().slice(0, 7);
    const usage = await store.getUsage('org', org.id, month);
    t.is(usage.requests, forwarded, 'requests: as many as the provider received');
    t.is(usage.spendMicros, forwarded * w, 'spend: what the provider billed');
    t.deepEqual(await store.getUsage('tok', tok.id, month), usage);
    const now = Date.now();
    t.deepEqual(await store.leaseLedger(`quota:${org.id}:${month}`, now), { outstanding: forwarded, used: forwarded, held: 0 });
    t.deepEqual(await store.leaseLedger(`token:${tok.id}`, now), { outstanding: forwarded, used: forwarded, held: 0 });
    t.deepEqual(await store.leaseLedger(`spend:org:${org.id}:${month}`, now), { outstanding: forwarded * w, used: forwarded * w, held: 0 });
    t.deepEqual(await store.leaseLedger(`spend:tok:${tok.id}`, now), { outstanding: forwarded * w, used: forwarded * w, held: 0 });
    const refusals = await store.listAudit('', { limit: 100 }, now);
    if (refusals === BAD_CURSOR) return t.fail();
    t.is(refusals.data.filter((r) => r.action === 'auth.failed').reduce((n, r) => n + r.count, 0), 40, 'each refusal counted once');
    const tokens = await api(c, 'GET', '/v1/tokens?limit=100', { token: org.token });
    t.is(tokens.body.data.length, 2, 'the budgeted token and one token for the key');
  });
}
