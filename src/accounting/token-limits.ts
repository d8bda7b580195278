/**
 * A token's `max_concurrent` and `tokens_per_minute`, exact across instances on the lease design
 * (held-lease.ts, docs/operate/leases.md "Reusing it"):
 *   `slots:tok:<token id>`            limit: max_concurrent. A request reserves one slot and gives it back at
 *                                     its end (nothing is ever used). A holder that dies gives its slots back
 *                                     whole when reclaimed (lease-port.ts unitsBackAtEnd): its connections
 *                                     died with it. So a live instance that cannot renew its holder before it
 *                                     runs out (the store unreachable) fails closed: it cuts its open requests
 *                                     (their `onLost`) rather than keep slots the store may give to others.
 *                                     Slots held idle here go back after a second of quiet.
 *   `tpm:tok:<token id>`, `tpm:team:<team id>`
 *                                     limit: tokens_per_minute over a rolling 60 s (lease-port.ts
 *                                     isRollingPool). A request reserves its worst case (input + output
 *                                     tokens); at its end the unused part comes back at once and what the
 *                                     provider reported comes back 60 s later (counted from the response's
 *                                     end, so a long stream's tokens are never out of the window early).
 *                                     Nothing is used for good: a dead holder's units come back whole, a
 *                                     window after its lease expired, when whatever it used has left the
 *                                     window; a live one retires only with nothing in its window.
 * No store call per request at steady state: units are claimed in blocks and armed a few seconds ahead.
 * Refusals: 429 concurrency_exceeded (Retry-After 1) and tokens_per_minute_exceeded (Retry-After: the
 * seconds until this instance's oldest use leaves the window, 60 when it has none, always 1–60).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import { Errors } from '../errors.js';
import { ROLLING_WINDOW_MS } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import type { HeldLease, LeasePlan } from './held-lease.js';
import { LeaseKeeper } from './lease-keeper.js';
import { spendBlock } from './spend-ledger.js';

/** What a request holds under one limit, and from which holder generation (a replaced holder's is void). */
export interface LimitHold {
  readonly counter: HeldLease;
  readonly gen: number;
  readonly units: number;
  /** A slot's request, cut when its holder's lease is lost. */
  readonly onLost?: () => void;
}

/** Free slots held this long with nothing in flight go back to the pool. */
const SLOT_IDLE_MS = 1000;
/** How often open slots' holders are checked for a lost lease. */
const WATCH_MS = 250;

/** A rolling counter's uses in the window, oldest first from `head`, each back to the holder at `due` (clock ms). */
interface UseWindow {
  uses: Array<{ due: number; units: number; gen: number }>;
  head: number;
  armed: boolean;
}

/** The lease key of a token's `tokens_per_minute`. */
export const tpmKey = (tokenId: string): string => `tpm:tok:${tokenId}`;
/** The lease key of a team's `tokens_per_minute` (shared by every token of the team). */
export const teamTpmKey = (teamId: string): string => `tpm:team:${teamId}`;

/** Slots are claimed as needed (no block beyond the shortfall), so instances share a small limit. */
const SLOT_PLAN: LeasePlan = { claimSize: (_limit, _outstanding, short) => short, refusalMs: 250, pool: true };
const TPM_PLAN: LeasePlan = { claimSize: (limit, outstanding, short) => spendBlock(limit, outstanding, short), refusalMs: 1000, pool: true };

@injectable()
export class TokenLimits {
  /** Open slots by counter (the watch's work). */
  private readonly open = new Map<HeldLease, Set<LimitHold>>();
  private stopWatch: (() => void) | undefined;
  /**
   * By rolling counter: its uses still in the window, oldest first (a queue read from `head`), and the one timer
   * that gives them back as they leave it. One timer per counter, not per request: at thousands of requests a
   * second a timer each would be hundreds of thousands alive.
   */
  private readonly windows = new Map<HeldLease, UseWindow>();

  constructor(
    @inject(LeaseKeeper) private readonly keeper: LeaseKeeper,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Timers) private readonly timers: Timers,
  ) {}

  /** One of the token's `max` slots, or 429 concurrency_exceeded; `onLost` cuts its request if the slot's lease is lost. */
  async openSlot(tokenId: string, max: number, onLost?: () => void): Promise<LimitHold> {
    const counter = this.keeper.counter(`slots:tok:${tokenId}`, max, SLOT_PLAN);
    if (!counter.take(1, 'reserve') && !(await counter.acquire(1, 'reserve'))) throw Errors.concurrencyExceeded(1);
    const hold: LimitHold = { counter, gen: counter.gen, units: 1, ...(onLost ? { onLost } : {}) };
    let set = this.open.get(counter);
    if (!set) this.open.set(counter, (set = new Set()));
    set.add(hold);
    this.stopWatch ??= this.timers.every(WATCH_MS, () => this.watch());
    return hold;
  }

  /** The request ended: its slot is free again; with nothing in flight for a second, the holder hands its slots back. */
  closeSlot(hold: LimitHold): void {
    const set = this.open.get(hold.counter);
    if (!set?.delete(hold)) return;
    if (set.size === 0) this.open.delete(hold.counter);
    if (this.open.size === 0) {
      this.stopWatch?.();
      this.stopWatch = undefined;
    }
    if (hold.counter.gen !== hold.gen) return;
    hold.counter.settle(hold.units, 0);
    if (hold.counter.reserved > 0) return;
    this.timers.after(SLOT_IDLE_MS + 50, () => {
      if (hold.counter.reserved === 0 && this.keeper.mono() - hold.counter.lastTake >= SLOT_IDLE_MS) void this.keeper.retire(hold.counter.key);
    });
  }

  /** Fails closed: the open slots of a holder that was replaced, or whose lease ran out unrenewed, are cut and freed. */
  watch(): void {
    for (const [counter, holds] of [...this.open]) {
      for (const hold of [...holds]) {
        if (counter.gen === hold.gen && counter.usable) continue;
        hold.onLost?.();
        this.closeSlot(hold);
      }
    }
  }

  /** Reserves `tokens` of the token's `perMinute` over the last 60 s, or 429 tokens_per_minute_exceeded. */
  reserveTokens(tokenId: string, perMinute: number, tokens: number): Promise<LimitHold> {
    return this.reserveAt(tpmKey(tokenId), 'token', perMinute, tokens);
  }

  /**
   * The same reservation made now from what this instance holds (no store call, no promise), or undefined when
   * it would have to wait for the store (then call reserveTokens). Refuses only what no window can hold.
   */
  reserveTokensNow(tokenId: string, perMinute: number, tokens: number): LimitHold | undefined {
    return this.reserveNowAt(tpmKey(tokenId), 'token', perMinute, tokens);
  }

  /** A team's `tokens_per_minute`, shared by its tokens: as reserveTokens. */
  reserveTeamTokens(teamId: string, perMinute: number, tokens: number): Promise<LimitHold> {
    return this.reserveAt(teamTpmKey(teamId), 'team', perMinute, tokens);
  }

  /** A team's `tokens_per_minute`: as reserveTokensNow. */
  reserveTeamTokensNow(teamId: string, perMinute: number, tokens: number): LimitHold | undefined {
    return this.reserveNowAt(teamTpmKey(teamId), 'team', perMinute, tokens);
  }

  private async reserveAt(key: string, of: 'token' | 'team', perMinute: number, tokens: number): Promise<LimitHold> {
    const now = this.reserveNowAt(key, of, perMinute, tokens);
    if (now) return now;
    const counter = this.keeper.counter(key, perMinute, TPM_PLAN);
    if (!(await counter.acquire(tokens, 'reserve'))) throw Errors.tokensPerMinuteExceeded(this.retryAfter(counter), tokens, Math.min(perMinute, counter.remaining()), of);
    return { counter, gen: counter.gen, units: tokens };
  }

  private reserveNowAt(key: string, of: 'token' | 'team', perMinute: number, tokens: number): LimitHold | undefined {
    if (tokens > perMinute) throw Errors.tokensPerMinuteExceeded(60, tokens, Math.min(perMinute, this.keeper.peek(key)?.remaining() ?? perMinute), of);
    // The rolling counter (one per token or team, kept by the lease keeper).
    const counter = this.keeper.counter(key, perMinute, TPM_PLAN);
    return tokens === 0 || counter.take(tokens, 'reserve') ? { counter, gen: counter.gen, units: tokens } : undefined;
  }

  /** Tokens this instance's current holder of the token's window has used in it (the token view: token-caps.ts); 0 when it holds none. */
  inWindow(tokenId: string): number {
    const counter = this.keeper.peek(tpmKey(tokenId));
    const w = counter && this.windows.get(counter);
    if (!w) return 0;
    let units = 0;
    for (let i = w.head; i < w.uses.length; i++) if (w.uses[i]!.gen === counter.gen) units += w.uses[i]!.units;
    return units;
  }

  /**
   * The response is over: `actual` tokens of the reservation were used (the reservation at most: it is the
   * worst case). The rest comes back now, the used tokens when they leave the window.
   */
  settleTokens(hold: LimitHold, actual: number): void {
    if (hold.counter.gen !== hold.gen) return; // its holder was reclaimed: the store gives its units back
    const used = Math.min(hold.units, Math.max(0, Math.round(actual)));
    hold.counter.settle(hold.units - used, 0);
    if (used === 0) return;
    let w = this.windows.get(hold.counter);
    if (!w) this.windows.set(hold.counter, (w = { uses: [], head: 0, armed: false }));
    w.uses.push({ due: this.clock.now() + ROLLING_WINDOW_MS, units: used, gen: hold.gen });
    if (!w.armed) this.arm(hold.counter, w);
  }

  /** The window's timer, for its oldest use. */
  private arm(counter: HeldLease, w: UseWindow): void {
    w.armed = true;
    this.timers.after(Math.max(1, w.uses[w.head]!.due - this.clock.now()), () => this.leave(counter, w));
  }

  /** The uses whose minute is over go back to the holder (those of its current generation: a reclaimed one's went back in the store). */
  private leave(counter: HeldLease, w: UseWindow): void {
    w.armed = false;
    const now = this.clock.now();
    let units = 0;
    while (w.head < w.uses.length && w.uses[w.head]!.due <= now) {
      const use = w.uses[w.head++]!;
      if (use.gen === counter.gen) units += use.units;
    }
    if (units > 0) counter.settle(units, 0);
    if (w.head === w.uses.length) {
      this.windows.delete(counter);
      return;
    }
    if (w.head > 1024 && w.head * 2 > w.uses.length) {
      w.uses = w.uses.slice(w.head);
      w.head = 0;
    }
    this.arm(counter, w);
  }

  /** Seconds until this instance's oldest use in the window leaves it (others' uses are unknown here: 60). */
  private retryAfter(counter: HeldLease): number {
    const w = this.windows.get(counter);
    const ms = w ? w.uses[w.head]!.due - this.clock.now() : ROLLING_WINDOW_MS;
    return Math.min(60, Math.max(1, Math.ceil(ms / 1000)));
  }

  /** Gives a reservation back whole (the request was refused later, or never forwarded). */
  refundTokens(hold: LimitHold): void {
    if (hold.counter.gen === hold.gen) hold.counter.settle(hold.units, 0);
  }
}
