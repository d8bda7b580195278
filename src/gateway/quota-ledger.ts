/**
 * Exact quotas without a store write per request. The ledger leases blocks of
 * units from the LeaseStore (which never grants past the limit) and serves
 * requests from what it holds in memory. Blocks shrink as the limit nears, down
 * to one unit, so several instances reach the limit exactly; on shutdown every
 * unused unit is handed back. One lease at a time per counter: concurrent
 * callers wait for it instead of racing the store.
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
}

const MAX_BLOCK = 1000;
/** A block is at most this fraction of what is left, so a few instances share the tail fairly. */
const BLOCK_FRACTION = 1 / 16;
/** How long an empty counter is believed before the store is asked again (others may hand units back). */
const EXHAUSTED_RECHECK_MS = 2000;

export function blockSize(limit: number, leasedTotal: number): number {
  const left = limit - leasedTotal;
  return Math.max(1, Math.min(MAX_BLOCK, Math.floor(left * BLOCK_FRACTION)));
}

@injectable()
export class QuotaLedger {
  private readonly counters = new Map<string, Counter>();
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

  /** One request of the organisation's monthly quota; returns what is left. Throws 429 quota_exceeded. */
  async reserve(orgId: string): Promise<number> {
    const now = this.clock.now();
    const key = `quota:${orgId}:${this.currentPeriod(now)}`;
    const limit = this.config.freeProxyRequests;
    const ok = await this.take(key, limit, now);
    if (!ok) throw Errors.quotaExceeded(limit, Math.max(1, Math.ceil((this.periodEnds - now) / 1000)));
    const c = this.counters.get(key)!;
    return Math.max(0, limit - c.leasedTotal + c.held);
  }

  /** One request of a token's lifetime `max_requests`. Throws 429 token_exhausted. */
  async reserveToken(tokenId: string, max: number): Promise<void> {
    if (!(await this.take(`token:${tokenId}`, max, this.clock.now()))) throw Errors.tokenExhausted();
  }

  /** Gives back an organisation's unit reserved for a request that was never forwarded. */
  refund(orgId: string): void {
    const c = this.counters.get(`quota:${orgId}:${this.currentPeriod()}`);
    if (c) c.held++;
  }

  /** Gives back a unit reserved for a request that was then refused (it was never forwarded). */
  refundToken(tokenId: string): void {
    const c = this.counters.get(`token:${tokenId}`);
    if (c) c.held++;
  }

  private async take(key: string, limit: number, now: number): Promise<boolean> {
    let c = this.counters.get(key);
    if (!c) {
      c = { key, limit, held: 0, leasedTotal: 0, leasing: undefined, exhaustedUntil: 0 };
      this.counters.set(key, c);
      this.dropOldPeriods();
    }
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

  /** Hands every unused unit back (SIGTERM), so the limit can still be reached exactly. */
  async releaseAll(): Promise<void> {
    const returns = [...this.counters.values()].filter((c) => c.held > 0);
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
