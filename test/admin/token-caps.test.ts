/**
 * GET /v1/tokens/:id `caps` on one instance: each cap the token has (`budget_usd`, `tokens_per_minute`,
 * `max_requests`) from the lease pool its refusals reserve from. used + held ≤ limit after every request;
 * whenever a request is refused for a cap, the view shows less than that request's worst case left under it;
 * `used` is what was settled (the same figure as `usage.spend_usd`); the rolling minute's uses leave
 * `used_in_window` when they leave the window (the injected clock). The pools are read on the admin GET
 * only: proxied requests make no lease-ledger read.
 */
import test from 'ava';
import { api, mintToken, type TestApp } from '../support/app.js';
import { budgetSetup, chat, chatBody, worstCase } from '../support/budget.js';
import { ManualClock } from '../support/clocks.js';
import { formatUsd, parseUsd } from '../../src/pricing/money.js';
import type { LeaseStore } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';

/** Counts the store's lease-ledger reads (the token view's only store reads beside the token and its usage). */
function countLedgerReads(app: TestApp): { readonly n: number } {
  const store = app.server.container.resolve<LeaseStore>(Symbols.LeaseStore);
  const read = store.leaseLedger.bind(store);
  const seen = { n: 0 };
  store.leaseLedger = (key, now) => {
    seen.n++;
    return read(key, now);
  };
  return seen;
}

test('budget_usd and max_requests: used + held ≤ limit throughout; refused budget_exhausted only with less than a worst case shown left; no ledger read per proxied request', async (t) => {
  const s = await budgetSetup(t);
  const w = worstCase(chatBody(0));
  const budget = 3 * w + Math.floor(w / 2);
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: formatUsd(budget), max_requests: 10, name: 'capped' });
  const reads = countLedgerReads(s.app);
  const view = async () => {
    const r = await api(s.app, 'GET', `/v1/tokens/${tok.id}`, { token: s.org.token });
    t.is(r.status, 200);
    const b = r.body.caps.budget_usd;
    const money = { used: parseUsd(b.used)!, held: parseUsd(b.held)!, limit: parseUsd(b.limit)! };
    t.is(money.limit, budget);
    t.true(money.used + money.held <= money.limit, `budget: used ${money.used} + held ${money.held} ≤ limit ${money.limit}`);
    const requests = r.body.caps.max_requests;
    t.is(requests.limit, 10);
    t.true(requests.used + requests.held <= requests.limit);
    return { money, requests, usage: r.body.usage, body: r.body };
  };

  const fresh = await view();
  t.deepEqual(fresh.money, { used: 0, held: 0, limit: budget }, 'nothing spent or held before the first request');
  t.false('tokens_per_minute' in fresh.body.caps, 'a cap the token does not have is absent');
  t.is(fresh.body.budget_usd, formatUsd(budget), 'the scope itself is still the amount as minted');
  let forwarded = 0;
  let refused = 0;
  for (let i = 0; i < 6; i++) {
    const readsBefore = reads.n;
    const r = await chat(s.app.url, tok.token, chatBody(i));
    t.is(reads.n, readsBefore, 'a proxied request reads no lease ledger');
    const v = await view();
    if (r.status === 200) {
      forwarded++;
      t.is(v.money.used, forwarded * w, 'used is what was settled');
      t.is(v.usage.spend_usd, formatUsd(forwarded * w), 'the same figure as the token\'s usage');
      t.is(v.requests.used, forwarded);
    } else {
      t.is(r.status, 429);
      t.is(r.body.error.code, 'budget_exhausted');
      refused++;
      t.true(v.money.limit - v.money.used - v.money.held < w, `refused, and shown ${v.money.limit - v.money.used - v.money.held} µ$ left: less than the worst case ${w}`);
    }
  }
  t.is(forwarded, 3);
  t.is(refused, 3);
  t.is(s.up.received.length, 3);
  const readsBefore = reads.n;
  await view();
  t.is(reads.n - readsBefore, 2, 'one ledger read per cap the token has, on the admin read');
  // The list view carries no caps (they are read per token, on its own GET).
  const list = await api(s.app, 'GET', '/v1/tokens', { token: s.org.token });
  t.false('caps' in list.body.data[0]);
});

test('tokens_per_minute: used_in_window counts the minute\'s uses, refused only with less than the request\'s worst case left, and the uses leave it with the window', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 0));
  const s = await budgetSetup(t, {}, { clock, timers: clock });
  const body = chatBody(0, 20);
  // The upstream reports each request's worst case (input: the body's bytes + the overhead; output: max_tokens).
  const worst = Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS + 20;
  const limit = 2 * worst + Math.floor(worst / 2);
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { tokens_per_minute: limit });
  const view = async () => {
    const c = (await api(s.app, 'GET', `/v1/tokens/${tok.id}`, { token: s.org.token })).body.caps.tokens_per_minute;
    t.is(c.limit, limit);
    t.true(c.used_in_window + c.held <= c.limit, `used_in_window ${c.used_in_window} + held ${c.held} ≤ limit ${c.limit}`);
    return c as { used_in_window: number; held: number; limit: number };
  };
  t.deepEqual(await view(), { used_in_window: 0, held: 0, limit });
  for (let i = 1; i <= 2; i++) {
    t.is((await chat(s.app.url, tok.token, body)).status, 200);
    t.is((await view()).used_in_window, i * worst);
  }
  const third = await chat(s.app.url, tok.token, body);
  t.is(third.status, 429);
  t.is(third.body.error.code, 'tokens_per_minute_exceeded');
  const full = await view();
  t.true(full.limit - full.used_in_window - full.held < worst, `refused, and shown ${full.limit - full.used_in_window - full.held} tokens left: less than the worst case ${worst}`);
  await clock.tick(60_000);
  const later = await view();
  t.is(later.used_in_window, 0, 'a minute later the uses have left the window');
  t.is((await chat(s.app.url, tok.token, body)).status, 200, 'and a request fits again');
  t.is((await view()).used_in_window, worst);
});
