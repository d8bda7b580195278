/**
 * Property: whatever the interleaving, a pool is never consumed past its limit, counting what a dead
 * instance may have forwarded as spent in full. Random runs of several instances (keepers over one
 * in-memory LeaseStore, one manual clock) reserve, settle, refund and use units; instances are killed
 * mid-flight (never retiring), paused past their lease and resumed; writes fail before landing or land
 * and time out; the clock jumps. After every step the provider-billable total (settled amounts, plus
 * every reservation in flight or orphaned at its worst case) stays within the limit; at the end the
 * store's used is never below what was billed. `npm test` runs a fixed seed; `npm run test:fuzz` runs
 * KEYWARD_FUZZ_COUNT steps.
 */
import 'reflect-metadata';
import test from 'ava';
import type { HeldLease, LeasePlan } from '../../src/accounting/held-lease.js';
import type { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import { ManualClock } from '../support/clocks.js';
import { MemoryLeases } from '../support/memory-leases.js';
import { keeperOn } from '../support/leases.js';
import { seeded } from '../support/prng.js';

const STEPS = Number(process.env.KEYWARD_FUZZ_COUNT ?? 3000);
const TTL = 10_000;
const KEY = 'spend:org:org_p:2026-11';

interface Instance {
  keeper: LeaseKeeper;
  counter: HeldLease;
  /** Reservations in flight: amount and the holder generation they came from. */
  open: Array<{ n: number; gen: number }>;
  state: 'up' | 'paused' | 'dead';
}

const PLANS: LeasePlan[] = [
  { claimSize: (_l, _o, short) => Math.max(short, 25), refusalMs: 500, pool: true },
  { claimSize: (_l, _o, short) => short, refusalMs: 500, pool: false },
];

async function run(seed: number, steps: number): Promise<{ billable: number; used: number; limit: number; reserved: number; refused: number }> {
  const rnd = seeded(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const limit = 2000 + Math.floor(rnd() * 8000);
  const clock = new ManualClock();
  const store = new MemoryLeases();
  const plan = pick(PLANS);
  const spawn = (): Instance => {
    const keeper = keeperOn(store, clock, TTL);
    return { keeper, counter: keeper.counter(KEY, limit, plan), open: [], state: 'up' };
  };
  const instances = [spawn(), spawn(), spawn()];
  /** What the provider may bill: settled amounts, and every reservation not settled (in flight, or its instance dead). */
  let billable = 0;
  let reserved = 0;
  let refused = 0;
  const check = (step: number, what: string) => {
    if (billable > limit) throw new Error(`seed ${seed} step ${step} (${what}): billable ${billable} > limit ${limit}`);
  };
  for (let step = 0; step < steps; step++) {
    const inst = pick(instances);
    store.failWrites = rnd() < 0.1 ? pick(['before', 'after'] as const) : undefined;
    const r = rnd();
    let what = '';
    if (inst.state === 'dead') {
      if (rnd() < 0.05) instances[instances.indexOf(inst)] = spawn(); // a new instance takes its place
      what = 'dead';
    } else if (inst.state === 'paused') {
      if (rnd() < 0.2) inst.state = 'up';
      what = 'paused';
    } else if (r < 0.45) {
      what = 'reserve';
      const n = 1 + Math.floor(rnd() * 20);
      const c = inst.counter;
      try {
        if (c.take(n, 'reserve') || (await c.acquire(n, 'reserve'))) {
          inst.open.push({ n, gen: c.gen });
          billable += n;
          reserved++;
        } else {
          refused++;
        }
      } catch { /* store unavailable: refused, nothing reserved */ }
    } else if (r < 0.75 && inst.open.length > 0) {
      what = 'settle';
      const { n, gen } = inst.open.splice(Math.floor(rnd() * inst.open.length), 1)[0]!;
      const actual = rnd() < 0.3 ? 0 : Math.floor(rnd() * (n + 1));
      billable -= n - actual;
      if (inst.counter.gen === gen) inst.counter.settle(n, actual);
    } else if (r < 0.77) {
      what = 'kill';
      inst.state = 'dead'; // its reservations stay billable at their worst case; it never retires
    } else if (r < 0.8) {
      what = 'pause';
      inst.state = 'paused';
    } else if (r < 0.92) {
      what = 'tick';
      await inst.counter.tick();
    } else {
      what = 'clock';
      clock.advance(Math.floor(rnd() * TTL * 0.6));
      if (rnd() < 0.3) await store.reclaimExpired(KEY, clock.now());
    }
    check(step, what);
  }
  store.failWrites = undefined;
  clock.advance(10 * TTL);
  const ledger = await store.leaseLedger(KEY, clock.now());
  return { billable, used: ledger.used + ledger.held, limit, reserved, refused };
}

test(`leases under kills, pauses, faults and clock jumps: never past the limit, dead holders charged in full (${STEPS} steps per seed)`, async (t) => {
  const seeds = process.env.KEYWARD_FUZZ_COUNT ? [1, 2, 3, 4, 5, 6, 7, 8] : [20261115, 7];
  for (const seed of seeds) {
    const { billable, used, limit, reserved, refused } = await run(seed, STEPS);
    t.log(`seed ${seed}: ${reserved} reservations, ${refused} refused; billable ${billable} of ${limit}, charged ${used}`);
    t.true(reserved > 50, 'the run exercised the pool');
    t.true(billable <= limit, `seed ${seed}: billable ${billable} ≤ limit ${limit}`);
    t.true(used >= billable, `seed ${seed}: the store counts at least what can be billed (${used} ≥ ${billable})`);
  }
});
