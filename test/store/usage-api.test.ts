/**
 * The usage API over sharded counters, on both adapters: two gateways on one store each write only their
 * own shard of every counter (absolute totals), and every answer (GET /v1/usage, /v1/usage/daily, a
 * token's and a credential's usage) is the sum over instances: the same from either gateway, what the
 * provider received, and the same before a flush (what this instance has not written yet added) as after
 * it (never twice). One shard per instance is in the store.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, type TestApp } from '../support/app.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { BACKENDS, sharedStore } from '../support/shared-store.js';
import { formatUsd } from '../../src/pricing/money.js';
import { UsageRecorder } from '../../src/accounting/usage-recorder.js';
import { Instance } from '../../src/accounting/instance.js';
import { Symbols } from '../../src/symbols.js';
import type { UsageStore } from '../../src/store/ports.js';

const flush = (app: TestApp) => app.server.container.resolve(UsageRecorder).flush();

for (const name of BACKENDS) {
  test(`${name}: usage answers are the sum of every instance's shard, the same from each instance, before and after a flush`, async (t) => {
    t.timeout(120_000);
    const shared = await sharedStore(t, name);
    const { up } = shared;
    const [a, b] = [await shared.start(), await shared.start()];
    const org = await createOrg(a);
    const cred = await createCredential(a, org, 'priced', 'sk-priced-0123456789');
    const tok = await mintToken(a, org, cred, '1h');
    const w = worstCase(chatBody(0));
    const [viaA, viaB] = [7, 5];
    for (let i = 0; i < viaA + viaB; i++) {
      const r = await chat((i < viaA ? a : b).url, tok.token, chatBody(i));
      t.is(r.status, 200, JSON.stringify(r.body));
    }
    t.is(up.received.length, viaA + viaB);
    const n = viaA + viaB;
    const today = new Date().toISOString().slice(0, 10);
    const views = async (app: TestApp) => ({
      usage: (await api(app, 'GET', '/v1/usage', { token: org.token })).body,
      daily: (await api(app, 'GET', `/v1/usage/daily?from=${today}&to=${today}`, { token: org.token })).body.data,
      token: (await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).body.usage,
    });

    // Before any flush, each instance adds only what it has not written itself: the other's counts are not in yet.
    const ownA = await views(a);
    t.is(ownA.usage.proxy_requests.used, viaA);
    t.deepEqual(ownA.token, { requests: viaA, input_tokens: ownA.token.input_tokens, output_tokens: viaA * 100, spend_usd: formatUsd(viaA * w) });

    // Both flushed: every answer is the whole, from either instance.
    await Promise.all([flush(a), flush(b)]);
    const [fromA, fromB] = [await views(a), await views(b)];
    t.deepEqual(fromA, fromB);
    t.is(fromA.usage.proxy_requests.used, n);
    t.is(fromA.usage.spend_usd.used, formatUsd(n * w));
    t.deepEqual(fromA.daily, [{ date: today, requests: n, input_tokens: fromA.token.input_tokens, output_tokens: n * 100, spend_usd: formatUsd(n * w) }]);
    t.deepEqual({ ...fromA.token, input_tokens: 0 }, { requests: n, input_tokens: 0, output_tokens: n * 100, spend_usd: formatUsd(n * w) });

    // More through a, unflushed: a answers with it at once, and after its flush both answer the same again (never twice).
    for (let i = 0; i < 3; i++) {
      const r = await chat(a.url, tok.token, chatBody(i));
      t.is(r.status, 200, JSON.stringify(r.body));
    }
    t.is((await views(a)).usage.proxy_requests.used, n + 3);
    await flush(a);
    const [again, againB] = [await views(a), await views(b)];
    t.deepEqual(again, againB);
    t.is(again.token.requests, n + 3);
    t.is(again.usage.spend_usd.used, formatUsd((n + 3) * w));

    // One shard per instance: the store's sum equals each instance's totals added up.
    const store = a.server.container.resolve<UsageStore>(Symbols.UsageStore);
    const month = today.slice(0, 7);
    t.is((await store.getUsage('tok', tok.id, month)).requests, n + 3);
    const [shardA, shardB] = await Promise.all([a, b].map(async (app) => (await store.getUsageShards(app.server.container.resolve(Instance).id, [{ scope: 'tok', id: tok.id, period: month }]))[0]!));
    t.is(shardA!.requests, viaA + 3, 'a\'s shard holds a\'s totals only');
    t.is(shardB!.requests, viaB, 'b\'s shard holds b\'s');
  });
}
