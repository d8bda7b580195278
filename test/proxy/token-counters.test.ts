/**
 * A token's `max_requests` counter in the QuotaLedger retires once its token expired or it sat idle
 * (TOKEN_IDLE_MS), and the least recently used go first past a bound, so memory stays bounded however
 * many tokens pass. Retiring hands the counter's unused leased units back to the store, so the count
 * stays exact: a token never gets more than `max_requests`, nor fewer. A counter that cannot write its
 * retirement leaves its holder to expire: its unused units come back when the holder is reclaimed.
 * Unit tests drive the ledger with an in-memory LeaseStore and a manual clock; the last test goes
 * through real HTTP, where the gateway hands the token's expiry to the ledger.
 */
import 'reflect-metadata';
import test from 'ava';
import http from 'node:http';
import { loadConfig } from '../../src/settings/config.js';
import { QuotaLedger, TOKEN_IDLE_MS } from '../../src/accounting/quota-ledger.js';
import type { Store } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';
import { mintToken } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { MemoryLeases } from '../support/memory-leases.js';
import { keeperOn, leasedOut } from '../support/leases.js';
import { request } from '../support/request.js';

const settle = () => new Promise((r) => setImmediate(r));

function ledger() {
  const clock = new ManualClock();
  const store = new MemoryLeases();
  const keeper = keeperOn(store, clock);
  const l = new QuotaLedger(loadConfig({}), keeper, clock);
  return { l, clock, store, keeper };
}

test('an idle token counter retires and hands its unused units back; the token keeps exactly its max_requests', async (t) => {
  const { l, clock, store, keeper } = ledger();
  await l.reserveToken('tok_a', 1000);
  t.is(store.outstanding('token:tok_a'), 62, 'a block of 1000/16 leased, one used');
  clock.advance(TOKEN_IDLE_MS - 1);
  await keeper.tick();
  t.is(l.tokenCounterCount, 1, 'not idle long enough yet');
  clock.advance(1);
  await keeper.tick();
  t.is(l.tokenCounterCount, 0);
  t.is(store.outstanding('token:tok_a'), 1, 'exactly what was used is still out');
  // Used again later: it leases afresh from what the store knows.
  await l.reserveToken('tok_a', 1000);
  await l.releaseAll();
  t.is(store.outstanding('token:tok_a'), 2);
});

test('retiring between every request never lets a token pass max_requests, nor stops it short', async (t) => {
  const { l, clock, keeper } = ledger();
  let ok = 0;
  for (let i = 0; i < 8; i++) {
    try {
      await l.reserveToken('tok_b', 5);
      ok++;
    } catch (err) {
      t.is((err as { code?: string }).code, 'token_exhausted');
    }
    clock.advance(TOKEN_IDLE_MS);
    await keeper.tick();
  }
  t.is(ok, 5);
});

test('an expired token\'s counter goes at the next sweep, idle or not', async (t) => {
  const { l, clock, store } = ledger();
  const expiresAt = clock.now() + 60_000;
  await l.reserveToken('tok_c', 1000, expiresAt);
  await l.reserveToken('tok_c', 1000, expiresAt);
  clock.advance(60_000);
  t.is(l.sweepTokens(), 1);
  await settle();
  t.is(store.outstanding('token:tok_c'), 2);
  // A refund after that has no holder to go back to: the unit stays counted (one unit lost, never one more).
  l.refundToken('tok_c');
  await settle();
  t.is(store.outstanding('token:tok_c'), 2);
});

test('past the bound the least recently used counters retire at once, each handing its units back', async (t) => {
  const { l, clock, store, keeper } = ledger();
  keeper.countersMax = 3;
  for (let i = 0; i < 10; i++) {
    await l.reserveToken(`tok_${i}`, 1000);
    clock.advance(1000);
    t.true(l.tokenCounterCount <= 3, `after ${i + 1}: ${l.tokenCounterCount}`);
  }
  await l.reserveToken('tok_7', 1000); // used again: now the most recent
  await l.reserveToken('tok_10', 1000);
  await settle();
  for (let i = 0; i < 7; i++) t.is(store.outstanding(`token:tok_${i}`), 1, `tok_${i}: only its used unit is out`);
  t.is(store.outstanding('token:tok_7'), 62, 'recently used: kept, with its block');
  t.is(store.outstanding('token:tok_8'), 1, 'the least recently used went');
  t.is(l.tokenCounterCount, 3);
});

test('a retirement the store did not take leaves the holder to expire: its unused units come back then, nothing leased twice', async (t) => {
  const { l, clock, store, keeper } = ledger();
  await l.reserveToken('tok_d', 1000);
  store.failWrites = 'before';
  clock.advance(TOKEN_IDLE_MS);
  await keeper.tick();
  t.is(l.tokenCounterCount, 0);
  t.is(store.outstanding('token:tok_d'), 62, 'still out: the holder is in the store');
  store.failWrites = undefined;
  clock.advance(300_000); // its lease TTL
  const ledgerNow = await store.leaseLedger('token:tok_d', clock.now());
  t.is(ledgerNow.held, 0);
  t.true(ledgerNow.used >= 1 && ledgerNow.used <= 2, `used ${ledgerNow.used}: the one unit, and at most what it had armed`);
});

test('through the gateway: an expired token\'s counter is dropped at the next sweep and its leased block goes back', async (t) => {
  const clock = new ManualClock();
  const f = await proxyFixture(t, { clock });
  const short = await mintToken(f.app, f.org, f.credentials.openai, '1m', { max_requests: 1000 });
  const other = await mintToken(f.app, f.org, f.credentials.openai, '1h', { max_requests: 1000 });
  const store = f.app.server.container.resolve<Store>(Symbols.Store);
  const led = f.app.server.container.resolve(QuotaLedger);
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': short.token }, body: '{"model":"m","messages":[]}' })).status, 200);
  t.is(await leasedOut(store, `token:${short.id}`), 62);
  clock.advance(61_000); // past its expiry, well short of TOKEN_IDLE_MS
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': other.token }, body: '{"model":"m","messages":[]}' })).status, 200); // a request that sweeps
  await settle();
  t.is(await leasedOut(store, `token:${short.id}`), 1);
  t.is(led.tokenCounterCount, 1, 'only the live token\'s counter is held');
});
