/**
 * A fault-injecting store wrapper for tests: on either adapter, counting writes (usage shards, lease holder
 * writes, idempotency claims, audit counts) land and then fail as a timed-out call does (BackendUnavailable),
 * at a given rate, from a seeded generator: the caller cannot tell whether they landed.
 */
import fc from 'fast-check';
import { BackendUnavailable } from '../../src/errors.js';
import type { Store } from '../../src/store/ports.js';

/**
 * A seeded source of numbers in [0, 1): the same sequence for the same seed (fast-check's generator, unbiased, its
 * first 4,096 values over and over). Fault dice for tests that are not properties.
 */
export function seeded(seed: number): () => number {
  // Integers scaled down: fc.double spreads its values over the floats, most of them tiny, not over [0, 1).
  const values = fc.sample(fc.noBias(fc.integer({ min: 0, max: 2 ** 30 - 1 })), { seed, numRuns: 4096 });
  let next = 0;
  return () => values[next++ % values.length]! / 2 ** 30;
}

interface FaultableStore {
  kind: string;
  setWriteFaults(faults: ((what: string) => void) | undefined): void;
}

export interface WriteFaultStats {
  /** Writes that landed and were reported failed, by kind of write. */
  injected: Record<string, number>;
}

/** Makes `rate` of `store`'s counting writes land and then fail (and the next of a kind named by `failNext`); `off()` stops it. */
export function landThenFail(store: Store, rate: number, random = seeded(1)): WriteFaultStats & { failNext(what: string): void; off(): void } {
  const target = store as unknown as FaultableStore;
  const stats: WriteFaultStats = { injected: {} };
  const forced = new Set<string>();
  target.setWriteFaults((what) => {
    if (!forced.delete(what) && random() >= rate) return;
    stats.injected[what] = (stats.injected[what] ?? 0) + 1;
    throw new BackendUnavailable(`${target.kind} (test: the ${what} write landed, its answer was lost)`);
  });
  return { ...stats, failNext: (what) => void forced.add(what), off: () => target.setWriteFaults(undefined) };
}
