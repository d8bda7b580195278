/**
 * Unpriced models seen in traffic: counted in keyward_unpriced_requests_total
 * {provider, model} with bounded labels (a property test throws random names at
 * it), listed per organisation in GET /v1/providers (never another's), and the
 * two rules end to end through the gateway with the `priced` test provider:
 * `refuse` (403 model_unpriced under a budget, nothing forwarded) and
 * `family_max` (forwarded, charged at the family's dearest price).
 */
import test from 'ava';
import { api, createOrg, mintToken, type Org, type TestApp } from '../support/app.js';
import { PriceBook } from '../../src/pricing/prices.js';
import { OTHER, UnpricedModels } from '../../src/pricing/unpriced-models.js';
import { budgetSetup, chat, chatBody, spentOf, worstCase } from '../support/budget.js';

const book = new PriceBook([{ tables: { acme: { 'a-1': { input: 1, output: 1 }, 'b-*': { input: 1, output: 1 } } }, source: () => 'file' }]);

test('observe: a priced name (exact or prefix) is never noted; an unpriced one is, per organisation, with its sightings', (t) => {
  let now = 1_000;
  const seen = new UnpricedModels(book, () => now);
  seen.observe('org_a', 'acme', 'a-1');
  seen.observe('org_a', 'acme', 'b-anything');
  seen.observe('org_a', 'acme', undefined);
  t.deepEqual([...seen.counts()], []);
  seen.observe('org_a', 'acme', 'a-2');
  now = 2_000;
  seen.observe('org_a', 'acme', 'a-2');
  seen.observe('org_b', 'acme', 'a-3');
  t.deepEqual(seen.list('org_a', 'acme'), { models: [{ model: 'a-2', requests: 2, firstSeen: 1_000, lastSeen: 2_000, pricedAs: undefined }], other: 0 });
  t.deepEqual(seen.list('org_b', 'acme').models.map((m) => m.model), ['a-3']);
  t.deepEqual(seen.list('org_a', 'other'), { models: [], other: 0 });
  t.deepEqual([...seen.counts().get('acme')!], [['a-2', 2], ['a-3', 1]]);
});

test('property: whatever names callers send, the metric\'s labels and every list stay bounded and every request is counted', (t) => {
  const seen = new UnpricedModels(book, () => 0);
  let seed = 11;
  const rnd = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const names = ['x'.repeat(201), 'a b', 'a\n1', 'a"1', '*', 'gpt-*', '', 'claude-opus-6'];
  let total = 0;
  for (let i = 0; i < 30_000; i++) {
    const model = rnd(10) === 0 ? names[rnd(names.length)]! : `m-${rnd(1_000_000).toString(36)}`;
    seen.observe(`org_${rnd(3_000)}`, rnd(2) ? 'acme' : 'other', model);
    total++;
  }
  let counted = 0;
  for (const [provider, models] of seen.counts()) {
    t.true(models.size <= 65, `${provider}: at most 64 names and (other)`);
    for (const [label, n] of models) {
      counted += n;
      t.true(label === OTHER || /^[A-Za-z0-9._:/@+-]{1,200}$/.test(label), `a label is a model name or (other): ${JSON.stringify(label)}`);
    }
  }
  t.is(counted, total, 'every request is counted once');
  const lists = (seen as unknown as { orgs: Map<string, { models: Map<string, unknown> }> }).orgs;
  t.true(lists.size <= 2_000, 'at most 2,000 organisation × provider lists');
  for (const l of lists.values()) t.true(l.models.size <= 32);
});

const pricingOf = async (app: TestApp, org: Org, provider = 'priced') =>
  (await api(app, 'GET', '/v1/providers', { token: org.token })).body.data.find((p: { id: string }) => p.id === provider).pricing;

const metricLines = async (app: TestApp): Promise<string[]> =>
  (await (await fetch(`${app.url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('keyward_unpriced_requests_total{'));

test('refuse: under a budget an unpriced model is refused (403 model_unpriced, nothing forwarded); it is listed for its organisation only and counted', async (t) => {
  const s = await budgetSetup(t);
  const budgeted = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: '10' });
  const plain = await mintToken(s.app, s.org, s.credential, '1h');
  const refused = await chat(s.app.url, budgeted.token, chatBody(1, 100, 'pm-2'));
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'model_unpriced');
  t.is(s.up.received.length, 0, 'nothing forwarded');
  // Without a budget the body is not read: the model is the one the provider answered with (this fake always says pm-1).
  t.is((await chat(s.app.url, plain.token, chatBody(2, 100, 'pm-2'))).status, 200, 'without a budget it is forwarded');
  t.is((await chat(s.app.url, plain.token, chatBody(3, 100, 'pm-1'))).status, 200, 'a priced model is not noted');

  const pricing = await pricingOf(s.app, s.org);
  t.is(pricing.as_of, '2026-11-01');
  t.is(pricing.unpriced_rule, 'refuse');
  t.is(pricing.unpriced_other_requests, 0);
  t.is(pricing.unpriced_models.length, 1);
  t.like(pricing.unpriced_models[0], { model: 'pm-2', requests: 1, priced_as: null });
  t.regex(pricing.unpriced_models[0].last_seen, /^20\d\d-\d\d-\d\dT/);
  // Another organisation never sees what this one's requests named.
  const other = await createOrg(s.app, 'globex');
  t.deepEqual((await pricingOf(s.app, other)).unpriced_models, []);
  t.deepEqual(await metricLines(s.app), ['keyward_unpriced_requests_total{provider="priced",model="pm-2",dimension=""} 1']);
});

test('family_max: a budgeted request for an unpriced model of a priced family is forwarded and charged at the family\'s dearest price', async (t) => {
  const s = await budgetSetup(t, { KEYWARD_UNPRICED: 'family_max' });
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: '10' });
  const body = chatBody(1, 100, 'pm-2');
  const r = await chat(s.app.url, tok.token, body);
  t.is(r.status, 200);
  t.is(s.up.received.length, 1);
  // The fake reports the worst case as usage: priced at pm-1's prices (the family `pm` lists only pm-1).
  t.is(await spentOf(s.app, `spend:tok:${tok.id}`), worstCase(body));
  // No family (pm-bare's has no version) or no listed member: still refused.
  t.is((await chat(s.app.url, tok.token, chatBody(2, 100, 'zz-9'))).body.error.code, 'model_unpriced');
  const pricing = await pricingOf(s.app, s.org);
  t.is(pricing.unpriced_rule, 'family_max');
  t.deepEqual(pricing.unpriced_models.map((m: { model: string; priced_as: string | null }) => [m.model, m.priced_as]), [['pm-2', 'family_max:pm'], ['zz-9', null]]);
  const spend = (await (await fetch(`${s.app.url}/metrics`)).text()).split('\n').find((l) => l.startsWith('keyward_spend_usd_total{provider="priced",model="family_max:pm"}'));
  t.truthy(spend, 'spend labelled by the family rule, never the caller\'s string');
});
