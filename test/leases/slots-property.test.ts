/**
 * Property: `max_concurrent` slots (src/accounting/token-limits.ts) are never open at the provider beyond
 * the limit, whatever the interleaving, and a killed instance's slots come back. Random runs of three
 * instances (keepers over one in-memory LeaseStore, one manual clock) open and close slots; instances are
 * killed mid-flight (their connections die with them; they never retire) and replaced; store writes fail
 * before landing or land and time out, and the store goes away for a while; the clock jumps (every live
 * instance's background work then runs: renewals, and the watch that cuts its requests when a holder could
 * not be renewed in time). After every step the connections open at the provider (live instances' open
 * slots) stay within the limit; at the end, with every instance gone and the TTL past, the whole limit is
 * available again.
 *
 * fast-check (test/support/property.ts): a failure shrinks to the shortest run of steps that breaks it and
 * prints its seed and path (replay: KEYWARD_PROPERTY_SEED, KEYWARD_PROPERTY_PATH). `npm test` runs 4 runs
 * of up to 2,500 steps; `npm run test:fuzz` 16 of up to KEYWARD_FUZZ_COUNT steps.
 */
import 'reflect-metadata';
import test from 'ava';
import fc from 'fast-check';
import { TokenLimits, type LimitHold } from '../../src/accounting/token-limits.js';
import type { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import { faultyWorld, keeperOn, storeFault } from '../support/leases.js';
import { atRate, checkProperty, die, dieFor, envInt, landsOn, type Produced, type Weighted } from '../support/property.js';

const STEPS = envInt('KEYWARD_FUZZ_COUNT', 2500);
const RUNS = process.env.KEYWARD_FUZZ_COUNT ? 16 : 4;
const TTL = 10_000;
const TOKEN = 'tok_property';

interface Instance {
  keeper: LeaseKeeper;
  limits: TokenLimits;
  /** Its requests holding a slot; `open`: the connection to the provider is still open. */
  holds: Array<{ hold: LimitHold; conn: { open: boolean } }>;
  dead: boolean;
}

const ACTS: Weighted<'open' | 'close' | 'kill' | 'background' | 'clock'> = [[45, 'open'], [15, 'close'], [3, 'kill'], [17, 'background'], [20, 'clock']];

/**
 * One step: which instance acts, the store fault it meets, and what it does: open a slot; close one of its slots
 * (`which`, modulo how many); be killed; run its background work; or the clock jumps by `ms` (every live instance's
 * background work then runs, and three times in ten someone reclaims expired holders). A dead instance is replaced
 * one step in ten (`revive`), whatever else the step says. Drawn as dice (test/support/property.ts) and printed as read.
 */
const step = fc.tuple(die(3), storeFault, dieFor(ACTS), die(1000), die(1000), die(1000)).map(([who, fault, roll, x, y, w]) => {
  const kind = landsOn(roll, ACTS);
  const act = kind === 'close' ? { do: kind, which: x }
    : kind === 'clock' ? { do: kind, ms: Math.floor((x * TTL * 0.5) / 1000), reclaim: atRate(y, 0.3) }
    : { do: kind };
  return { who, fault, revive: atRate(w, 0.1), act };
});
type Step = Produced<typeof step>;

/** Unbiased: run lengths spread evenly up to STEPS (fast-check's bias towards small sizes would make many runs a few steps long). */
const scenario = fc.noBias(fc.record({
  limit: fc.integer({ min: 1, max: 12 }),
  steps: fc.array(step, { minLength: 1, maxLength: STEPS, size: 'max' }),
}));

const totals = { steps: 0, opened: 0, refused: 0, cut: 0, reachedLimit: 0 };

/** Runs the steps; throws at the first step after which more than the limit are open at the provider, or if the limit does not all come back. */
async function run({ limit, steps }: { limit: number; steps: Step[] }): Promise<void> {
  const { clock, store, faults } = faultyWorld();
  const spawn = (): Instance => {
    const keeper = keeperOn(store, clock, TTL);
    return { keeper, limits: new TokenLimits(keeper, clock, clock), holds: [], dead: false };
  };
  const instances = [spawn(), spawn(), spawn()];
  let mostOpen = 0;
  const openAtProvider = () => instances.reduce((n, i) => n + (i.dead ? 0 : i.holds.filter((h) => h.conn.open).length), 0);
  /** A live process's background work: its counters renew, then its watch cuts what it can no longer hold. */
  const background = async (inst: Instance) => {
    await inst.keeper.tick();
    inst.limits.watch();
    inst.holds = inst.holds.filter((h) => h.conn.open);
  };
  for (const [i, s] of steps.entries()) {
    const inst = instances[s.who]!;
    faults(s.fault);
    const act = s.act;
    if (inst.dead) {
      if (s.revive) instances[s.who] = spawn();
    } else if (act.do === 'open') {
      const conn = { open: true };
      try {
        const hold = await inst.limits.openSlot(TOKEN, limit, () => {
          conn.open = false;
          totals.cut++; // cut by its instance's watch: a lease it could not renew in time
        });
        inst.holds.push({ hold, conn });
        totals.opened++;
      } catch {
        totals.refused++; // concurrency_exceeded, or the store unreachable: nothing opened
      }
    } else if (act.do === 'close') {
      if (inst.holds.length > 0) {
        const { hold, conn } = inst.holds.splice(act.which % inst.holds.length, 1)[0]!;
        conn.open = false;
        inst.limits.closeSlot(hold);
      }
    } else if (act.do === 'kill') {
      inst.dead = true; // SIGKILL: its connections die with it, it never retires
      for (const h of inst.holds) h.conn.open = false;
    } else if (act.do === 'background') {
      await background(inst);
    } else if (act.do === 'clock') {
      clock.advance(act.ms);
      for (const other of instances) if (!other.dead) await background(other);
      if (act.reclaim) await store.reclaimExpired(`slots:tok:${TOKEN}`, clock.now());
    }
    const now = openAtProvider();
    mostOpen = Math.max(mostOpen, now);
    if (now > limit) throw new Error(`step ${i} (${act.do}): ${now} open at the provider > limit ${limit}`);
  }
  if (mostOpen === limit) totals.reachedLimit++;
  totals.steps += steps.length;
  // Everyone gone: after one TTL the whole limit can be had again by a new instance.
  store.failWrites = undefined;
  for (const inst of instances) inst.dead = true;
  clock.advance(2 * TTL);
  const fresh = spawn();
  let again = 0;
  for (let i = 0; i < limit; i++) {
    await fresh.limits.openSlot(TOKEN, limit, () => {}).then(() => again++, () => undefined);
  }
  if (again !== limit) throw new Error(`with every instance gone, ${again} of the limit ${limit} could be opened again`);
}

test(`max_concurrent slots under kills, write faults and clock jumps: never more open than the limit, a dead instance's slots come back (${RUNS} runs of up to ${STEPS} steps)`, async (t) => {
  if (!(await checkProperty(t, fc.asyncProperty(scenario, run), { numRuns: RUNS }))) return;
  t.log(`${totals.steps} steps: ${totals.opened} opened, ${totals.refused} refused, the limit reached in ${totals.reachedLimit} runs, ${totals.cut} cut by a lost lease`);
  t.true(totals.opened > totals.steps / 100, 'the runs exercised the slots');
  t.true(totals.reachedLimit > 0 && totals.refused > 0, 'the limit was reached');
  t.true(totals.cut > 0, 'leases were lost under live instances (and their requests cut)');
});
