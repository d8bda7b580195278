/**
 * The SpendLedger on an in-memory LeaseStore (granting as the adapters do) and a manual clock:
 * blocks in whole requests, few store writes for many requests, fragments held by several instances
 * pooled so the cap is reached to within one worst case, settlement and refunds back into what is
 * held, a refusal believed for a moment, a lowered cap, month rollover, shutdown (and a shutdown
 * that could not write: the holder expires and its idle amounts come back), a bound on counters.
 */
import 'reflect-metadata';
import test from 'ava';
import { SpendLedger, spendBlock, type SpendCap, type SpendHold } from '../../src/accounting/spend-ledger.js';
import { ManualClock } from '../support/clocks.js';
import { MemoryLeases } from '../support/memory-leases.js';
import { keeperOn, leasedOut, quietLog } from '../support/leases.js';

function ledgers(n: number, store = new MemoryLeases(), clock = new ManualClock()) {
  const keepers = Array.from({ length: n }, () => keeperOn(store, clock));
  return { store, clock, keepers, ls: keepers.map((k) => new SpendLedger(k, store, clock, quietLog)) };
}

/** The hold, or fails the test with the cap that refused. */
const held = (r: SpendHold | SpendCap): SpendHold => {
  if ('kind' in r) throw new Error(`refused by the ${r.kind} cap`);
  return r;
};
const refusedBy = (r: SpendHold | SpendCap): string | undefined => ('kind' in r ? r.kind : undefined);

test('spendBlock: whole multiples of the need, at most 1/16 of what is left and 64 requests, at least one', (t) => {
  t.is(spendBlock(1_000_000, 0, 100), 6400);
  t.is(spendBlock(16_000, 0, 100), 1000);
  t.is(spendBlock(1000, 0, 100), 100);
  t.is(spendBlock(1000, 1000, 100), 100);
  t.is(spendBlock(16_000, 0, 300) % 300, 0);
});

test('steady state: requests are served from what is armed, the store written a few times for 200 requests', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_a', 10_000_000);
  for (let i = 0; i < 200; i++) held(await l!.reserve([cap], 1000));
  t.true(store.claimCalls <= 4, `${store.claimCalls} claims for 200 requests`);
  t.true(store.writeCalls <= 12, `${store.writeCalls} writes for 200 requests`);
  t.is(await leasedOut(store, cap.key), 200 * 1000 + l!.heldOf(cap.key));
});

test('all or nothing across caps: a token and an org cap; the org refusing gives the token its amount back', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const tok = l!.tokenCap('tok_a', 10_000);
  const org = l!.orgCap('org_a', 500);
  held(await l!.reserve([tok, org], 400));
  t.is(refusedBy(await l!.reserve([tok, org], 400)), 'org');
  t.is(await leasedOut(store, tok.key) - l!.heldOf(tok.key), 400, 'only the first request is out of the token budget');
});

test('settle frees the unused part; refund frees it all; no usage reported keeps it all', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_a', 1000);
  const a = held(await l!.reserve([cap], 1000));
  t.is(refusedBy(await l!.reserve([cap], 1)), 'token');
  l!.settle(a, 250);
  t.is(l!.heldOf(cap.key), 750);
  l!.refund(held(await l!.reserve([cap], 700)));
  l!.settle(held(await l!.reserve([cap], 750)), 750);
  t.is(l!.heldOf(cap.key), 0);
  t.is(await leasedOut(store, cap.key), 1000, 'out = spent + held');
  l!.settle(a, 1000);
  t.is(l!.heldOf(cap.key), 0, 'a hold settles once: a second settle adds nothing');
});

test('fragments on three instances are pooled: the cap is reached to within one request', async (t) => {
  const { store, clock, ls } = ledgers(3);
  const w = 300;
  const capOf = (i: number) => ls[i]!.tokenCap('tok_f', 37 * w);
  // Each instance takes a small odd amount first (a cheaper request), leaving it a fragment of its block.
  for (let i = 0; i < 3; i++) ls[i]!.settle(held(await ls[i]!.reserve([capOf(i)], 7)), 7);
  let ok = 0;
  // Then requests of w round-robin until every instance is refused twice in a row.
  for (let round = 0, refusedInARow = 0; refusedInARow < 6 && round < 500; round++) {
    const i = round % 3;
    const r = await ls[i]!.reserve([capOf(i)], w);
    if (!('kind' in r)) {
      ok++;
      refusedInARow = 0;
      ls[i]!.settle(r, w);
    } else {
      refusedInARow++;
      clock.advance(2000); // past the refusal's recheck
    }
  }
  const spent = 21 + ok * w;
  t.true(spent <= 37 * w);
  t.true(spent >= 37 * w - w, `spent ${spent} of ${37 * w}`);
  for (const l of ls) await l.releaseAll();
  t.is(await leasedOut(store, capOf(0).key), spent, 'after shutdown the store holds exactly what was spent');
});

test('fragments that no instance can use alone are pooled by the one that asks last', async (t) => {
  const { store, ls } = ledgers(3);
  const w = 300;
  const caps = ls.map((l) => l.tokenCap('tok_p', 2 * w));
  // Each instance reserves 0.6 of a request and gets it back: 1.8 held in three fragments, 0.2 left in the store.
  for (let i = 0; i < 3; i++) ls[i]!.refund(held(await ls[i]!.reserve([caps[i]!], 180)));
  t.is(await leasedOut(store, caps[0]!.key), 540);
  const results = [];
  for (let i = 0; i < 3; i++) results.push(await ls[i]!.reserve([caps[i]!], w));
  const ok = results.filter((r) => !('kind' in r)).length;
  // Alone, none fits (each is 120 short and the store has 60); pooled, the cap is reached to within one request.
  t.true(ok * w >= 2 * w - w && ok * w <= 2 * w, `${ok} requests of ${w} under a cap of ${2 * w}`);
  for (const r of results) if (!('kind' in r)) ls[0]!.settle(r, w);
  for (const l of ls) await l.releaseAll();
  t.is(await leasedOut(store, caps[0]!.key), ok * w);
});

test('a refusal is believed for a moment (no store call per refused request), a smaller need still asks', async (t) => {
  const { store, clock, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_r', 1000);
  held(await l!.reserve([cap], 900));
  t.is(refusedBy(await l!.reserve([cap], 200)), 'token');
  const calls = store.writeCalls;
  for (let i = 0; i < 50; i++) t.is(refusedBy(await l!.reserve([cap], 200)), 'token');
  t.is(store.writeCalls, calls, 'refused from memory');
  held(await l!.reserve([cap], 100));
  clock.advance(2000);
  t.is(refusedBy(await l!.reserve([cap], 200)), 'token');
  t.true(store.writeCalls > calls);
});

test('a lowered org cap applies to what an instance holds; a new month starts from zero and last month goes back', async (t) => {
  const { store, clock, ls: [l] } = ledgers(1);
  held(await l!.reserve([l!.orgCap('org_m', 100_000)], 100));
  const key = l!.orgCap('org_m', 100_000).key;
  t.true(l!.heldOf(key) > 0);
  t.is(refusedBy(await l!.reserve([l!.orgCap('org_m', 100)], 100)), 'org', 'the new cap of 100 is spent already');
  t.is(await leasedOut(store, key), 100, 'what was held went back');
  clock.set(Date.UTC(2026, 11, 1, 0, 0, 1)); // December
  held(await l!.reserve([l!.orgCap('org_m', 100)], 100));
  t.not(l!.orgCap('org_m', 100).key, key);
  t.true(l!.secondsToMonthEnd() > 30 * 86400 - 10);
});

test('releaseAll hands every held amount back; one that could not be written comes back when its holder expires', async (t) => {
  const { store, clock, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_s', 1_000_000);
  l!.settle(held(await l!.reserve([cap], 10)), 10);
  t.true(l!.heldOf(cap.key) > 0);
  store.failWrites = 'before';
  await l!.releaseAll();
  t.true(await leasedOut(store, cap.key) > 10, 'still out: the holder is in the store');
  store.failWrites = undefined;
  clock.advance(300_001); // its lease TTL
  // Reclaimed: its idle amount is back; what it had armed (the spend, and one more request's worth) stays counted.
  t.deepEqual(await store.leaseLedger(cap.key, clock.now()), { outstanding: 20, used: 20, held: 0 });
});

test('counters stay bounded: past the bound the least recently used hand their amounts back', async (t) => {
  const { store, keepers: [k], ls: [l] } = ledgers(1);
  k!.countersMax = 10;
  for (let i = 0; i < 30; i++) l!.settle(held(await l!.reserve([l!.tokenCap(`tok_${i}`, 1_000_000)], 10)), 10);
  await new Promise((r) => setImmediate(r));
  t.true(k!.size <= 10);
  let free = 0;
  let out = 0;
  for (let i = 0; i < 30; i++) {
    free += l!.heldOf(`spend:tok:tok_${i}`);
    out += await leasedOut(store, `spend:tok:tok_${i}`);
  }
  t.is(out, 30 * 10 + free, 'evicted counters gave their held amounts back');
});
