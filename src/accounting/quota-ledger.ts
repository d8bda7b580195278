/**
 * Exact quotas without a store write per request: an organisation's monthly proxy requests
 * (`quota:<org>:<YYYY-MM>`, KEYWARD_FREE_PROXY_REQUESTS) and a token's lifetime `max_requests`
 * (`token:<id>`), each a counter held under a lease (lease-keeper.ts, held-lease.ts). A request takes one
 * armed unit in memory; the counter claims blocks from the pool (never past the limit; blocks shrink as
 * the limit nears, down to one unit, so several instances reach it exactly) and arms a few seconds of
 * demand at a time. A unit handed back before its request was forwarded returns to what is held. A
 * counter idle for a while, past the bound on how many are held, of a past month, or of an expired token
 * retires, handing its unused units back; on shutdown all do. An instance that dies leaves its idle units
 * to be reclaimed within one lease TTL; what it had armed stays counted.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import { Symbols } from '../symbols.js';
import type { LeasePlan } from './held-lease.js';
import { LeaseKeeper } from './lease-keeper.js';
import { nextPeriodStart, periodOf } from './periods.js';

const MAX_BLOCK = 1000;
/** A block is at most this fraction of what is left, so a few instances share the tail fairly. */
const BLOCK_FRACTION = 1 / 16;
/** How long an empty counter is believed before the store is asked again (others may hand units back). */
const EXHAUSTED_RECHECK_MS = 2000;
/** A token counter unused this long retires (its units go back to the store for other instances). */
export { IDLE_RETIRE_MS as TOKEN_IDLE_MS } from './lease-keeper.js';
/** How often expired tokens' counters are looked for. */
const TOKEN_SWEEP_MS = 30_000;
/**
 * A refund this soon after the counter's holder changed (it was reclaimed while this instance was away) is
 * not credited: the unit may have come from the holder that is gone, whose units are settled in the store.
 */
const REFUND_AFTER_CHANGE_MS = 10_000;

/** The lease key of a token's `max_requests`. */
export const tokenRequestsKey = (tokenId: string): string => `token:${tokenId}`;

export function blockSize(limit: number, leasedTotal: number): number {
  const left = limit - leasedTotal;
  return Math.max(1, Math.min(MAX_BLOCK, Math.floor(left * BLOCK_FRACTION)));
}

const QUOTA_PLAN: LeasePlan = {
  claimSize: (limit, outstanding, short) => Math.max(short, blockSize(limit, outstanding)),
  refusalMs: EXHAUSTED_RECHECK_MS,
  pool: false,
};

@injectable()
export class QuotaLedger {
  private period = '';
  private periodEnds = 0;
  /** Token counters' tokens' expiry (ms), for the sweep. */
  private readonly tokenExpiry = new Map<string, number>();
  private lastSweep = 0;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(LeaseKeeper) private readonly keeper: LeaseKeeper,
    @inject(Symbols.Clock) private readonly clock: Clock,
  ) {}

  currentPeriod(now = this.clock.now()): string {
    if (now >= this.periodEnds || this.period === '') {
      const previous = this.period;
      this.period = periodOf(now);
      this.periodEnds = nextPeriodStart(now);
      // A new month: last month's counters hand their units back.
      if (previous !== '') this.keeper.retireWhere((c) => c.key.startsWith('quota:') && c.key.endsWith(`:${previous}`));
    }
    return this.period;
  }

  /** The lease key of an organisation's month. */
  orgKey(orgId: string, period = this.currentPeriod()): string {
    return `quota:${orgId}:${period}`;
  }

  /**
   * One request of the organisation's monthly quota; returns what is left. Throws 429 quota_exceeded. Synchronous
   * while this instance holds armed units (no promise, no microtask per request); a promise when it must write.
   */
  reserve(orgId: string): number | Promise<number> {
    const now = this.clock.now();
    const limit = this.config.freeProxyRequests;
    const c = this.keeper.counter(this.orgKey(orgId, this.currentPeriod(now)), limit, QUOTA_PLAN);
    if (c.take(1, 'use')) return c.remaining();
    return c.acquire(1, 'use').then((ok) => {
      if (!ok) throw Errors.quotaExceeded(limit, Math.max(1, Math.ceil((this.periodEnds - this.clock.now()) / 1000)));
      return c.remaining();
    });
  }

  /** One request of a token's lifetime `max_requests`. Throws 429 token_exhausted. `expiresAt`: the token's, for the sweep. */
  async reserveToken(tokenId: string, max: number, expiresAt = Infinity): Promise<void> {
    const key = tokenRequestsKey(tokenId);
    if (this.clock.now() - this.lastSweep >= TOKEN_SWEEP_MS) this.sweepTokens();
    this.tokenExpiry.set(key, expiresAt);
    const c = this.keeper.counter(key, max, QUOTA_PLAN);
    if (!c.take(1, 'use') && !(await c.acquire(1, 'use'))) throw Errors.tokenExhausted();
  }

  /** Gives back an organisation's unit reserved for a request that was never forwarded. */
  refund(orgId: string): void {
    this.unuse(this.orgKey(orgId));
  }

  /** Gives back a unit reserved for a request that was then refused (it was never forwarded). */
  refundToken(tokenId: string): void {
    this.unuse(tokenRequestsKey(tokenId));
  }

  private unuse(key: string): void {
    const c = this.keeper.peek(key);
    if (c && this.keeper.mono() - c.genChangedAt >= REFUND_AFTER_CHANGE_MS) c.unuse(1);
  }

  /** How many token counters this instance holds now. */
  get tokenCounterCount(): number {
    let n = 0;
    for (const key of this.tokenExpiry.keys()) if (this.keeper.peek(key)) n++;
    return n;
  }

  /** Retires the counters of tokens that expired (the keeper retires idle ones itself); how many. */
  sweepTokens(now = this.clock.now()): number {
    this.lastSweep = now;
    let n = 0;
    for (const [key, expiresAt] of this.tokenExpiry) {
      if (!this.keeper.peek(key)) this.tokenExpiry.delete(key);
      else if (now >= expiresAt) n += this.keeper.retireWhere((c) => c.key === key);
    }
    return n;
  }

  /** Hands every unused unit back (SIGTERM), so the limit can still be reached exactly. */
  releaseAll(): Promise<void> {
    return this.keeper.retireAll((key) => key.startsWith('quota:') || key.startsWith('token:'));
  }
}
