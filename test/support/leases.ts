/**
 * Lease keepers for ledger unit tests: a LeaseKeeper (with its own instance id, as each instance has) over
 * a given LeaseStore and clock, with a quiet log; and `leasedOut`, a pool's units out read from any store
 * without reclaiming anything (tests' manual clocks are not the wall clock).
 */
import 'reflect-metadata';
import { Writable } from 'node:stream';
import { Instance } from '../../src/accounting/instance.js';
import { LeaseKeeper } from '../../src/accounting/lease-keeper.js';
import type { Clock } from '../../src/clock.js';
import type { Config } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import type { LeaseStore } from '../../src/store/ports.js';

export const quietLog = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));

export function keeperOn(store: LeaseStore, clock: Clock, ttlMs = 300_000): LeaseKeeper {
  return new LeaseKeeper({ leaseTtlMs: ttlMs } as Config, store, clock, quietLog, new Instance());
}

/** The pool's units out under `key` (every holder's, live or gone), reclaiming nothing. */
export async function leasedOut(store: LeaseStore, key: string): Promise<number> {
  return (await store.leaseLedger(key, Number.MIN_SAFE_INTEGER)).outstanding;
}
