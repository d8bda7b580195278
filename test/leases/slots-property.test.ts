/**
 * Property: `max_concurrent` slots (src/accounting/token-limits.ts) are never open at the provider beyond
 * the limit, whatever the interleaving, and a killed instance's slots come back. Random runs of three
 * instances (keepers over one in-memory LeaseStore, one manual clock) open and close slots; instances are
 * killed mid-flight (their connections die with them; they never retire) and replaced; store writes fail
 * before landing or land and time out, and the store goes away for a while; the clock jumps (every live instance's background work then runs:
 * renewals, and the watch that cuts its requests when a holder could not be renewed in time). After every
 * step the connections open at the provider (live instances' open slots) stay within the limit; at the end,
 * with every instance gone and the TTL past, the whole limit is available again. `npm run test:fuzz` runs
 * KEYWARD_FUZZ_COUNT steps.
 */
import 'reflect-metadata';
import test from 'ava';
import { TokenLimits, type LimitHold } from '../../src/accounting/token-limits.js';
import type { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import { faultyWorld, keeperOn } from '../support/leases.js';

const STEPS = Number(process.env.KEYWARD_FUZZ_COUNT ?? 2500);
const TTL = 10_000;
const TOKEN = 'tok_property';

interface Instance {
  keeper: LeaseKeeper;
  limits: TokenLimits;
  /** Its requests holding a slot; `open`: the connection to the provider is still open. */
  holds: Array<{ hold: LimitHold; conn: { open: boolean } }>;
  dead: boolean;
}

async function run(seed: number, steps: number) {
  const { rnd, pick, clock, store, faults } = faultyWorld(seed);
  const limit = 1 + Math.floor(rnd() * 12);
  const spawn = (): Instance => {
    const keeper = keeperOn(store, clock, TTL);
    return { keeper, limits: new TokenLimits(keeper, clock, clock), holds: [], dead: false };
  };
  const instances = [spawn(), spawn(), spawn()];
  let opened = 0;
  let refused = 0;
  let mostOpen = 0;
  /** Requests cut by their instance's watch (a lease it could not renew in time). */
  let cut = 0;
  const openAtProvider = () => instances.reduce((n, i) => n + (i.dead ? 0 : i.holds.filter((h) => h.conn.open).length), 0);
  /** A live process's background work: its counters renew, then its watch cuts what it can no longer hold. */
  const background = async (inst: Instance) => {
    await inst.keeper.tick();
    inst.limits.watch();
    inst.holds = inst.holds.filter((h) => h.conn.open);
  };
  for (let step = 0; step < steps; step++) {
    const inst = pick(instances);
    faults();
    const r = rnd();
    if (inst.dead) {
      if (rnd() < 0.1) instances[instances.indexOf(inst)] = spawn();
    } else if (r < 0.45) {
      const conn = { open: true };
      try {
        const hold = await inst.limits.openSlot(TOKEN, limit, () => {
          conn.open = false;
          cut++;
        });
        inst.holds.push({ hold, conn });
        opened++;
      } catch {
        refused++; // concurrency_exceeded, or the store unreachable: nothing opened
      }
    } else if (r < 0.6 && inst.holds.length > 0) {
      const { hold, conn } = inst.holds.splice(Math.floor(rnd() * inst.holds.length), 1)[0]!;
      conn.open = false;
      inst.limits.closeSlot(hold);
    } else if (r < 0.63) {
      inst.dead = true; // SIGKILL: its connections die with it, it never retires
      for (const h of inst.holds) h.conn.open = false;
    } else if (r < 0.8) {
      await background(inst);
    } else {
      clock.advance(Math.floor(rnd() * TTL * 0.5));
      for (const i of instances) if (!i.dead) await background(i);
      if (rnd() < 0.3) await store.reclaimExpired(`slots:tok:${TOKEN}`, clock.now());
    }
    const now = openAtProvider();
    mostOpen = Math.max(mostOpen, now);
    if (now > limit) throw new Error(`seed ${seed} step ${step}: ${now} open at the provider > limit ${limit}`);
  }
  // Everyone gone: after one TTL the whole limit can be had again by a new instance.
  store.failWrites = undefined;
  for (const i of instances) i.dead = true;
  clock.advance(2 * TTL);
  const fresh = spawn();
  let again = 0;
  for (let i = 0; i < limit; i++) {
    await fresh.limits.openSlot(TOKEN, limit, () => {}).then(() => again++, () => undefined);
  }
  return { limit, opened, refused, mostOpen, again, cut };
}

test(`max_concurrent slots under kills, write faults and clock jumps: never more open than the limit, a dead instance's slots come back (${STEPS} steps per seed)`, async (t) => {
  const seeds = process.env.KEYWARD_FUZZ_COUNT ? [1, 2, 3, 4, 5, 6, 7, 8] : [20261126, 11];
  for (const seed of seeds) {
    const { limit, opened, refused, mostOpen, again, cut } = await run(seed, STEPS);
    t.log(`seed ${seed}: limit ${limit}, ${opened} opened, ${refused} refused, at most ${mostOpen} open at once, ${cut} cut by a lost lease`);
    t.true(opened > 50, 'the run exercised the slots');
    t.true(refused > 0, 'the limit was reached');
    t.true(cut > 0, 'leases were lost under live instances (and their requests cut)');
    t.true(mostOpen <= limit);
    t.is(again, limit, 'with every instance gone, the whole limit is available again');
  }
});
