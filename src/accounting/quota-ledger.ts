/**
 * Exact quotas without a store write per request. The ledger leases blocks of
 * units from the LeaseStore (which never grants past the limit) and serves
 * requests from what it holds in memory. Blocks shrink as the limit nears, down
 * to one unit, so several instances reach the limit exactly; on shutdown every
 * unused unit is handed back. One lease at a time per counter: concurrent
 * callers wait for it instead of racing the store. A token's `max_requests`
 * counter is evicted once the token expired or sat idle, and past a bound on
 * how many are held, its unused units handed back, so memory stays bounded and
 * the count exact.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { nextPeriodStart, periodOf } from './periods.js';

interface Counter {
  key: string;
  limit: number;
  /** Units leased to this instance and not yet used. */
  held: number;
  /** Units leased by all instances, as of our last lease. */
  leasedTotal: number;
  leasing: Promise<void> | undefined;
  /** After a refused lease, don't ask the store again before this time. */
  exhaustedUntil: number;
  /** Token counters: when a request last took a unit, and when the token expires. */
  lastUsed: number;
  expiresAt: number;
}

const MAX_BLOCK = 1000;
/** A block is at most this fraction of what is left, so a few instances share the tail fairly. */
const BLOCK_FRACTION = 1 / 16;
/** How long an empty counter is believed before the store is asked again (others may hand units back). */
const EXHAUSTED_RECHECK_MS = 2000;
/** A token counter unused this long is evicted (its units go back to the store for other instances). */
export const TOKEN_IDLE_MS = 5 * 60_000;
/** Token counters held at most (as many as the token cache holds tokens); the least recently used go first. */
export const TOKEN_COUNTERS_MAX = 50_000;
/** How often idle and expired token counters are looked for. */
const TOKEN_SWEEP_MS = 30_000;

export function blockSize(limit: number, leasedTotal: number): number {
  const left = limit - leasedTotal;
  return Math.max(1, Math.min(MAX_BLOCK, Math.floor(left * BLOCK_FRACTION)));
}

@injectable()
export class QuotaLedger {
  private readonly counters = new Map<string, Counter>();
  /** Token counters (`token:<id>`), least recently used first. */
  private readonly tokenCounters = new Map<string, Counter>();
  /** At most this many token counters are held (tests lower it). */
  tokenCountersMax = TOKEN_COUNTERS_MAX;
  private lastSweep = 0;
  private sweeper: NodeJS.Timeout | undefined;
  private period = '';
  private periodEnds = 0;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.LeaseStore) private readonly store: LeaseStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {}

  currentPeriod(now = this.clock.now()): string {
    if (now >= this.periodEnds || this.period === '') {
      this.period = periodOf(now);
      this.periodEnds = nextPeriodStart(now);
    }
    return this.period;
  }

  /**
   * One request of the organisation's monthly quota; returns what is left. Throws 429 quota_exceeded. Synchronous
   * while this instance holds units (no promise, no microtask per request); a promise when it must lease.
   */
  reserve(orgId: string): number | Promise<number> {
    const now = this.clock.now();
    const key = `quota:${orgId}:${this.currentPeriod(now)}`;
    const limit = this.config.freeProxyRequests;
    let c = this.counters.get(key);
    if (!c) {
      c = this.newCounter(key, limit);
      this.counters.set(key, c);
      this.dropOldPeriods();
    }
    if (c.held > 0) {
      c.held--;
      return Math.max(0, limit - c.leasedTotal + c.held);
    }
    return this.reserveLeasing(c, limit, now);
  }

  private async reserveLeasing(c: Counter, limit: number, now: number): Promise<number> {
    const ok = await this.take(c, now);
    if (!ok) throw Errors.quotaExceeded(limit, Math.max(1, Math.ceil((this.periodEnds - now) / 1000)));
    return Math.max(0, limit - c.leasedTotal + c.held);
  }

  /** One request of a token's lifetime `max_requests`. Throws 429 token_exhausted. `expiresAt`: the token's, for eviction. */
  async reserveToken(tokenId: string, max: number, expiresAt = Infinity): Promise<void> {
    const now = this.clock.now();
    const key = `token:${tokenId}`;
    let c = this.tokenCounters.get(key);
    if (c) {
      // Least recently used first: a counter in use moves to the end.
      this.tokenCounters.delete(key);
    } else {
      c = this.newCounter(key, max);
      c.expiresAt = expiresAt;
    }
    this.tokenCounters.set(key, c);
    c.lastUsed = now;
    if (now - this.lastSweep >= TOKEN_SWEEP_MS) this.sweepTokens(now);
    else if (this.tokenCounters.size > this.tokenCountersMax) this.evictOverBound();
    this.startSweeper();
    const ok = await this.take(c, now);
    // Evicted while it waited on a lease (its token expired meanwhile): what that lease left goes back too.
    if (c.held > 0 && this.tokenCounters.get(key) !== c) void this.handBack(c);
    if (!ok) throw Errors.tokenExhausted();
  }

  /** Gives back an organisation's unit reserved for a request that was never forwarded. */
  refund(orgId: string): void {
    const c = this.counters.get(`quota:${orgId}:${this.currentPeriod()}`);
    if (c) c.held++;
  }

  /** Gives back a unit reserved for a request that was then refused (it was never forwarded). */
  refundToken(tokenId: string): void {
    const key = `token:${tokenId}`;
    const c = this.tokenCounters.get(key);
    if (c) {
      c.held++;
      return;
    }
    // Evicted meanwhile (its token just expired): the unit goes straight back to the store.
    this.store.release(key, 1).catch((err) => this.log.warn({ err, key, units: 1 }, 'could not hand a refunded unit back'));
  }

  private newCounter(key: string, limit: number): Counter {
    return { key, limit, held: 0, leasedTotal: 0, leasing: undefined, exhaustedUntil: 0, lastUsed: 0, expiresAt: Infinity };
  }

  private async take(c: Counter, now: number): Promise<boolean> {
    for (;;) {
      if (c.held > 0) {
        c.held--;
        return true;
      }
      if (now < c.exhaustedUntil) return false;
      if (!c.leasing) {
        const counter = c;
        counter.leasing = this.lease(counter).finally(() => (counter.leasing = undefined));
      }
      await c.leasing;
      if (c.held === 0 && this.clock.now() < c.exhaustedUntil) return false;
    }
  }

  private async lease(c: Counter): Promise<void> {
    const want = blockSize(c.limit, c.leasedTotal);
    const { granted, leased } = await this.store.lease(c.key, c.limit, want);
    c.leasedTotal = leased;
    if (granted === 0) {
      c.exhaustedUntil = this.clock.now() + EXHAUSTED_RECHECK_MS;
      return;
    }
    c.held += granted;
  }

  private dropOldPeriods(): void {
    const current = `:${this.currentPeriod()}`;
    for (const [key, c] of this.counters) {
      if (key.startsWith('quota:') && !key.endsWith(current) && c.held === 0 && !c.leasing) this.counters.delete(key);
    }
  }

  /** How many token counters this instance holds now. */
  get tokenCounterCount(): number {
    return this.tokenCounters.size;
  }

  /**
   * Evicts token counters whose token expired or that sat idle for TOKEN_IDLE_MS, then the least
   * recently used while more than `tokenCountersMax` are held; each hands its unused units back.
   * A counter waiting on a lease stays (its callers hold it). Returns how many were evicted.
   */
  sweepTokens(now = this.clock.now()): number {
    this.lastSweep = now;
    const evicted: Counter[] = [];
    for (const c of this.tokenCounters.values()) {
      if (!c.leasing && (now >= c.expiresAt || now - c.lastUsed >= TOKEN_IDLE_MS)) evicted.push(c);
    }
    for (const c of evicted) this.evict(c);
    const n = evicted.length + this.evictOverBound();
    if (this.tokenCounters.size === 0) this.stopSweeper();
    return n;
  }

  /** The least recently used first, until the bound holds: O(1) per eviction, run on the request path. */
  private evictOverBound(): number {
    let n = 0;
    for (const c of this.tokenCounters.values()) {
      if (this.tokenCounters.size <= this.tokenCountersMax) break;
      if (c.leasing) continue;
      this.evict(c);
      n++;
    }
    return n;
  }

  private evict(c: Counter): void {
    this.tokenCounters.delete(c.key);
    if (c.held > 0) void this.handBack(c);
  }

  /** Returns an evicted counter's unused units to the store; if the store refuses, they stay usable here. */
  private async handBack(c: Counter): Promise<void> {
    const units = c.held;
    c.held = 0;
    try {
      await this.store.release(c.key, units);
    } catch (err) {
      this.log.warn({ err, key: c.key, units }, 'could not hand an evicted token counter back; keeping its units');
      const current = this.tokenCounters.get(c.key);
      if (current) current.held += units;
      else this.tokenCounters.set(c.key, { ...c, held: units, leasing: undefined });
    }
  }

  /** Without traffic nothing else would evict: a timer sweeps while token counters are held (never keeping the process alive). */
  private startSweeper(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweepTokens(), TOKEN_SWEEP_MS);
    this.sweeper.unref();
  }

  private stopSweeper(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Hands every unused unit back (SIGTERM), so the limit can still be reached exactly. */
  async releaseAll(): Promise<void> {
    this.stopSweeper();
    const returns = [...this.counters.values(), ...this.tokenCounters.values()].filter((c) => c.held > 0);
    await Promise.all(returns.map(async (c) => {
      const units = c.held;
      c.held = 0;
      try {
        await this.store.release(c.key, units);
      } catch (err) {
        this.log.warn({ err, key: c.key, units }, 'could not hand leased quota back');
      }
    }));
  }
}
