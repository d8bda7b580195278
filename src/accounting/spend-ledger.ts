/**
 * Spend budgets that never overshoot, on one instance or many, without a store
 * write per request. Money is leased like the quota's units (quota-ledger.ts),
 * in micro-dollars, from the LeaseStore, which never grants past a cap:
 *   `spend:tok:<token id>`           limit: the token's `budget_usd` (lifetime)
 *   `spend:org:<org id>:<YYYY-MM>`   limit: the org's `spend_limit_usd` (UTC month)
 *
 * A request reserves its worst case from what this instance holds, leasing
 * more when short (`leaseAtLeast`: at least the shortfall or nothing, so a
 * reservation is whole or refused). Blocks are whole multiples of the request's
 * need, shrinking to one as the cap nears, so instances hold few fragments.
 * When the store cannot cover the shortfall, the instance hands everything it
 * holds back and asks once more for the whole need: fragments held across
 * instances are pooled by whichever asks next, so a cap is reached to within
 * one request's worst case. After the response, `settle` puts the reservation
 * minus the actual cost back into what this instance holds; so, always,
 * leased (store) = spent + reserved + held. Shutdown hands held amounts back.
 *
 * Promises: nothing is ever reserved past what the store granted; a refund or
 * settlement never adds more than was reserved; one lease at a time per
 * counter (concurrent requests queue behind it, they do not race the store).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { nextPeriodStart, periodOf } from './periods.js';

/** One cap a request is reserved against. */
export interface SpendCap {
  readonly kind: 'token' | 'org';
  readonly key: string;
  /** µ$ */
  readonly limit: number;
}

interface Counter {
  key: string;
  limit: number;
  /** µ$ leased to this instance and not reserved by a request. */
  held: number;
  /** µ$ leased by all instances, as of this instance's last lease. */
  leasedTotal: number;
  /** The slow path (leasing) runs one at a time per counter. */
  queue: Promise<unknown>;
  /** After a refusal: needs of at least `refusedNeed` are refused without the store until this time. */
  refusedUntil: number;
  refusedNeed: number;
  /** Requests on the slow path now: a counter with any is never evicted (their leases land in it). */
  pending: number;
}

/** A block is at most this fraction of what is left under the cap, so instances share the tail. */
const BLOCK_FRACTION = 1 / 16;
/** A block covers at most this many requests like the one that asked. */
const MAX_BLOCK_REQUESTS = 64;
/** How long a refusal is believed before the store is asked again (others may hand amounts back). */
export const REFUSAL_RECHECK_MS = 1000;
/** Counters held at most; the least recently used idle ones hand their amounts back first. */
export const SPEND_COUNTERS_MAX = 50_000;

/** What to ask the store for: whole multiples of `need`, at most a fraction of what is left. */
export function spendBlock(limit: number, leasedTotal: number, need: number): number {
  const left = Math.max(0, limit - leasedTotal);
  const requests = Math.max(1, Math.min(MAX_BLOCK_REQUESTS, Math.floor((left * BLOCK_FRACTION) / need)));
  return need * requests;
}

@injectable()
export class SpendLedger {
  /** Counters by key, least recently used first. */
  private readonly counters = new Map<string, Counter>();
  private period = '';
  private periodEnds = 0;
  /** Tests lower it. */
  countersMax = SPEND_COUNTERS_MAX;

  constructor(
    @inject(Symbols.LeaseStore) private readonly store: LeaseStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {}

  tokenCap(tokenId: string, budgetMicros: number): SpendCap {
    return { kind: 'token', key: `spend:tok:${tokenId}`, limit: budgetMicros };
  }

  orgCap(orgId: string, limitMicros: number): SpendCap {
    return { kind: 'org', key: `spend:org:${orgId}:${this.currentPeriod()}`, limit: limitMicros };
  }

  /**
   * An organisation's limit was just set: spend of this month made before (while no limit applied, so never
   * leased under the month's key) is leased now, so the cap counts the whole calendar month. What the key
   * already holds is subtracted (spend made under an earlier limit this month is in it already), so nothing
   * counts twice. `spentMicros`: the month's recorded spend (usage).
   */
  async seedOrgMonth(orgId: string, spentMicros: number): Promise<number> {
    const { key } = this.orgCap(orgId, Number.MAX_SAFE_INTEGER);
    const missing = spentMicros - (await this.store.leased(key));
    if (missing <= 0) return 0;
    const { granted } = await this.store.lease(key, Number.MAX_SAFE_INTEGER, missing);
    return granted;
  }

  /** Seconds until the org caps' month ends (the Retry-After of an org's refusal). */
  secondsToMonthEnd(): number {
    const now = this.clock.now();
    this.currentPeriod(now);
    return Math.max(1, Math.ceil((this.periodEnds - now) / 1000));
  }

  /** Reserves `micros` under every cap, or none: returns the cap that refused, undefined when reserved. */
  async reserve(caps: readonly SpendCap[], micros: number): Promise<SpendCap | undefined> {
    for (let i = 0; i < caps.length; i++) {
      if (!(await this.take(caps[i]!, micros))) {
        for (let j = 0; j < i; j++) this.refund(caps[j]!, micros);
        return caps[i];
      }
    }
    return undefined;
  }

  /** Gives back a whole reservation (the request was refused later, or never forwarded). */
  refundAll(caps: readonly SpendCap[], micros: number): void {
    for (const cap of caps) this.refund(cap, micros);
  }

  /**
   * The response is over: `actual` µ$ were spent of the `reserved`. The rest goes back to what this instance
   * holds. An actual cost above the reservation (it should not happen: the reservation is the worst case) is
   * taken from what is held, then leased; what the store cannot grant is logged, never counted past the cap.
   */
  settle(caps: readonly SpendCap[], reserved: number, actual: number): void {
    const spent = Math.max(0, Math.round(actual));
    for (const cap of caps) {
      if (spent <= reserved) this.refund(cap, reserved - spent);
      else this.charge(cap, spent - reserved);
    }
  }

  /** What this instance holds under `key` (tests). */
  heldOf(key: string): number {
    return this.counters.get(key)?.held ?? 0;
  }

  /** Hands every held amount back (SIGTERM), so others can still reach the caps. */
  async releaseAll(): Promise<void> {
    await Promise.all([...this.counters.values()].filter((c) => c.held > 0).map((c) => this.handBack(c)));
  }

  private currentPeriod(now = this.clock.now()): string {
    if (now >= this.periodEnds || this.period === '') {
      const previous = this.period;
      this.period = periodOf(now);
      this.periodEnds = nextPeriodStart(now);
      if (previous !== '') this.dropOldMonths();
    }
    return this.period;
  }

  /** A new month: last month's org counters hand what they hold back and go. */
  private dropOldMonths(): void {
    const month = `:${this.period}`;
    for (const c of [...this.counters.values()]) {
      if (c.key.startsWith('spend:org:') && !c.key.endsWith(month) && c.pending === 0) this.evict(c);
    }
  }

  private evict(c: Counter): void {
    this.counters.delete(c.key);
    if (c.held > 0) void this.handBack(c);
  }

  private counter(cap: SpendCap): Counter {
    let c = this.counters.get(cap.key);
    if (c) {
      this.counters.delete(cap.key); // least recently used first: a counter in use moves to the end
    } else {
      c = { key: cap.key, limit: cap.limit, held: 0, leasedTotal: 0, queue: Promise.resolve(), refusedUntil: 0, refusedNeed: Infinity, pending: 0 };
      this.evictOverBound();
    }
    this.counters.set(cap.key, c);
    if (cap.limit !== c.limit) {
      // The org changed its cap: a lower one takes effect for what is held here too.
      if (cap.limit < c.limit && c.held > 0) void this.handBack(c);
      c.limit = cap.limit;
      c.refusedUntil = 0;
    }
    return c;
  }

  private async take(cap: SpendCap, need: number): Promise<boolean> {
    if (need <= 0) return true;
    const c = this.counter(cap);
    if (c.held >= need) {
      c.held -= need;
      return true;
    }
    if (this.clock.now() < c.refusedUntil && need >= c.refusedNeed) return false;
    c.pending++;
    const turn = c.queue.then(() => this.lease(c, need)).finally(() => c.pending--);
    c.queue = turn.catch(() => undefined);
    return turn;
  }

  /** The slow path, one at a time per counter: lease the shortfall; failing that, pool and ask for the whole need. */
  private async lease(c: Counter, need: number): Promise<boolean> {
    if (c.held >= need) {
      c.held -= need;
      return true;
    }
    if (this.clock.now() < c.refusedUntil && need >= c.refusedNeed) return false;
    const block = spendBlock(c.limit, c.leasedTotal, need);
    const short = need - c.held;
    const first = await this.store.leaseAtLeast(c.key, c.limit, short, Math.max(short, block - c.held));
    c.leasedTotal = first.leased;
    if (first.granted > 0) {
      c.held += first.granted - need;
      c.refusedUntil = 0;
      return true;
    }
    if (c.held > 0) {
      // Our fragment and others' may cover it together: hand ours back, ask for the whole need once.
      if (!(await this.handBack(c))) return false;
      const again = await this.store.leaseAtLeast(c.key, c.limit, need, need);
      c.leasedTotal = again.leased;
      if (again.granted > 0) {
        c.held += again.granted - need;
        c.refusedUntil = 0;
        return true;
      }
    }
    const now = this.clock.now();
    c.refusedNeed = now < c.refusedUntil ? Math.min(c.refusedNeed, need) : need;
    c.refusedUntil = now + REFUSAL_RECHECK_MS;
    return false;
  }

  private refund(cap: SpendCap, micros: number): void {
    if (micros <= 0) return;
    const c = this.counters.get(cap.key);
    if (c) {
      c.held += micros;
      if (c.held >= c.refusedNeed) c.refusedUntil = 0;
      return;
    }
    // Evicted meanwhile (or an old month's): the amount goes straight back to the store.
    this.store.release(cap.key, micros).catch((err) => this.log.warn({ err, key: cap.key, micros }, 'could not hand a refunded amount back'));
  }

  private charge(cap: SpendCap, micros: number): void {
    const c = this.counters.get(cap.key);
    const fromHeld = Math.min(micros, c?.held ?? 0);
    if (c) c.held -= fromHeld;
    const rest = micros - fromHeld;
    if (rest <= 0) return;
    this.store.leaseAtLeast(cap.key, cap.limit, 1, rest).then((r) => {
      if (r.granted < rest) this.log.warn({ key: cap.key, micros: rest - r.granted }, 'a response cost more than its reservation and the cap');
      if (c) c.leasedTotal = r.leased;
    }, (err) => this.log.warn({ err, key: cap.key, micros: rest }, 'could not record a cost above its reservation'));
  }

  /** Returns what a counter holds to the store; true when it did (on failure the amount stays usable here). */
  private async handBack(c: Counter): Promise<boolean> {
    const micros = c.held;
    if (micros <= 0) return true;
    c.held = 0;
    try {
      await this.store.release(c.key, micros);
      return true;
    } catch (err) {
      this.log.warn({ err, key: c.key, micros }, 'could not hand a held spend amount back; keeping it');
      c.held += micros;
      return false;
    }
  }

  /** Past the bound, the least recently used idle counters go (their held amounts back to the store). */
  private evictOverBound(): void {
    if (this.counters.size < this.countersMax) return;
    // Deleting while iterating a Map is safe: the loop goes on from the next entry.
    for (const c of this.counters.values()) {
      if (this.counters.size < this.countersMax) break;
      if (c.pending === 0) this.evict(c);
    }
  }
}
