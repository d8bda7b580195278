/**
 * The SpendLedger on an in-memory LeaseStore (granting as the adapters do) and a manual clock:
 * blocks in whole requests, no store call per request at steady state, fragments held by several
 * instances pooled so the cap is reached to within one worst case, settlement and refunds back into
 * what is held, a refusal believed for a moment, a lowered cap, month rollover and shutdown.
 */
import 'reflect-metadata';
import test from 'ava';
import { Writable } from 'node:stream';
import { SpendLedger, spendBlock } from '../../src/accounting/spend-ledger.js';
import { createLogger } from '../../src/log.js';
import { ManualClock } from '../support/clocks.js';
import { MemoryLeases } from '../support/memory-leases.js';

const quiet = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));

function ledgers(n: number, store = new MemoryLeases(), clock = new ManualClock()) {
  return { store, clock, ls: Array.from({ length: n }, () => new SpendLedger(store, clock, quiet)) };
}

test('spendBlock: whole multiples of the need, at most 1/16 of what is left and 64 requests, at least one', (t) => {
  t.is(spendBlock(1_000_000, 0, 100), 6400);
  t.is(spendBlock(16_000, 0, 100), 1000);
  t.is(spendBlock(1000, 0, 100), 100);
  t.is(spendBlock(1000, 1000, 100), 100);
  t.is(spendBlock(16_000, 0, 300) % 300, 0);
});

test('steady state: requests are served from what is held, the store asked once per block', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_a', 10_000_000);
  for (let i = 0; i < 200; i++) t.is(await l!.reserve([cap], 1000), undefined);
  t.true(store.leaseCalls <= 4, `${store.leaseCalls} lease calls for 200 requests`);
  t.is(await store.leased(cap.key), 200 * 1000 + l!.heldOf(cap.key));
});

test('all or nothing across caps: a token and an org cap; the org refusing gives the token its amount back', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const tok = l!.tokenCap('tok_a', 10_000);
  const org = l!.orgCap('org_a', 500);
  t.is(await l!.reserve([tok, org], 400), undefined);
  const refused = await l!.reserve([tok, org], 400);
  t.is(refused?.kind, 'org');
  t.is(await store.leased(tok.key) - l!.heldOf(tok.key), 400, 'only the first request is out of the token budget');
});

test('settle returns the unused part; refund returns it all; no usage reported keeps it all', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_a', 1000);
  t.is(await l!.reserve([cap], 1000), undefined);
  t.is((await l!.reserve([cap], 1))?.kind, 'token');
  l!.settle([cap], 1000, 250);
  t.is(l!.heldOf(cap.key), 750);
  t.is(await l!.reserve([cap], 700), undefined);
  l!.refundAll([cap], 700);
  t.is(await l!.reserve([cap], 750), undefined);
  l!.settle([cap], 750, 750);
  t.is(l!.heldOf(cap.key), 0);
  t.is(await store.leased(cap.key), 1000, 'leased = spent + held');
});

test('fragments on three instances are pooled: the cap is reached to within one request', async (t) => {
  const { store, clock, ls } = ledgers(3);
  const w = 300;
  const capOf = (i: number) => ls[i]!.tokenCap('tok_f', 37 * w);
  // Each instance takes a small odd amount first (a cheaper request), leaving it a fragment of its block.
  for (let i = 0; i < 3; i++) {
    t.is(await ls[i]!.reserve([capOf(i)], 7), undefined);
    ls[i]!.settle([capOf(i)], 7, 7);
  }
  let ok = 0;
  // Then requests of w round-robin until every instance is refused twice in a row.
  for (let round = 0, refusedInARow = 0; refusedInARow < 6 && round < 500; round++) {
    const i = round % 3;
    if ((await ls[i]!.reserve([capOf(i)], w)) === undefined) {
      ok++;
      refusedInARow = 0;
      ls[i]!.settle([capOf(i)], w, w);
    } else {
      refusedInARow++;
      clock.advance(2000); // past the refusal's recheck
    }
  }
  const spent = 21 + ok * w;
  t.true(spent <= 37 * w);
  t.true(spent >= 37 * w - w, `spent ${spent} of ${37 * w}`);
  for (const l of ls) await l.releaseAll();
  t.is(await store.leased(capOf(0).key), spent, 'after shutdown the store holds exactly what was spent');
});

test('fragments that no instance can use alone are pooled by the one that asks last', async (t) => {
  const { store, ls } = ledgers(3);
  const w = 300;
  const caps = ls.map((l) => l.tokenCap('tok_p', 2 * w));
  // Each instance reserves 0.6 of a request and gets it back: 1.8 held in three fragments, 0.2 left in the store.
  for (let i = 0; i < 3; i++) {
    t.is(await ls[i]!.reserve([caps[i]!], 180), undefined);
    ls[i]!.refundAll([caps[i]!], 180);
  }
  t.is(await store.leased(caps[0]!.key), 540);
  const results = [];
  for (let i = 0; i < 3; i++) results.push(await ls[i]!.reserve([caps[i]!], w));
  const ok = results.filter((r) => r === undefined).length;
  // Alone, none fits (each is 120 short and the store has 60); pooled, the cap is reached to within one request.
  t.true(ok * w >= 2 * w - w && ok * w <= 2 * w, `${ok} requests of ${w} under a cap of ${2 * w}`);
  for (const l of ls) await l.releaseAll();
  t.is(await store.leased(caps[0]!.key), ok * w);
});

test('a refusal is believed for a moment (no store call per refused request), a smaller need still asks', async (t) => {
  const { store, clock, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_r', 1000);
  t.is(await l!.reserve([cap], 900), undefined);
  t.truthy(await l!.reserve([cap], 200));
  const calls = store.leaseCalls;
  for (let i = 0; i < 50; i++) t.truthy(await l!.reserve([cap], 200));
  t.is(store.leaseCalls, calls, 'refused from memory');
  t.is(await l!.reserve([cap], 100), undefined, 'a smaller request that fits is still served');
  clock.advance(2000);
  t.truthy(await l!.reserve([cap], 200));
  t.true(store.leaseCalls > calls);
});

test('a lowered org cap applies to what an instance holds; a new month starts from zero and last month goes back', async (t) => {
  const { store, clock, ls: [l] } = ledgers(1);
  t.is(await l!.reserve([l!.orgCap('org_m', 100_000)], 100), undefined);
  const key = l!.orgCap('org_m', 100_000).key;
  t.true(l!.heldOf(key) > 0);
  t.is((await l!.reserve([l!.orgCap('org_m', 100)], 100))?.kind, 'org', 'the new cap of 100 is spent already');
  await new Promise((r) => setImmediate(r));
  t.is(await store.leased(key), 100, 'what was held went back');
  clock.set(Date.UTC(2026, 11, 1, 0, 0, 1)); // December
  t.is(await l!.reserve([l!.orgCap('org_m', 100)], 100), undefined);
  t.not(l!.orgCap('org_m', 100).key, key);
  t.true(l!.secondsToMonthEnd() > 30 * 86400 - 10);
});

test('releaseAll hands every held amount back; a failed hand-back keeps it usable here', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  const cap = l!.tokenCap('tok_s', 1_000_000);
  t.is(await l!.reserve([cap], 10), undefined);
  t.true(l!.heldOf(cap.key) > 0);
  store.failRelease = true;
  await l!.releaseAll();
  t.true(l!.heldOf(cap.key) > 0);
  store.failRelease = false;
  await l!.releaseAll();
  t.is(l!.heldOf(cap.key), 0);
  t.is(await store.leased(cap.key), 10);
});

test('counters stay bounded: past the bound the least recently used hand their amounts back', async (t) => {
  const { store, ls: [l] } = ledgers(1);
  l!.countersMax = 10;
  for (let i = 0; i < 30; i++) t.is(await l!.reserve([l!.tokenCap(`tok_${i}`, 1_000_000)], 10), undefined);
  await new Promise((r) => setImmediate(r));
  let held = 0;
  for (let i = 0; i < 30; i++) held += l!.heldOf(`spend:tok:tok_${i}`);
  let leased = 0;
  for (let i = 0; i < 30; i++) leased += await store.leased(`spend:tok:tok_${i}`);
  t.is(leased, 30 * 10 + held, 'evicted counters gave their held amounts back');
});
