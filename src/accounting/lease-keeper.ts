/**
 * Every counter this instance holds under a lease (held-lease.ts), whichever limit it serves: their holder
 * ids (this instance's id and a count), the lease TTL (KEYWARD_LEASE_TTL) and the margin a holder keeps
 * from it, and the background work: about once a second each counter renews (a third of the TTL after its
 * last write at the latest), records its use and settles unknown outcomes; a counter idle for
 * IDLE_RETIRE_MS, or past the bound on how many are held, retires (its idle units back to the pool). On
 * shutdown every counter retires. This is the work Cloud Run's CPU throttling would starve between
 * requests: a holder that cannot renew stops using what it holds (docs/operate/cloud-run.md, "Operating costs and settings", names the setting).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import type { Logger } from '../log.js';
import { isRollingPool, type LeaseStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { HeldLease, type LeaseHost, type LeasePlan } from './held-lease.js';
import { Instance } from './instance.js';

/** A counter nobody took from this long retires (its idle units go back for other instances). */
export const IDLE_RETIRE_MS = 5 * 60_000;
/** Counters held at most; past it the least recently used idle ones retire. */
export const COUNTERS_MAX = 100_000;
/** How often the background work runs (at most; a short TTL makes it more often). */
const TICK_MS = 1000;

@injectable()
export class LeaseKeeper implements LeaseHost {
  /** This instance's id (instance.ts): the prefix of its holders' ids. */
  readonly instance: string;
  readonly ttlMs: number;
  readonly marginMs: number;
  /** Counters by key; each one's `lastUse` says how recently it was asked for. */
  private readonly counters = new Map<string, HeldLease>();
  /** Uses of counters so far (the clock of `lastUse`). */
  private uses = 0;
  /** Tests lower it. */
  countersMax = COUNTERS_MAX;
  private holders = 0;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private closed = false;

  constructor(
    @inject(Symbols.Config) config: Config,
    @inject(Symbols.LeaseStore) readonly store: LeaseStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Instance) instance: Instance,
  ) {
    this.instance = instance.id;
    this.ttlMs = config.leaseTtlMs;
    // The holder stops a tenth of the TTL early: clocks of instances differ, and a write takes time to land.
    this.marginMs = Math.max(50, Math.floor(this.ttlMs / 10));
  }

  now(): number {
    return this.clock.now();
  }

  mono(): number {
    return this.clock.monotonic ? this.clock.monotonic() : this.clock.now();
  }

  newHolder(): string {
    return `${this.instance}.${++this.holders}`;
  }

  /** The counter for `key` (made when new), as the most recently used; its limit set to `limit`. */
  counter(key: string, limit: number, plan: LeasePlan): HeldLease {
    let c = this.counters.get(key);
    if (!c) {
      this.evictOverBound();
      c = new HeldLease(key, limit, plan, this);
      this.counters.set(key, c);
    }
    // A number, not a move to the end of the map: a delete and set per request cost more than the rest of the lookup.
    c.lastUse = ++this.uses;
    c.setLimit(limit);
    this.start();
    return c;
  }

  /** The counter for `key` if held, without making it the most recent. */
  peek(key: string): HeldLease | undefined {
    return this.counters.get(key);
  }

  /** How many counters are held now. */
  get size(): number {
    return this.counters.size;
  }

  /** Retires the counter for `key` (its idle units back to the pool) and forgets it. */
  retire(key: string): Promise<void> {
    const c = this.counters.get(key);
    if (!c) return Promise.resolve();
    this.counters.delete(key);
    return c.retire().catch((err) => this.log.warn({ err, key }, 'could not retire a lease holder; it expires on its own'));
  }

  /** Retires every counter `drop` picks (a past month's, an expired token's). */
  retireWhere(drop: (c: HeldLease) => boolean): number {
    const gone = [...this.counters.values()].filter((c) => c.idle && drop(c));
    for (const c of gone) void this.retire(c.key);
    return gone.length;
  }

  /** One round of the background work; tests call it with their own clock. */
  tick(): Promise<void> {
    return (this.ticking ??= (async () => {
      try {
        const now = this.mono();
        const counters = [...this.counters.values()];
        await Promise.all(counters.map((c) => (c.idle && now - c.lastTake >= IDLE_RETIRE_MS ? this.retire(c.key) : c.tick())));
      } finally {
        this.ticking = undefined;
      }
    })());
  }

  /** Retires every counter whose key `match` picks (all by default), waiting for each. */
  async retireAll(match: (key: string) => boolean = () => true): Promise<void> {
    await Promise.all([...this.counters.keys()].filter(match).map((key) => this.retire(key)));
  }

  /**
   * Shutdown: the background work stops and every counter retires (the store keeps what each used; idle units
   * go back), but a rolling pool's with uses still in its window: retiring gives a rolling holder's units back
   * whole, so it is left to expire, and the store reclaims it a window later (lease-port.ts reclaimCutoff).
   */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.retireAll((key) => !(isRollingPool(key) && (this.counters.get(key)?.reserved ?? 0) > 0));
  }

  private start(): void {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.tick(), Math.min(TICK_MS, Math.max(20, Math.floor(this.ttlMs / 6))));
    this.timer.unref();
  }

  /**
   * Past the bound, the least recently used idle counters retire: a hundredth of the bound at a time (one at a
   * small bound), so that each new counter at the bound does not sort them all again.
   */
  private evictOverBound(): void {
    if (this.counters.size < this.countersMax) return;
    const below = this.countersMax - Math.max(1, Math.floor(this.countersMax / 100)) + 1;
    const idle = [...this.counters.values()].filter((c) => c.idle).sort((x, y) => x.lastUse - y.lastUse);
    for (const c of idle) {
      if (this.counters.size < below) break;
      void this.retire(c.key);
    }
  }
}
