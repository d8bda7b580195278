/**
 * Each organisation's monthly spend cap as the proxy needs it: in memory, so a
 * proxied request reads no store at steady state. `peek` answers synchronously
 * (undefined: not known here yet); `get` loads once per org (concurrent
 * callers share the load). A change of the cap (PATCH /v1/orgs/self) is
 * announced on the change feed, which drops the entry on every instance within
 * a second; while the feed is down an entry is trusted one second at most, and
 * a minute at most in any case. A load begun before a drop is served once and
 * not kept. Bounded: the least recently used entries go first.
 */
import { inject, injectable } from 'tsyringe';
import { boundedLru } from '../lru.js';
import type { Timers } from '../clock.js';
import type { ChangeFeed, OrgStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';

const TTL_MS = 60_000;
const UNTRUSTED_MS = 1000;
const MAX_ORGS = 50_000;

interface Entry {
  limit: number | null;
  loadedAt: number;
}

@injectable()
export class OrgLimits {
  private readonly entries = boundedLru<string, Entry>(MAX_ORGS);
  private readonly loads = new Map<string, { promise: Promise<number | null>; generation: number }>();
  /** Bumped by every drop: a load that began before it is not kept. */
  private generation = 0;

  constructor(
    @inject(Symbols.OrgStore) private readonly store: OrgStore,
    @inject(Symbols.ChangeFeed) private readonly feed: ChangeFeed,
    @inject(Symbols.Timers) private readonly timers: Timers,
  ) {
    feed.watch((c) => {
      if (c.kind === 'org') this.forget(c.id);
    });
  }

  /** The cap in µ$ (null: none), or undefined when this instance does not know it (or no longer trusts it). */
  peek(orgId: string): number | null | undefined {
    const e = this.entries.get(orgId);
    if (!e) return undefined;
    const age = this.timers.elapsed() - e.loadedAt;
    if (age >= TTL_MS || (age >= UNTRUSTED_MS && !this.feed.isLive())) return undefined;
    return e.limit;
  }

  async get(orgId: string): Promise<number | null> {
    const known = this.peek(orgId);
    if (known !== undefined) return known;
    let load = this.loads.get(orgId);
    if (!load) {
      const generation = this.generation;
      const promise = this.store.getOrg(orgId).then((org) => {
        const limit = org?.spendLimitMicros ?? null;
        if (this.generation === generation) this.entries.set(orgId, { limit, loadedAt: this.timers.elapsed() });
        return limit;
      }).finally(() => {
        if (this.loads.get(orgId)?.promise === promise) this.loads.delete(orgId);
      });
      load = { promise, generation };
      this.loads.set(orgId, load);
    }
    return load.promise;
  }

  /** The org's cap changed (here, or anywhere through the feed). */
  forget(orgId: string): void {
    this.generation++;
    this.entries.delete(orgId);
    this.loads.delete(orgId);
  }
}
