/**
 * Spend budgets that never overshoot, on one instance or many, without a store write per request. Money is
 * leased like the quota's units (quota-ledger.ts), in micro-dollars, each cap a counter held under a lease
 * (lease-keeper.ts, held-lease.ts); the pool never grants past the cap:
 *   `spend:tok:<token id>`                     limit: the token's `budget_usd` (lifetime)
 *   `spend:mem:<org id>:<member id>:<YYYY-MM>` limit: its member's monthly `budget_usd` (UTC month)
 *   `spend:team:<team id>:<YYYY-MM>`           limit: its team's monthly `budget_usd` (UTC month)
 *   `spend:org:<org id>:<YYYY-MM>`             limit: the org's `spend_limit_usd` (UTC month)
 * Each level is its own counter under its own lease, so what holds for one (exact across instances) holds
 * for each; a request is reserved under every level it belongs to or none.
 *
 * A request reserves its worst case under every cap or none (a SpendHold), from what is armed in memory;
 * when short, the counter arms more of what it holds or claims from the pool (at least the shortfall or
 * nothing, so a reservation is whole or refused). Claims are whole multiples of the request's need,
 * shrinking to one as the cap nears. When the pool cannot cover the shortfall, the counter hands what it
 * holds back and asks once more for the whole need: fragments held across instances are pooled by
 * whichever asks next, so a cap is reached to within one request's worst case. After the response,
 * `settle` counts what was spent and frees the rest of the reservation. If this instance dies mid-stream,
 * its reservations (armed) are charged as spent when it is reclaimed: nothing it forwarded can pass a cap.
 *
 * Promises: nothing is ever reserved past what the store armed; a refund or settlement never adds more
 * than was reserved, and never to a holder that replaced the one it was reserved from.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import type { BudgetLevel } from '../errors.js';
import type { HeldLease, LeasePlan } from './held-lease.js';
import { LeaseKeeper } from './lease-keeper.js';
import { nextPeriodStart, periodOf } from './periods.js';

/** One cap a request is reserved against. */
export interface SpendCap {
  readonly kind: BudgetLevel;
  readonly key: string;
  /** µ$ */
  readonly limit: number;
}

/** The cap that refused a reservation, and what was left under it then (µ$, as far as this instance knows: the pool's room and what it holds free). */
export interface SpendRefusal extends SpendCap {
  readonly left: number;
}

/** A request's reservation under its caps: each counter it came from and that counter's holder generation. */
export interface SpendHold {
  readonly micros: number;
  readonly parts: ReadonlyArray<{ readonly counter: HeldLease; readonly gen: number }>;
}

/** A block is at most this fraction of what is left under the cap, so instances share the tail. */
const BLOCK_FRACTION = 1 / 16;
/** A block covers at most this many requests like the one that asked. */
const MAX_BLOCK_REQUESTS = 64;
/** How long a refusal is believed before the store is asked again (others may hand amounts back). */
export const REFUSAL_RECHECK_MS = 1000;

/** What to ask the store for: whole multiples of `need`, at most a fraction of what is left. */
export function spendBlock(limit: number, leasedTotal: number, need: number): number {
  const left = Math.max(0, limit - leasedTotal);
  const requests = Math.max(1, Math.min(MAX_BLOCK_REQUESTS, Math.floor((left * BLOCK_FRACTION) / need)));
  return need * requests;
}

const SPEND_PLAN: LeasePlan = {
  claimSize: (limit, outstanding, short) => spendBlock(limit, outstanding, short),
  refusalMs: REFUSAL_RECHECK_MS,
  pool: true,
};

const isSpendKey = (key: string) => key.startsWith('spend:');
const isMonthlyKey = (key: string) => key.startsWith('spend:org:') || key.startsWith('spend:team:') || key.startsWith('spend:mem:');

/** The lease key of a token's `budget_usd`. */
export const tokenSpendKey = (tokenId: string): string => `spend:tok:${tokenId}`;

@injectable()
export class SpendLedger {
  private period = '';
  private periodEnds = 0;

  constructor(
    @inject(LeaseKeeper) private readonly keeper: LeaseKeeper,
    @inject(Symbols.LeaseStore) private readonly store: LeaseStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {}

  tokenCap(tokenId: string, budgetMicros: number): SpendCap {
    return { kind: 'token', key: tokenSpendKey(tokenId), limit: budgetMicros };
  }

  orgCap(orgId: string, limitMicros: number): SpendCap {
    return { kind: 'org', key: `spend:org:${orgId}:${this.currentPeriod()}`, limit: limitMicros };
  }

  teamCap(teamId: string, limitMicros: number): SpendCap {
    return { kind: 'team', key: `spend:team:${teamId}:${this.currentPeriod()}`, limit: limitMicros };
  }

  memberCap(orgId: string, memberId: string, limitMicros: number): SpendCap {
    return { kind: 'member', key: `spend:mem:${orgId}:${memberId}:${this.currentPeriod()}`, limit: limitMicros };
  }

  /**
   * A team's or member's budget was just set: spend of this month made before it (never leased under the
   * month's key) is charged now, as `seedOrgMonth` does for the organisation. `spentMicros`: the month's
   * recorded spend of the team's or member's tokens.
   */
  seedMonth(cap: SpendCap, spentMicros: number): Promise<number> {
    return this.seed(cap.key, spentMicros);
  }

  /**
   * An organisation's limit was just set: spend of this month made before (while no limit applied, so never
   * leased under the month's key) is charged now, so the cap counts the whole calendar month. What the key
   * already holds is subtracted (spend made under an earlier limit this month is in it already), so nothing
   * counts twice. `spentMicros`: the month's recorded spend (usage).
   */
  async seedOrgMonth(orgId: string, spentMicros: number): Promise<number> {
    return this.seed(this.orgCap(orgId, Number.MAX_SAFE_INTEGER).key, spentMicros);
  }

  private async seed(key: string, spentMicros: number): Promise<number> {
    const missing = spentMicros - (await this.store.leaseLedger(key, this.clock.now())).outstanding;
    if (missing <= 0) return 0;
    await this.store.chargeLease(key, missing);
    return missing;
  }

  /** Seconds until the monthly caps' month ends (the Retry-After of an org's, team's or member's refusal). */
  secondsToMonthEnd(): number {
    const now = this.clock.now();
    this.currentPeriod(now);
    return Math.max(1, Math.ceil((this.periodEnds - now) / 1000));
  }

  /**
   * Reserves `micros` under every cap from what is held here, or none: the hold, or undefined when a cap would
   * need the store (then `reserve` decides, waiting). The budgeted request's usual path: no promise per request.
   */
  reserveNow(caps: readonly SpendCap[], micros: number): SpendHold | undefined {
    const parts: Array<{ counter: HeldLease; gen: number }> = [];
    for (const cap of caps) {
      const counter = this.keeper.counter(cap.key, cap.limit, SPEND_PLAN);
      if (micros > 0 && !counter.take(micros, 'reserve')) {
        this.refund({ micros, parts });
        return undefined;
      }
      parts.push({ counter, gen: counter.gen });
    }
    return { micros, parts };
  }

  /** Reserves `micros` under every cap, or none: the hold, or the cap that refused and what it had left. */
  async reserve(caps: readonly SpendCap[], micros: number): Promise<SpendHold | SpendRefusal> {
    const parts: Array<{ counter: HeldLease; gen: number }> = [];
    for (const cap of caps) {
      const counter = this.keeper.counter(cap.key, cap.limit, SPEND_PLAN);
      let ok = micros <= 0 || counter.take(micros, 'reserve');
      if (!ok) {
        try {
          ok = await counter.acquire(micros, 'reserve');
        } catch (err) {
          this.refund({ micros, parts });
          throw err;
        }
      }
      if (!ok) {
        this.refund({ micros, parts });
        return { ...cap, left: Math.min(cap.limit, counter.remaining()) };
      }
      // Reserved under the holder the counter has now (one replaced while it waited reserved under the new one).
      parts.push({ counter, gen: counter.gen });
    }
    return { micros, parts };
  }

  /** Gives back a whole reservation (the request was refused later, or never forwarded). */
  refund(hold: SpendHold): void {
    if (hold.micros <= 0) return;
    for (const { counter, gen } of hold.parts) if (counter.gen === gen) counter.settle(hold.micros, 0);
  }

  /**
   * The response is over: `actual` µ$ were spent of the reservation; the rest is freed. An actual cost above the
   * reservation (it should not happen: the reservation is the worst case) is taken from what is held, then
   * claimed; what the store cannot grant is logged, never counted past the cap.
   */
  settle(hold: SpendHold, actual: number): void {
    const spent = Math.max(0, Math.round(actual));
    for (const { counter, gen } of hold.parts) {
      if (counter.gen !== gen) continue; // its holder was reclaimed: the whole reservation was charged
      counter.settle(hold.micros, Math.min(spent, hold.micros));
      const over = spent - hold.micros;
      if (over > 0) {
        counter.acquire(over, 'use').then((ok) => {
          if (!ok) this.log.warn({ key: counter.key, micros: over }, 'a response cost more than its reservation and the cap');
        }, (err) => this.log.warn({ err, key: counter.key, micros: over }, 'could not record a cost above its reservation'));
      }
    }
  }

  /** What this instance holds under `key`, free (tests). */
  heldOf(key: string): number {
    return this.keeper.peek(key)?.free ?? 0;
  }

  /** Hands every held amount back (SIGTERM), so others can still reach the caps. */
  releaseAll(): Promise<void> {
    return this.keeper.retireAll(isSpendKey);
  }

  private currentPeriod(now = this.clock.now()): string {
    if (now >= this.periodEnds || this.period === '') {
      const previous = this.period;
      this.period = periodOf(now);
      this.periodEnds = nextPeriodStart(now);
      // A new month: last month's counters (organisations', teams', members') hand what they hold back and go.
      if (previous !== '') this.keeper.retireWhere((c) => isMonthlyKey(c.key) && c.key.endsWith(`:${previous}`));
    }
    return this.period;
  }
}
