/**
 * Lease keepers for ledger unit tests: a LeaseKeeper (with its own instance id, as each instance has) over
 * a given LeaseStore and clock, with a quiet log; `leasedOut`, a pool's units out read from any store
 * without reclaiming anything (tests' manual clocks are not the wall clock); and `faultyWorld`, what the
 * token-limit property tests share: a seeded random source, one manual clock, one in-memory store whose
 * writes fail on a schedule.
 */
import 'reflect-metadata';
import { Writable } from 'node:stream';
import { Instance } from '../../src/accounting/instance.js';
import { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import type { Clock } from '../../src/clock.js';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { LeaseStore } from '../../src/store/ports.js';
import { ManualClock } from './clocks.js';
import { MemoryLeases } from './memory-leases.js';
import { seeded } from './prng.js';

export const quietLog = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));

export function keeperOn(store: LeaseStore, clock: Clock, ttlMs = 300_000): LeaseKeeper {
  return new LeaseKeeper({ leaseTtlMs: ttlMs } as Config, store, clock, quietLog, new Instance());
}

/** The pool's units out under `key` (every holder's, live or gone), reclaiming nothing. */
export async function leasedOut(store: LeaseStore, key: string): Promise<number> {
  return (await store.leaseLedger(key, Number.MIN_SAFE_INTEGER)).outstanding;
}

/**
 * A seeded world for a lease property test: `rnd` and `pick` from `seed`, one ManualClock, one MemoryLeases,
 * and `faults()`, called before each step: now and then a store outage (every write fails before landing for
 * 10 to 70 steps), else one write in ten fails before or after landing.
 */
export function faultyWorld(seed: number) {
  const rnd = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const clock = new ManualClock();
  const store = new MemoryLeases();
  let outage = 0;
  const faults = (): void => {
    if (outage === 0 && rnd() < 0.02) outage = 10 + Math.floor(rnd() * 60);
    store.failWrites = outage > 0 ? (outage--, 'before') : rnd() < 0.1 ? pick(['before', 'after'] as const) : undefined;
  };
  return { rnd, pick, clock, store, faults };
}
