/**
 * Lease keepers for ledger unit tests: a LeaseKeeper (with its own instance id, as each instance has) over
 * a given LeaseStore and clock, with a quiet log; `leasedOut`, a pool's units out read from any store
 * without reclaiming anything (tests' manual clocks are not the wall clock); and what the lease property
 * tests share: the store faults a step may bring (`writeFault`, `storeFault`, fast-check arbitraries) and
 * `faultyWorld`, one manual clock and one in-memory store whose writes fail as the steps say.
 */
import 'reflect-metadata';
import { Writable } from 'node:stream';
import { Instance } from '../../src/accounting/instance.js';
import { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import type { Clock } from '../../src/clock.js';
import type { Config } from '../../src/settings/config.js';
import { createLogger } from '../../src/log.js';
import type { LeaseStore } from '../../src/store/ports.js';
import { ManualClock } from './clocks.js';
import { MemoryLeases } from './memory-leases.js';
import fc from 'fast-check';
import { die, dieFor, landsOn, type Weighted } from './property.js';

export const quietLog = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));

export function keeperOn(store: LeaseStore, clock: Clock, ttlMs = 300_000): LeaseKeeper {
  return new LeaseKeeper({ leaseTtlMs: ttlMs } as Config, store, clock, quietLog, new Instance());
}

/** The pool's units out under `key` (every holder's, live or gone), reclaiming nothing. */
export async function leasedOut(store: LeaseStore, key: string): Promise<number> {
  return (await store.leaseLedger(key, Number.MIN_SAFE_INTEGER)).outstanding;
}

/** A step's write fault: one write in ten fails, half before landing, half after (it lands, its answer is lost). */
const WRITE_FAULTS: Weighted<'before' | 'after' | undefined> = [[90, undefined], [5, 'before'], [5, 'after']];
export const writeFault = dieFor(WRITE_FAULTS).map((roll) => landsOn(roll, WRITE_FAULTS));

/** A step's store fault: a write fault, or (one step in fifty) the start of an outage of 10 to 69 steps. */
export type StoreFault = 'before' | 'after' | undefined | { outage: number };
const STORE_FAULTS: Weighted<'before' | 'after' | undefined | 'outage'> = [[88, undefined], [5, 'before'], [5, 'after'], [2, 'outage']];
export const storeFault: fc.Arbitrary<StoreFault> = fc.tuple(dieFor(STORE_FAULTS), die(60)).map(([roll, length]) => {
  const fault = landsOn(roll, STORE_FAULTS);
  return fault === 'outage' ? { outage: 10 + length } : fault;
});

/**
 * A world for a lease property test: one ManualClock, one MemoryLeases, and `faults(step's fault)`, called before
 * each step: during an outage every write fails before landing; else the step's own write fault, if any.
 */
export function faultyWorld() {
  const clock = new ManualClock();
  const store = new MemoryLeases();
  let outage = 0;
  const faults = (fault: StoreFault): void => {
    if (outage === 0 && typeof fault === 'object') outage = fault.outage;
    store.failWrites = outage > 0 ? (outage--, 'before') : typeof fault === 'object' ? undefined : fault;
  };
  return { clock, store, faults };
}
