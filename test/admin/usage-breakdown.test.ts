/**
 * GET /v1/usage/breakdown: an organisation's requests, tokens and spend per token, credential or priced
 * model over a range of days (default: this month so far), the dearest first, with names (a revoked
 * token's kept), from the daily breakdown counters batched with the others (unflushed and flushed counts
 * alike, never twice); bad parameters are 400s naming the parameter; the route is in the OpenAPI document.
 */
import 'reflect-metadata';
import test from 'ava';
import { UsageRecorder } from '../../src/accounting/usage-recorder.js';
import { Symbols } from '../../src/symbols.js';
import { api, createOrg, mintToken } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { pricedFixture } from '../support/priced-providers.js';
import { quiet } from '../support/wait.js';

const DAY = 86_400_000;

const row = (key: string, requests: number, input: number, output: number, spend: string, name?: string) =>
  ({ key, ...(name !== undefined ? { name } : {}), requests, input_tokens: input, output_tokens: output, spend_usd: spend });

test('per token, credential and model: the dearest first, named (a revoked token too), this month by default; flushed or not, the same; another organisation sees none', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12));
  const f = await pricedFixture(t, { clock });
  const get = (query: string, token = f.org.token) => api(f.app, 'GET', `/v1/usage/breakdown${query}`, { token });
  t.is((await api(f.app, 'PATCH', `/v1/credentials/${f.credentials.openai}`, { token: f.org.token, body: { name: 'prod openai' } })).status, 200);
  const agentA = await mintToken(f.app, f.org, f.credentials.openai, '30d', { name: 'agent a' });
  const agentB = await mintToken(f.app, f.org, f.credentials.anthropic, '30d', { name: 'agent b' });
  // 11-15: agent a one OpenAI-shaped request (11 in, 7 out: 98 µ$), agent b one Anthropic-shaped (13 in, 7 out: 144 µ$).
  await f.spend('v1/chat/completions', { model: 'spend-4o', messages: [] }, agentA.token);
  await f.spend('v1/messages', { model: 'spend-claude-sonnet', max_tokens: 5, messages: [] }, agentB.token);
  // 11-17: agent b once more, streamed; then it is revoked.
  clock.advance(2 * DAY);
  await f.spend('v1/messages', { model: 'spend-claude-sonnet', max_tokens: 5, messages: [], stream: true }, agentB.token);
  await quiet(f.app);
  t.is((await api(f.app, 'DELETE', `/v1/tokens/${agentB.id}`, { token: f.org.token })).status, 200);

  const byToken = [row(agentB.id, 2, 26, 14, '0.000288', 'agent b'), row(agentA.id, 1, 11, 7, '0.000098', 'agent a')];
  const byCredential = [row(f.credentials.anthropic, 2, 26, 14, '0.000288'), row(f.credentials.openai, 1, 11, 7, '0.000098', 'prod openai')];
  const byModel = [row('spend-claude*', 2, 26, 14, '0.000288'), row('spend-4o*', 1, 11, 7, '0.000098')];
  const check = async (when: string) => {
    const tokens = await get('?by=token');
    t.is(tokens.status, 200, when);
    t.deepEqual(tokens.body, { object: 'list', by: 'token', from: '2026-11-01', to: '2026-11-17', data: byToken }, when);
    t.deepEqual((await get('?by=credential')).body.data, byCredential, when);
    t.deepEqual((await get('?by=model')).body.data, byModel, when);
    // A range: only its days.
    t.deepEqual((await get('?by=token&from=2026-11-16&to=2026-11-17')).body.data, [row(agentB.id, 1, 13, 7, '0.000144', 'agent b')], when);
    t.deepEqual((await get('?by=model&from=2026-11-15&to=2026-11-15')).body.data, [row('spend-claude*', 1, 13, 7, '0.000144'), byModel[1]], when);
  };
  await check('before the flush (this instance\'s pending counters)');
  await f.app.server.container.resolve(UsageRecorder).flush();
  const store = f.app.server.container.resolve<any>(Symbols.UsageStore);
  t.is((await store.listBreakdown('tok-day', f.org.id, '2026-11-01', '2026-11-30')).length, 2, 'flushed to the store');
  await check('after the flush (the store\'s, nothing counted twice)');

  // `to` alone: `from` is the first of its month.
  const october = await get('?by=credential&to=2026-10-31');
  t.deepEqual([october.body.from, october.body.to, october.body.data], ['2026-10-01', '2026-10-31', []]);
  const other = await createOrg(f.app, 'initech');
  t.deepEqual((await get('?by=token', other.token)).body.data, []);
});

test('bad parameters are 400s naming the parameter; no key is a 401; the route is documented in the OpenAPI document', async (t) => {
  const f = await pricedFixture(t, { clock: new ManualClock(Date.UTC(2026, 10, 15, 12)) });
  const refused: Array<[string, string]> = [
    ['', 'by'],
    ['?by=org', 'by'],
    ['?by=token&from=2026-11-5', 'from'],
    ['?by=token&to=2026-02-30', 'to'],
    ['?by=token&from=2026-11-10&to=2026-11-01', 'from'],
    ['?by=token&from=2026-01-01&to=2026-04-03', 'from'],
    ['?by=token&day=2026-11-01', 'day'],
  ];
  for (const [query, param] of refused) {
    const r = await api(f.app, 'GET', `/v1/usage/breakdown${query}`, { token: f.org.token });
    t.is(r.status, 400, query);
    t.is(r.body.error.code, 'invalid_request', query);
    t.is(r.body.error.param, param, query);
  }
  t.is((await api(f.app, 'GET', '/v1/usage/breakdown?by=model')).status, 401);
  const doc = (await api(f.app, 'GET', '/v1/openapi.json')).body;
  const op = doc.paths['/v1/usage/breakdown'].get;
  t.is(op.operationId, 'getUsageBreakdown');
  const params = op.parameters.map((p: { $ref: string }) => doc.components.parameters[p.$ref.split('/').at(-1)!]);
  const by = params.find((p: { name: string }) => p.name === 'by');
  t.true(by.required);
  t.deepEqual(by.schema.enum, ['token', 'credential', 'model', 'team', 'member']);
  t.regex(params.find((p: { name: string }) => p.name === 'from').description, /first day of/);
  // The daily route's `from` keeps its own default.
  const daily = doc.paths['/v1/usage/daily'].get.parameters.map((p: { $ref: string }) => doc.components.parameters[p.$ref.split('/').at(-1)!]);
  t.regex(daily.find((p: { name: string }) => p.name === 'from').description, /29 days before/);
  t.truthy(doc.components.schemas.UsageBreakdownRow);
});
