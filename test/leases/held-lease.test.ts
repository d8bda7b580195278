/**
 * A lease holder's own rules, with an in-memory LeaseStore and a manual clock (the holder's monotonic
 * clock and the wall clock both come from it): nothing is taken past the expiry it computes less its
 * margin (a paused instance renews first, or learns it was reclaimed and claims afresh); a renewal that
 * fails fails closed; a write whose outcome was unknown (it landed, the answer was lost) is resolved by
 * reading the holder back, so no unit is lost or doubled; in-flight reservations of a holder that was
 * reclaimed are charged, never credited to the holder that replaced it.
 */
import 'reflect-metadata';
import test from 'ava';
import { BackendUnavailable } from '../../src/errors.js';
import type { LeasePlan } from '../../src/accounting/held-lease.js';
import { ManualClock } from '../support/clocks.js';
import { MemoryLeases } from '../support/memory-leases.js';
import { keeperOn, quietLog } from '../support/leases.js';
import { SpendLedger } from '../../src/accounting/spend-ledger.js';

const TTL = 30_000;
const MARGIN = TTL / 10;
const PLAN: LeasePlan = { claimSize: (_limit, _out, short) => Math.max(short, 10), refusalMs: 1000, pool: false };

function setup(limit = 100) {
  const clock = new ManualClock();
  const store = new MemoryLeases();
  const keeper = keeperOn(store, clock, TTL);
  const c = keeper.counter('quota:org_a:2026-11', limit, PLAN);
  return { clock, store, keeper, c };
}

test('nothing is taken past the expiry less the margin: the holder renews first, then takes', async (t) => {
  const { clock, store, c } = setup();
  t.true(await c.acquire(1, 'use'));
  t.true(c.take(1, 'use'), 'armed: taken in memory');
  const writes = store.writeCalls;
  clock.advance(TTL - MARGIN); // paused (or throttled) this long: the lease may be reclaimed soon
  t.false(c.take(1, 'use'), 'not without renewing');
  t.true(await c.acquire(1, 'use'));
  t.true(store.writeCalls > writes, 'it wrote (renewed) before taking');
  t.is(c.used, 3);
});

test('a holder reclaimed while it was paused claims afresh; what it had armed stays charged', async (t) => {
  const { clock, store, keeper, c } = setup(100);
  t.true(await c.acquire(1, 'use')); // claims 10, arms 2 (the request and one more), 8 idle
  const old = (await store.readHolder(c.key, c.holder))!;
  t.like(old, { granted: 10, armed: 2 });
  const gen = c.gen;
  clock.advance(TTL + 1); // paused past its lease
  // Another instance needs more than the pool has left: the paused holder is reclaimed (8 idle back, 2 charged).
  const other = keeperOn(store, clock, TTL).counter(c.key, 100, PLAN);
  t.true(await other.acquire(95, 'use'));
  t.is(await store.readHolder(c.key, old.holder), undefined, 'reclaimed');
  // Back: it must not use what it held; it learns it was reclaimed and claims afresh, from what is left.
  t.false(c.take(1, 'use'));
  t.true(await c.acquire(1, 'use'));
  t.not(c.gen, gen, 'a new holder');
  t.deepEqual(await store.leaseLedger(c.key, clock.now()), { outstanding: 100, used: 2, held: 98 }, 'the limit reached exactly; the 2 it had armed charged');
  await keeper.close();
});

test('a failed renewal fails closed: past its expiry the holder refuses (store unavailable) rather than use what it holds', async (t) => {
  const { clock, store, c } = setup();
  t.true(await c.acquire(1, 'use'));
  store.failWrites = 'before';
  clock.advance(TTL / 3);
  await c.tick(); // the renewal fails
  t.true(c.take(1, 'use'), 'still before its expiry: serves from what is armed');
  clock.advance(TTL);
  t.false(c.take(1, 'use'));
  await t.throwsAsync(c.acquire(1, 'use'), { instanceOf: BackendUnavailable });
  store.failWrites = undefined;
  t.true(await c.acquire(1, 'use'), 'the store is back: it renews and serves');
});

test('a claim whose answer was lost is read back: its units are neither lost nor claimed twice', async (t) => {
  const { store, c } = setup(50);
  store.failWrites = 'after'; // lands, then "times out"
  await t.throwsAsync(c.acquire(1, 'use'), { instanceOf: BackendUnavailable });
  t.is(store.outstanding(c.key), 10, 'the claim landed');
  t.false(c.take(1, 'use'), 'not usable while its outcome is unknown');
  store.failWrites = undefined;
  t.true(await c.acquire(1, 'use'));
  t.is(store.outstanding(c.key), 10, 'read back, not claimed again');
  for (let i = 0; i < 9; i++) t.true(c.take(1, 'use') || (await c.acquire(1, 'use')));
  t.is(store.outstanding(c.key), 10, 'all ten used from the one claim');
  t.is(store.claimCalls, 1);
});

test('writes that land and time out, again and again: the count stays exact', async (t) => {
  const { store, c } = setup(1000);
  let ok = 0;
  let failed = 0;
  for (let i = 0; i < 300; i++) {
    store.failWrites = i % 3 === 0 ? 'after' : undefined;
    try {
      if (c.take(1, 'use') || (await c.acquire(1, 'use'))) ok++;
    } catch {
      failed++;
    }
  }
  store.failWrites = undefined;
  await c.retire();
  t.true(failed > 0);
  t.deepEqual(await store.leaseLedger(c.key, 0), { outstanding: ok, used: ok, held: 0 }, 'after retiring, exactly what was used is out');
});

test('reservations made under a holder that was replaced are not credited to the new one', async (t) => {
  const { clock, store, keeper } = setup(100);
  const ledger = new SpendLedger(keeper, store, clock, quietLog);
  const cap = ledger.tokenCap('tok_a', 100);
  const old = await ledger.reserve([cap], 30);
  if ('kind' in old) return t.fail();
  clock.advance(TTL + 1);
  await store.reclaimExpired(cap.key, clock.now()); // its 30 in flight are charged
  const fresh = await ledger.reserve([cap], 10);
  if ('kind' in fresh) return t.fail();
  ledger.settle(old, 0); // the old stream ends having spent nothing: nothing comes back to the new holder
  const c = keeper.peek(cap.key)!;
  t.is(c.reserved, 10);
  t.is(c.used, 0);
  ledger.settle(fresh, 10);
  t.is(c.used, 10);
  t.is(c.reserved, 0);
});
