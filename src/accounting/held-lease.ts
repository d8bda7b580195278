/**
 * One counter this instance holds under a lease (LeaseStore in store/ports.ts): the holder's side of the
 * protocol, shared by every limit that leases (quota, max_requests, spend caps; next, concurrency slots and
 * tokens per minute). Units flow pool → granted (claim) → armed (a write says the holder may consume them)
 * → used or reserved (in memory, no store call) → used, or back to idle, or back to the pool (release).
 *
 * What makes a cap hold when this instance dies or stalls:
 * - It consumes only what its stored state arms: used + reserved ≤ the armed ceiling of every state the
 *   store may hold now (the last acknowledged one and any write whose outcome is unknown). So whatever the
 *   store charges if this holder is reclaimed (used + armed) covers everything it may have forwarded.
 * - It consumes only before the expiry it computes on its own monotonic clock (send time of the write that
 *   renewed it + TTL − margin). Later (paused, throttled, cut off), it writes first: a renewal, or, when the
 *   holder was reclaimed meanwhile, a new holder claims afresh. A write that fails leaves it unable to take
 *   more: fail closed (503 from the store's error).
 * - Writes are one at a time; an unknown outcome is resolved by reading the holder back (its nonce).
 * Arming is small (in flight plus a few seconds of demand), so a holder that dies takes little with it;
 * what it held idle goes back to the pool when it is reclaimed, at most one TTL after its last renewal.
 */
import { randomBytes } from 'node:crypto';
import type { HolderOutcome, HolderState, HolderWrite, LeaseStore } from '../store/ports.js';

/** How a kind of limit leases. */
export interface LeasePlan {
  /** What to claim from the pool when `short` units are missing: at least `short`. */
  claimSize(limit: number, outstanding: number, short: number): number;
  /** How long a refused claim is believed before the store is asked again (others may hand units back). */
  readonly refusalMs: number;
  /** After a refusal, hand what is held back and ask once for the whole need (fragments held apart are pooled). */
  readonly pool: boolean;
}

/** What a HeldLease needs from its keeper (lease-keeper.ts). */
export interface LeaseHost {
  readonly store: LeaseStore;
  /** Wall clock (epoch ms): expiries written to the store. */
  now(): number;
  /** Monotonic ms: this instance's own view of its lease's expiry. */
  mono(): number;
  readonly ttlMs: number;
  readonly marginMs: number;
  newHolder(): string;
}

/** Consumption is armed for this long ahead of demand. */
const ARM_AHEAD_MS = 5_000;
/**
 * Use is recorded, and spare arming given back, at most this often when nothing else writes (the usage API
 * takes `used` from the usage counters where they run ahead; what this costs is one write per counter).
 */
export const REPORT_MS = 15_000;
/** Write attempts of one seq whose outcome is unknown kept at most; more and the counter waits for the store. */
const MAX_LIMBO = 16;

interface Attempt {
  state: HolderState;
  /** The lowest consumption ceiling the store can hold if this attempt lands. */
  ceiling: number;
  sentAt: number;
}

export class HeldLease {
  holder: string;
  /** Bumped when the holder was reclaimed and a new one took over: reservations of an older generation are void. */
  gen = 0;
  /** The keeper's bookkeeping: when this counter was last asked for (its sequence of uses), to pick whom to evict past the bound. */
  lastUse = 0;
  /** Units consumed and reserved (in flight) by this holder, as this instance counts them now. */
  used = 0;
  reserved = 0;
  /** The pool's units out (all holders), as of the last claim. */
  outstanding = 0;
  /** Monotonic ms of the last take, and of the last holder change. */
  lastTake: number;
  genChangedAt = -Infinity;
  private stored: HolderState | undefined;
  private storedSentAt = -Infinity;
  private limbo: Attempt[] = [];
  private usableUntil = -Infinity;
  private queue: Promise<unknown> = Promise.resolve();
  private refusedUntil = -Infinity;
  private refusedNeed = Infinity;
  /** The limit was lowered: take nothing more until what is held free went back (setLimit). */
  private rearm = false;
  private rate = 0;
  private takenSinceTick = 0;
  private lastTick: number;
  private lastArmAt = -Infinity;
  /** Grows while arming comes again within a second (a burst the rate has not caught up with), decays on quiet ticks. */
  private burst = 0;
  private armedSinceTick = false;
  private lastNeed = 1;

  constructor(readonly key: string, public limit: number, private readonly plan: LeasePlan, private readonly host: LeaseHost) {
    this.holder = host.newHolder();
    this.lastTake = this.lastTick = host.mono();
  }

  /** Whether what it holds may still be consumed now: its lease, as this instance counts it, has not run out. */
  get usable(): boolean {
    return this.host.mono() < this.usableUntil;
  }

  /** Whether this holder has anything in the store (or may have: an unknown write). */
  get holding(): boolean {
    return this.stored !== undefined || this.limbo.length > 0;
  }

  /** A write is running now. */
  private busy = false;
  get idle(): boolean {
    return !this.busy && this.reserved === 0;
  }

  /** Units this holder holds and has neither used nor reserved (armed or not). */
  get free(): number {
    if (!this.stored) return 0;
    return Math.max(0, this.stored.granted - this.returnedMax() - this.used - this.reserved);
  }

  /** What is left under the limit as far as this instance knows: the pool's room plus what it holds free. */
  remaining(): number {
    return Math.max(0, this.limit - this.outstanding + this.free);
  }

  /** Units used here and not yet written (the usage API adds them to what the store says). */
  get unreported(): number {
    return this.used - (this.stored?.used ?? 0);
  }

  /** Takes `n` units now if they are armed and the lease is unexpired: `use` consumes, `reserve` holds them in flight. */
  take(n: number, mode: 'use' | 'reserve'): boolean {
    if (n <= 0) return true;
    if (this.rearm || this.host.mono() >= this.usableUntil || this.used + this.reserved + n > this.ceiling()) return false;
    if (mode === 'use') this.used += n;
    else this.reserved += n;
    this.lastTake = this.host.mono();
    this.takenSinceTick += n;
    return true;
  }

  /**
   * Takes `n` units, writing first when they are not armed (arming more of what is held, or claiming from the
   * pool); false when the pool cannot cover them. Rejects when the store cannot be reached (fail closed).
   */
  acquire(n: number, mode: 'use' | 'reserve'): Promise<boolean> {
    if (this.take(n, mode)) return Promise.resolve(true);
    if (this.host.mono() < this.refusedUntil && n >= this.refusedNeed) return Promise.resolve(false);
    return this.serial(() => this.acquireNow(n, mode));
  }

  /** A reserved amount is over: `actual` of it was consumed (0: given back whole). */
  settle(reserved: number, actual: number): void {
    this.reserved = Math.max(0, this.reserved - reserved);
    this.used += Math.max(0, actual);
    if (this.free >= this.refusedNeed) this.refusedUntil = -Infinity;
  }

  /** A used unit was never forwarded after all. */
  unuse(n: number): void {
    this.used = Math.max(0, this.used - n);
    if (this.free >= this.refusedNeed) this.refusedUntil = -Infinity;
  }

  /**
   * A lower limit applies to what is held here too: nothing more is taken from what is armed until what is
   * held free went back and a claim under the new limit armed again. A higher one just applies.
   */
  setLimit(limit: number): void {
    if (limit === this.limit) return;
    if (limit < this.limit) this.rearm = true;
    this.limit = limit;
    this.refusedUntil = -Infinity;
  }

  /**
   * Background upkeep (the keeper calls it about once a second): renews before a third of the TTL has
   * passed, records use and shrinks arming now and then, settles unknown outcomes. Never throws.
   */
  tick(): Promise<void> {
    const now = this.host.mono();
    const elapsed = Math.max(1, now - this.lastTick);
    this.rate = 0.5 * this.rate + 0.5 * (this.takenSinceTick * 1000) / elapsed;
    this.takenSinceTick = 0;
    this.lastTick = now;
    if (!this.armedSinceTick) this.burst = Math.floor(this.burst / 2);
    this.armedSinceTick = false;
    if (!this.holding || this.busy) return Promise.resolve();
    return this.serial(async () => {
      if (this.limbo.length > 0) await this.resolve();
      if (!this.stored) return;
      const sinceWrite = this.host.mono() - this.storedSentAt;
      const spare = this.stored.used + this.stored.armed - this.used - this.reserved;
      const renew = sinceWrite >= this.host.ttlMs / 3;
      const record = this.used !== this.stored.used && sinceWrite >= REPORT_MS;
      const shrink = spare > 2 * this.headroom() && sinceWrite >= REPORT_MS;
      if (renew || record || shrink) await this.report(this.reserved + this.headroom());
    }).catch(() => undefined);
  }

  /** Ends the holder: what it holds idle goes back; what is in flight (`reserved`) stays charged. */
  retire(): Promise<void> {
    return this.serial(async () => {
      if (this.limbo.length > 0) await this.resolve();
      if (!this.stored) return;
      const out = await this.write({ op: 'retire' }, { armed: this.reserved });
      if (out.kind === 'conflict' && this.stored) await this.write({ op: 'retire' }, { armed: this.reserved });
      // Done with: anything still reserved was charged; a later use starts a new holder.
      this.reincarnate();
    });
  }

  private async acquireNow(n: number, mode: 'use' | 'reserve'): Promise<boolean> {
    this.lastNeed = n;
    if (this.rearm) {
      await this.handBack();
      this.rearm = false;
    }
    let pooled = false;
    for (let round = 0; round < 4; round++) {
      if (this.take(n, mode)) return true;
      if (this.limbo.length > 0) await this.resolve();
      if (this.take(n, mode)) return true;
      this.arming();
      const armed = this.reserved + n + this.headroom();
      const short = n - this.free;
      if (this.stored && short <= 0) {
        await this.report(armed);
        continue;
      }
      const want = this.plan.claimSize(this.limit, this.outstanding, Math.max(1, short));
      const out = await this.write({ op: 'claim', limit: this.limit, min: Math.max(1, short), want, now: this.host.now() }, { armed });
      if (out.kind !== 'refused') continue;
      if (this.plan.pool && !pooled && this.stored && this.free > 0) {
        // Our fragment and others' may cover it together: hand ours back, then ask for the whole need once.
        pooled = true;
        await this.handBack();
        continue;
      }
      this.refusedNeed = this.host.mono() < this.refusedUntil ? Math.min(this.refusedNeed, n) : n;
      this.refusedUntil = this.host.mono() + this.plan.refusalMs;
      return false;
    }
    return this.take(n, mode);
  }

  /** Spare armed units: a few seconds of demand, at least the last need, more during a burst. */
  private headroom(): number {
    return Math.max(this.lastNeed, Math.ceil((this.rate * ARM_AHEAD_MS) / 1000), this.burst);
  }

  /** Notes an arming write: one within a second of the last doubles the burst allowance. */
  private arming(): void {
    const now = this.host.mono();
    if (now - this.lastArmAt < 1000) this.burst = Math.max(2 * this.burst, 2 * this.lastNeed);
    this.lastArmAt = now;
    this.armedSinceTick = true;
  }

  private async report(armed: number): Promise<void> {
    await this.write({ op: 'report' }, { armed });
  }

  /** Hands every free unit back to the pool (nothing stays armed beyond what is reserved). */
  private async handBack(): Promise<void> {
    if (this.limbo.length > 0) await this.resolve();
    const units = this.free;
    if (!this.stored || units <= 0) return;
    await this.write({ op: 'release', units }, { armed: this.reserved, returned: this.stored.returned + units });
  }

  /** The lowest consumption ceiling of every state the store may hold for this holder. */
  private ceiling(): number {
    let c = this.stored ? this.stored.used + this.stored.armed : 0;
    for (const a of this.limbo) c = Math.min(c, a.ceiling);
    return c;
  }

  private returnedMax(): number {
    let r = this.stored?.returned ?? 0;
    for (const a of this.limbo) r = Math.max(r, a.state.returned);
    return r;
  }

  private async write(op: HolderWrite, change: { armed: number; returned?: number }): Promise<HolderOutcome> {
    if (this.limbo.length >= MAX_LIMBO) await this.resolve();
    const base = this.stored;
    const state: HolderState = {
      holder: this.holder,
      seq: (base?.seq ?? 0) + 1,
      nonce: randomBytes(8).toString('base64url'),
      granted: base?.granted ?? 0,
      returned: change.returned ?? base?.returned ?? 0,
      used: this.used,
      armed: Math.max(0, change.armed),
      expiresAt: this.host.now() + this.host.ttlMs,
    };
    // If it lands, the store clamps armed to what is held then: a claim may bring as little as its min.
    const heldAtLeast = state.granted - state.returned - state.used + (op.op === 'claim' ? op.min : 0);
    const attempt: Attempt = { state, ceiling: state.used + Math.max(0, Math.min(state.armed, heldAtLeast)), sentAt: this.host.mono() };
    this.limbo.push(attempt);
    this.busy = true;
    let out: HolderOutcome;
    try {
      out = await this.host.store.writeHolder(this.key, state, op);
    } finally {
      this.busy = false;
    }
    // Known now (landed or not): it leaves limbo; a conflict is resolved by what is stored.
    this.limbo = this.limbo.filter((a) => a !== attempt);
    if (out.kind === 'written') {
      this.adopt(out.state, attempt.sentAt);
      if (out.outstanding !== undefined) this.outstanding = out.outstanding;
    } else if (out.kind === 'refused') {
      this.outstanding = out.outstanding;
    } else {
      this.onConflict(out.current);
    }
    return out;
  }

  private adopt(state: HolderState, sentAt: number): void {
    this.stored = state;
    this.storedSentAt = sentAt;
    this.limbo = []; // seq n landed: no other attempt with seq n can, and none with a lower one
    this.usableUntil = sentAt + this.host.ttlMs - this.host.marginMs;
  }

  /** Resolves writes whose outcome was unknown by reading the holder back. Rejects while the store is unreachable. */
  private async resolve(): Promise<void> {
    const current = await this.host.store.readHolder(this.key, this.holder);
    if (current && this.stored && current.seq === this.stored.seq && current.nonce === this.stored.nonce) return; // none landed (yet)
    if (!current && !this.stored) return; // the first write has not landed (yet)
    this.onConflict(current);
  }

  private onConflict(current: HolderState | undefined): void {
    const mine = current && this.limbo.find((a) => a.state.seq === current.seq && a.state.nonce === current.nonce);
    if (current && mine) {
      this.adopt(current, mine.sentAt);
      return;
    }
    if (current && this.stored && current.seq === this.stored.seq && current.nonce === this.stored.nonce) return;
    // Reclaimed (or retired) while this instance was away: what it held is settled in the store. Start afresh.
    this.reincarnate();
  }

  private reincarnate(): void {
    this.holder = this.host.newHolder();
    this.gen++;
    this.genChangedAt = this.host.mono();
    this.stored = undefined;
    this.limbo = [];
    this.used = 0;
    this.reserved = 0;
    this.usableUntil = -Infinity;
    this.refusedUntil = -Infinity;
  }

  /** One store conversation at a time per counter: concurrent callers queue behind it. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }
}
