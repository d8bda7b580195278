/**
 * A fault-injecting store wrapper for tests: on either adapter, counting writes (usage shards, lease holder
 * writes, idempotency claims, audit counts) land and then fail as a timed-out call does (BackendUnavailable),
 * at a given rate, from a seeded generator: the caller cannot tell whether they landed.
 */
import { BackendUnavailable } from '../../src/errors.js';
import type { Store } from '../../src/store/ports.js';
import { seeded } from './prng.js';

export { seeded } from './prng.js';

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
