/**
 * GET /v1/usage/daily (the console's charts): an organisation's requests, tokens and spend per UTC
 * day, every day of the range present (zeros included), at most 92 days, counted in the same batched
 * flush as the monthly counters (what this instance has not flushed yet included, never twice).
 */
import 'reflect-metadata';
import test from 'ava';
import { UsageRecorder } from '../../src/accounting/usage-recorder.js';
import { spendLimitOf } from '../../src/accounting/usage-summary.js';
import { usageSummaryView } from '../../src/api/views.js';
import { Symbols } from '../../src/symbols.js';
import { api, createOrg, mintToken } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { pricedFixture } from '../support/priced-providers.js';
import { quiet } from '../support/wait.js';

const DAY = 86_400_000;
const zero = (date: string) => ({ date, requests: 0, input_tokens: 0, output_tokens: 0, spend_usd: '0.00' });

test('every day of the range, zeros included; unflushed and flushed counts alike, never twice; another organisation sees none', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 23, 59, 0));
  const f = await pricedFixture(t, { clock });
  // 11-15: one OpenAI-shaped request (11 in, 7 out: 28 + 70 µ$).
  await f.spend('v1/chat/completions', { model: 'spend-4o', messages: [] }, f.tokens.openai.token);
  // 11-17: two Anthropic-shaped ones (13 in, 7 out: 39 + 105 µ$ each).
  clock.advance(2 * DAY);
  const later = await mintToken(f.app, f.org, f.credentials.anthropic); // the fixture's tokens expired meanwhile
  await f.spend('v1/messages', { model: 'spend-claude-sonnet', max_tokens: 5, messages: [] }, later.token);
  await f.spend('v1/messages', { model: 'spend-claude-sonnet', max_tokens: 5, messages: [], stream: true }, later.token);
  await quiet(f.app); // usage is recorded when the response closes
  const expected = [
    zero('2026-11-14'),
    { date: '2026-11-15', requests: 1, input_tokens: 11, output_tokens: 7, spend_usd: '0.000098' },
    zero('2026-11-16'),
    { date: '2026-11-17', requests: 2, input_tokens: 26, output_tokens: 14, spend_usd: '0.000288' },
    zero('2026-11-18'),
  ];
  const range = '/v1/usage/daily?from=2026-11-14&to=2026-11-18';
  const before = await api(f.app, 'GET', range, { token: f.org.token });
  t.is(before.status, 200);
  t.deepEqual(before.body, { object: 'list', data: expected });

  // Flushed to the store: the same answer (the store's rows, nothing pending counted again).
  await f.app.server.container.resolve(UsageRecorder).flush();
  const store = f.app.server.container.resolve<any>(Symbols.UsageStore);
  t.is((await store.listUsage('org-day', f.org.id, '2026-11-01', '2026-11-30')).length, 2);
  t.deepEqual((await api(f.app, 'GET', range, { token: f.org.token })).body.data, expected);

  // Default: the 30 days ending today (UTC), in order.
  const last30 = (await api(f.app, 'GET', '/v1/usage/daily', { token: f.org.token })).body.data;
  t.is(last30.length, 30);
  t.is(last30[0].date, '2026-10-19');
  t.is(last30[29].date, '2026-11-17');
  t.deepEqual(last30.slice(-3), expected.slice(1, 4));
  // Only one end given: `from` runs to today, `to` reaches 30 days back.
  t.deepEqual((await api(f.app, 'GET', '/v1/usage/daily?from=2026-11-16', { token: f.org.token })).body.data, expected.slice(2, 4));
  const upTo = (await api(f.app, 'GET', '/v1/usage/daily?to=2026-11-15', { token: f.org.token })).body.data;
  t.is(upTo.length, 30);
  t.deepEqual(upTo.at(-1), expected[1]);

  // The month's spend is the days' sum.
  t.deepEqual((await api(f.app, 'GET', '/v1/usage', { token: f.org.token })).body.spend_usd, { used: '0.000386', held: '0.00', limit: null });

  const other = await createOrg(f.app, 'initech');
  t.deepEqual((await api(f.app, 'GET', range, { token: other.token })).body.data, expected.map((d) => zero(d.date)));
});

test('a bad range is a 400 naming the parameter: not a day, not a calendar day, from after to, more than 92 days, unknown parameters; no org token is a 401', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12));
  const f = await pricedFixture(t, { clock });
  const get = (query: string, token = f.org.token) => api(f.app, 'GET', `/v1/usage/daily${query}`, { token });
  const refused: Array<[string, string]> = [
    ['?from=2026-11-5', 'from'],
    ['?to=20261115', 'to'],
    ['?from=2026-11-01T00:00:00Z', 'from'],
    ['?to=2026-02-30', 'to'],
    ['?from=2026-13-01&to=2026-12-01', 'from'],
    ['?from=2026-11-10&to=2026-11-01', 'from'],
    ['?from=2026-11-20', 'from'], // after today, the default `to`
    ['?from=2026-01-01&to=2026-04-03', 'from'], // 93 days
    ['?from=2026-01-01&to=2027-01-01', 'from'],
    ['?day=2026-11-01', 'day'],
  ];
  for (const [query, param] of refused) {
    const r = await get(query);
    t.is(r.status, 400, query);
    t.is(r.body.error.code, 'invalid_request', query);
    t.is(r.body.error.type, 'invalid_request', query);
    t.is(r.body.error.param, param, query);
  }
  const quarter = await get('?from=2026-01-01&to=2026-04-02');
  t.is(quarter.status, 200, '92 days is the most, and allowed');
  t.is(quarter.body.data.length, 92);
  t.deepEqual(quarter.body.data.slice(58, 60).map((d: { date: string }) => d.date), ['2026-02-28', '2026-03-01']);
  t.is((await get('?from=2026-11-15&to=2026-11-15')).body.data.length, 1);
  t.is((await get('')).status, 200);
  t.is((await get('', 'otok_nope')).status, 401);
  t.is((await api(f.app, 'GET', '/v1/usage/daily')).status, 401);
});

test('unit: the monthly spend limit is read from the organisation when it has one, and shown against the spend', (t) => {
  const org = { id: 'org_x', name: 'acme', createdAt: 0 };
  t.is(spendLimitOf(org), null);
  t.is(spendLimitOf({ ...org, spendLimitMicros: null } as typeof org), null);
  t.is(spendLimitOf({ ...org, spendLimitMicros: 12_500_000 } as typeof org), 12_500_000);
  const summary = { period: '2026-11', proxyRequests: { used: 1, held: 0, limit: 10 }, credentials: { used: 1, limit: 3 }, tokens: { input: 5, output: 6 } };
  t.deepEqual(usageSummaryView({ ...summary, spend: { usedMicros: 1_234_567, heldMicros: 2_000_000, limitMicros: 12_500_000 } }).spend_usd, { used: '1.234567', held: '2.00', limit: '12.50' });
  t.deepEqual(usageSummaryView({ ...summary, spend: { usedMicros: 0, heldMicros: 0, limitMicros: null } }).spend_usd, { used: '0.00', held: '0.00', limit: null });
});
