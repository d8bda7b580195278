/**
 * Spend budgets on one instance (SQLite): the token scope `budget_usd` and the org's
 * `spend_limit_usd` (PATCH /v1/orgs/self), the three refusals (nothing forwarded, nothing
 * counted), settlement to the reported usage, the whole reservation kept when none is
 * reported, and exactness: 300 concurrent requests at a cap that fits 37 worst cases.
 */
import test from 'ava';
import { api, mintToken } from '../support/app.js';
import { budgetSetup, chat, chatBody, spentOf as spentIn, worstCase, type BudgetSetup } from '../support/budget.js';
import { formatUsd } from '../../src/pricing/money.js';
import { usdDetail } from '../../src/errors.js';
import { pool } from '../support/pool.js';
import { leasedOut } from '../support/leases.js';

type Setup = BudgetSetup;
const setup = budgetSetup;
const spentOf = (s: Setup, key: string): Promise<number> => spentIn(s.app, key);

test('budget_usd: minted, shown as a decimal string, validated', async (t) => {
  const s = await setup(t);
  const made = await api(s.app, 'POST', '/v1/tokens', { token: s.org.token, body: { credential_id: s.credential, ttl: '1h', budget_usd: '12.5' } });
  t.is(made.status, 201);
  t.is(made.body.budget_usd, '12.50');
  t.is((await api(s.app, 'GET', `/v1/tokens/${made.body.id}`, { token: s.org.token })).body.budget_usd, '12.50');
  for (const bad of ['0', '-1', '1.1234567', 'abc', 12, '1e3', '']) {
    const r = await api(s.app, 'POST', '/v1/tokens', { token: s.org.token, body: { credential_id: s.credential, ttl: '1h', budget_usd: bad } });
    t.is(r.status, 400, String(bad));
    t.is(r.body.error.code, 'invalid_scope', String(bad));
    t.is(r.body.error.param, 'budget_usd');
  }
});

test('a budgeted request reserves its worst case, is settled to the reported usage, and what is left keeps serving', async (t) => {
  const s = await setup(t);
  const body = chatBody(1);
  const w = worstCase(body);
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: formatUsd(3 * w) });
  // Each request reports a third of its worst case: the rest goes back, so far more than 3 fit.
  s.up.usage = (b) => ({ prompt_tokens: Math.floor((Buffer.byteLength(b) + 1024) / 3), completion_tokens: 0 });
  const cost = Math.ceil(Math.floor((Buffer.byteLength(body) + 1024) / 3) * 2);
  let ok = 0;
  for (let i = 0; i < 12; i++) if ((await chat(s.app.url, tok.token, body)).status === 200) ok++;
  t.is(ok, Math.min(12, Math.floor((3 * w - w) / cost) + 1), 'requests fit while what is left covers one worst case');
  t.true(ok > 3);
  t.is(await spentOf(s, `spend:tok:${tok.id}`), ok * cost);
});

test('refusals: 400 max_tokens_required, 403 model_unpriced, 429 budget_exhausted; nothing forwarded, nothing counted', async (t) => {
  const s = await setup(t);
  const tiny = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: '0.000001' });
  const rich = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: '100' });

  const noCap = await chat(s.app.url, rich.token, JSON.stringify({ model: 'pm-bare', messages: [] }));
  t.is(noCap.status, 400);
  t.is(noCap.body.error.code, 'max_tokens_required');
  t.is(noCap.body.error.type, 'invalid_request');
  t.regex(noCap.body.error.message, /max_tokens/);
  // With a cap, the bare model is fine; a model with a known largest output needs none.
  t.is((await chat(s.app.url, rich.token, JSON.stringify({ model: 'pm-bare', max_tokens: 10, messages: [] }))).status, 200);
  t.is((await chat(s.app.url, rich.token, JSON.stringify({ model: 'pm-1', messages: [] }))).status, 200);
  // Media without a known context window cannot be bounded.
  const media = await chat(s.app.url, rich.token, JSON.stringify({ model: 'pm-bare', max_tokens: 10, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] }] }));
  t.is(media.status, 400);
  t.is(media.body.error.code, 'max_tokens_required');
  t.regex(media.body.error.message, /media|context window/);

  for (const body of [JSON.stringify({ model: 'gpt-unknown', max_tokens: 5, messages: [] }), JSON.stringify({ max_tokens: 5, messages: [] })]) {
    const r = await chat(s.app.url, rich.token, body);
    t.is(r.status, 403);
    t.is(r.body.error.code, 'model_unpriced');
    t.is(r.body.error.type, 'permission');
  }

  const before = s.up.received.length;
  const exhausted = await chat(s.app.url, tiny.token, chatBody(1));
  t.is(exhausted.status, 429);
  t.is(exhausted.body.error.code, 'budget_exhausted');
  t.is(exhausted.body.error.type, 'rate_limit');
  t.is(exhausted.headers.get('retry-after'), null, 'a lifetime budget never refills');
  // What it needed and what was left: amounts as six-place USD strings, in the message too.
  const needed = usdDetail(worstCase(chatBody(1)));
  t.deepEqual(exhausted.body.error.detail, { cap: 'token.budget_usd', needed_usd: needed, left_usd: '0.000001' });
  t.is(exhausted.body.error.message, `This request's worst-case cost ($${needed}) does not fit in what is left of this token's budget_usd ($0.000001).`);
  t.is(s.up.received.length, before, 'nothing forwarded');
  t.is((await api(s.app, 'GET', `/v1/tokens/${tiny.id}`, { token: s.org.token })).body.usage.requests, 0, 'nothing counted');
  t.is(await spentOf(s, `spend:tok:${tiny.id}`), 0);

  // An unbudgeted token of an unbudgeted org is untouched: unpriced models and no caps pass.
  const plain = await mintToken(s.app, s.org, s.credential, '1h');
  t.is((await chat(s.app.url, plain.token, JSON.stringify({ model: 'gpt-unknown', messages: [] }))).status, 200);

  // Audited as budget.refused (denied, aggregated).
  const audit = await api(s.app, 'GET', '/v1/audit?limit=100', { token: s.org.token });
  t.true(audit.body.data.some((e: any) => e.action === 'budget.refused' && e.outcome === 'denied'), JSON.stringify(audit.body.data.map((e: any) => e.action)));
});

test('no usage reported: the whole reservation stands; a provider error answer costs nothing; a bodiless GET is not reserved', async (t) => {
  const s = await setup(t);
  const body = chatBody(7);
  const w = worstCase(body);
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: '100' });
  const key = `spend:tok:${tok.id}`;
  s.up.usage = () => undefined;
  t.is((await chat(s.app.url, tok.token, body)).status, 200);
  t.is(await spentOf(s, key), w);
  s.up.status = 500;
  t.is((await chat(s.app.url, tok.token, body)).status, 500);
  t.is(await spentOf(s, key), w, 'the error answer cost nothing');
  s.up.status = 200;
  const models = await fetch(`${s.app.url}/v1/proxy/v1/models`, { headers: { 'x-proxy-token': tok.token } });
  await models.arrayBuffer();
  t.is(await spentOf(s, key), w);
});

test('PATCH /v1/orgs/self sets and clears the monthly spend_limit_usd (audited org.update); it applies at once', async (t) => {
  const s = await setup(t);
  const plain = await mintToken(s.app, s.org, s.credential, '1h');
  const body = chatBody(3);
  t.is((await chat(s.app.url, plain.token, body)).status, 200, 'no limit yet (the org is now cached as unlimited)');
  const set = await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: '0.000010' } });
  t.is(set.status, 200);
  t.is(set.body.spend_limit_usd, '0.00001');
  t.is(set.body.id, s.org.id);
  const refused = await chat(s.app.url, plain.token, body);
  t.is(refused.status, 429);
  t.is(refused.body.error.code, 'budget_exhausted');
  t.like(refused.body.error.detail, { cap: 'org.spend_limit_usd', needed_usd: usdDetail(worstCase(body)) });
  t.regex(refused.body.error.detail.left_usd, /^0\.0000[01][0-9]$/, 'at most the limit is left');
  t.true(Number(refused.body.error.detail.left_usd) < Number(refused.body.error.detail.needed_usd));
  const retry = Number(refused.headers.get('retry-after'));
  t.true(retry >= 1 && retry <= 31 * 86400, `Retry-After ${retry}: the month's end`);
  for (const bad of [{ spend_limit_usd: '0' }, { spend_limit_usd: 5 }, { spend_limit_usd: '1.0000001' }, {}, { spend_limit_usd: '1', other: 1 }]) {
    const r = await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: bad });
    t.is(r.status, 400, JSON.stringify(bad));
  }
  const cleared = await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: null } });
  t.is(cleared.body.spend_limit_usd, null);
  t.is((await chat(s.app.url, plain.token, body)).status, 200);
  const audit = await api(s.app, 'GET', '/v1/audit?limit=100', { token: s.org.token });
  t.is(audit.body.data.filter((e: any) => e.action === 'org.update' && e.outcome === 'success').length, 2);
});

test('a limit set mid-month counts the month\'s spend so far (made while no limit applied), once', async (t) => {
  const s = await setup(t);
  const plain = await mintToken(s.app, s.org, s.credential, '1h');
  const body = chatBody(5);
  const w = worstCase(body);
  for (let i = 0; i < 3; i++) t.is((await chat(s.app.url, plain.token, body)).status, 200);
  const key = `spend:org:${s.org.id}:${new Date().toISOString().slice(0, 7)}`;
  t.is((await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: formatUsd(Math.floor(4.5 * w)) } })).status, 200);
  t.is(await spentOf(s, key), 3 * w, 'the three requests before the limit are under its key');
  t.is((await chat(s.app.url, plain.token, body)).status, 200, 'one more fits');
  t.is((await chat(s.app.url, plain.token, body)).status, 429, 'a fifth would pass 4.5 worst cases');
  // Setting it again (a higher limit) does not count the month twice.
  t.is((await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: formatUsd(Math.floor(5.5 * w)) } })).status, 200);
  t.is(await spentOf(s, key), 4 * w);
  t.is((await chat(s.app.url, plain.token, body)).status, 200);
  t.is((await chat(s.app.url, plain.token, body)).status, 429);
});

for (const scope of ['token', 'org'] as const) {
  test(`exact on one instance (${scope} cap): 300 concurrent requests at a cap of 37 worst cases spend it to within one`, async (t) => {
    const s = await setup(t);
    const w = worstCase(chatBody(0));
    const cap = 37 * w;
    let tok: { id: string; token: string };
    let key: string;
    if (scope === 'token') {
      tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: formatUsd(cap) });
      key = `spend:tok:${tok.id}`;
    } else {
      t.is((await api(s.app, 'PATCH', '/v1/orgs/self', { token: s.org.token, body: { spend_limit_usd: formatUsd(cap) } })).status, 200);
      tok = await mintToken(s.app, s.org, s.credential, '1h');
      key = `spend:org:${s.org.id}:${new Date().toISOString().slice(0, 7)}`;
    }
    const statuses = await pool(300, 300, async (i) => (await chat(s.app.url, tok.token, chatBody(i))).status);
    const ok = statuses.filter((x) => x === 200).length;
    t.is(statuses.filter((x) => x === 429).length, 300 - ok);
    t.is(s.up.received.length, ok, 'only what fit was forwarded');
    const spent = await spentOf(s, key);
    t.is(spent, ok * w, 'settled spend is what the upstream reported');
    t.true(spent <= cap, `spent ${spent} ≤ cap ${cap}`);
    t.true(spent >= cap - w, `spent ${spent} ≥ cap − one worst case ${cap - w}`);
    t.log(`${ok} of 300 forwarded; spent ${formatUsd(spent)} of ${formatUsd(cap)} USD`);
  });
}

test('exact when usage comes in under the worst case: what settlements give back serves later requests, to within one worst case', async (t) => {
  const s = await setup(t);
  const w = worstCase(chatBody(0));
  const cap = 37 * w;
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: formatUsd(cap) });
  // Each request reports 90% of its worst-case input and all its output.
  s.up.usage = (b) => ({ prompt_tokens: Math.floor((Buffer.byteLength(b) + 1024) * 0.9), completion_tokens: JSON.parse(b).max_tokens });
  const cost = Math.floor((Buffer.byteLength(chatBody(0)) + 1024) * 0.9) * 2 + 100 * 8;
  const burst = await pool(300, 300, async (i) => (await chat(s.app.url, tok.token, chatBody(i))).status);
  let ok = burst.filter((x) => x === 200).length;
  // Then one at a time until refused: what the burst's settlements gave back is used.
  for (let i = 0; i < 20 && (await chat(s.app.url, tok.token, chatBody(i))).status === 200; i++) ok++;
  const spent = await spentOf(s, `spend:tok:${tok.id}`);
  t.is(spent, ok * cost);
  t.true(spent <= cap, `spent ${spent} ≤ cap ${cap}`);
  t.true(spent >= cap - w, `spent ${spent} ≥ cap − one worst case ${cap - w}`);
  t.log(`${ok} forwarded at ${cost} µ$ each (worst case ${w}); spent ${formatUsd(spent)} of ${formatUsd(cap)} USD`);
});
