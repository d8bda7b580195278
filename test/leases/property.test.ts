/**
 * Property: whatever the interleaving, a pool is never consumed past its limit, counting what a dead
 * instance may have forwarded as spent in full. Random runs of several instances (keepers over one
 * in-memory LeaseStore, one manual clock) reserve, settle, refund and use units; instances are killed
 * mid-flight (never retiring), paused past their lease and resumed; writes fail before landing or land
 * and time out; the clock jumps. After every step the provider-billable total (settled amounts, plus
 * every reservation in flight or orphaned at its worst case) stays within the limit; at the end the
 * store's used is never below what was billed.
 *
 * fast-check (test/support/property.ts): a failure shrinks to the shortest run of steps that breaks it and
 * prints its seed and path (replay: KEYWARD_PROPERTY_SEED, KEYWARD_PROPERTY_PATH). `npm test` runs 4 runs
 * of up to 3,000 steps; `npm run test:fuzz` 16 of up to KEYWARD_FUZZ_COUNT steps.
 */
import 'reflect-metadata';
import test from 'ava';
import fc from 'fast-check';
import type { HeldLease, LeasePlan } from '../../src/accounting/held-lease.js';
import type { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import { ManualClock } from '../support/clocks.js';
import { MemoryLeases } from '../support/memory-leases.js';
import { keeperOn, writeFault } from '../support/leases.js';
import { atRate, checkProperty, die, dieFor, envInt, landsOn, type Produced, type Weighted } from '../support/property.js';

const STEPS = envInt('KEYWARD_FUZZ_COUNT', 3000);
const RUNS = process.env.KEYWARD_FUZZ_COUNT ? 16 : 4;
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

const ACTS: Weighted<'reserve' | 'settle' | 'kill' | 'pause' | 'tick' | 'clock'> = [[45, 'reserve'], [30, 'settle'], [2, 'kill'], [3, 'pause'], [12, 'tick'], [8, 'clock']];

/**
 * One step: which instance acts, the write fault it meets, and what it does: reserve `n` units; settle one of its
 * reservations (`which`, modulo how many) for nothing (three times in ten) or `part` per cent of it; be killed, be
 * paused, tick; or the clock jumps by `ms` (and someone reclaims expired holders three times in ten). A dead
 * instance is replaced one step in twenty (`revive`), a paused one resumes one step in five (`resume`), whatever
 * else the step says. Drawn as dice (test/support/property.ts) and printed as read.
 */
const step = fc.tuple(die(3), writeFault, dieFor(ACTS), die(1000), die(1000), die(1000), die(1000)).map(([who, fault, roll, x, y, z, w]) => {
  const kind = landsOn(roll, ACTS);
  const act = kind === 'reserve' ? { do: kind, n: 1 + (x % 20) }
    : kind === 'settle' ? { do: kind, which: x, none: atRate(y, 0.3), part: z % 101 }
    : kind === 'clock' ? { do: kind, ms: Math.floor((x * TTL * 0.6) / 1000), reclaim: atRate(y, 0.3) }
    : { do: kind };
  return { who, fault, revive: atRate(w, 0.05), resume: atRate(w, 0.2), act };
});
type Step = Produced<typeof step>;

/** Unbiased: run lengths spread evenly up to STEPS (fast-check's bias towards small sizes would make many runs a few steps long). */
const scenario = fc.noBias(fc.record({
  limit: fc.integer({ min: 200, max: 4999 }),
  plan: fc.constantFrom(...PLANS.keys()),
  steps: fc.array(step, { minLength: 1, maxLength: STEPS, size: 'max' }),
}));

const totals = { reserved: 0, refused: 0, billable: 0, steps: 0, limitReached: 0 };

/** Runs the steps; throws at the first step after which more can be billed than the limit, or if the store counts less than was billed. */
async function run({ limit, plan, steps }: { limit: number; plan: number; steps: Step[] }): Promise<void> {
  const clock = new ManualClock();
  const store = new MemoryLeases();
  const spawn = (): Instance => {
    const keeper = keeperOn(store, clock, TTL);
    return { keeper, counter: keeper.counter(KEY, limit, PLANS[plan]!), open: [], state: 'up' };
  };
  const instances = [spawn(), spawn(), spawn()];
  /** What the provider may bill: settled amounts, and every reservation not settled (in flight, or its instance dead). */
  let billable = 0;
  const refusedBefore = totals.refused;
  for (const [i, s] of steps.entries()) {
    const inst = instances[s.who]!;
    store.failWrites = s.fault;
    const act = s.act;
    if (inst.state === 'dead') {
      if (s.revive) instances[s.who] = spawn(); // a new instance takes its place
    } else if (inst.state === 'paused') {
      if (s.resume) inst.state = 'up';
    } else if (act.do === 'reserve') {
      const c = inst.counter;
      try {
        if (c.take(act.n, 'reserve') || (await c.acquire(act.n, 'reserve'))) {
          inst.open.push({ n: act.n, gen: c.gen });
          billable += act.n;
          totals.reserved++;
        } else {
          totals.refused++;
        }
      } catch { /* store unavailable: refused, nothing reserved */ }
    } else if (act.do === 'settle') {
      if (inst.open.length > 0) {
        const { n, gen } = inst.open.splice(act.which % inst.open.length, 1)[0]!;
        const actual = act.none ? 0 : Math.floor((act.part * n) / 100);
        billable -= n - actual;
        if (inst.counter.gen === gen) inst.counter.settle(n, actual);
      }
    } else if (act.do === 'kill') {
      inst.state = 'dead'; // its reservations stay billable at their worst case; it never retires
    } else if (act.do === 'pause') {
      inst.state = 'paused';
    } else if (act.do === 'tick') {
      await inst.counter.tick();
    } else if (act.do === 'clock') {
      clock.advance(act.ms);
      if (act.reclaim) await store.reclaimExpired(KEY, clock.now());
    }
    if (billable > limit) throw new Error(`step ${i} (${act.do}): billable ${billable} > limit ${limit}`);
  }
  store.failWrites = undefined;
  clock.advance(10 * TTL);
  const ledger = await store.leaseLedger(KEY, clock.now());
  const used = ledger.used + ledger.held;
  if (used < billable) throw new Error(`the store counts less than can be billed: ${used} < ${billable}`);
  totals.billable += billable;
  totals.steps += steps.length;
  if (totals.refused > refusedBefore) totals.limitReached++;
}

test(`leases under kills, pauses, faults and clock jumps: never past the limit, dead holders charged in full (${RUNS} runs of up to ${STEPS} steps)`, async (t) => {
  if (!(await checkProperty(t, fc.asyncProperty(scenario, run), { numRuns: RUNS }))) return;
  t.log(`${totals.steps} steps: ${totals.reserved} reservations, ${totals.refused} refused (the limit reached in ${totals.limitReached} runs); billable ${totals.billable} in all`);
  t.true(totals.reserved > totals.steps / 100, 'the runs exercised the pool');
});
