/**
 * The responses of one session and what holds each (limits.ts), whatever the
 * protocol: the protocol files say when a response may start, starts and ends,
 * and this book keeps the money straight.
 *
 * - A response the client asks for (OpenAI `response.create`, Gemini's turn
 *   end) is held before the request is forwarded (`forClient`); refused, it is
 *   never forwarded. Held requests wait in order for the provider's "started".
 * - A response the provider may start on its own (server turn detection) is
 *   covered ahead: one hold is kept armed while server turns are on, made before
 *   any input that could start one is forwarded (`cover`). When it cannot be
 *   made while a response is running, the input waits for that response to end
 *   (its unused worst case comes back) and is tried once more; when it still
 *   cannot, `cover` refuses and the session closes before the provider can
 *   start anything. After a started response takes the armed hold, the next is
 *   armed at once in the background.
 * - A response that starts with no hold (the provider started two from input
 *   forwarded under one) is held when it starts; if that fails, `uncovered`
 *   ends the session at once.
 * - `ended` settles a response to its final usage (none reported: its whole
 *   worst case); `close` charges every response still running or asked for as
 *   cut (whole worst case) and gives the armed hold back.
 *
 * Without any limit that applies, holds are free and only usage is counted.
 */
import type { ApiError } from '../../errors.js';
import type { TokenUsage } from '../../catalog/provider.js';
import type { Hold, ResponseLimits, WorstCase } from './limits.js';

/** One response's worst case, worked out only when a limit applies (throws 403 model_unpriced, 400 max_tokens_required). */
export type Worst = () => WorstCase;

/** What reported usage cost in µ$ (undefined: unpriced); `model`: the response's own, else the session's. */
export type CostOf = (usage: TokenUsage, model?: string) => number | undefined;

export interface BookHooks {
  /** A response the provider started could not be held: the session must end now (1008). */
  uncovered(err: ApiError): void;
  /** A response is over: its final usage (undefined when cut or unreported) and what it is charged (undefined: unpriced and unheld). */
  settled(usage: TokenUsage | undefined, micros: number | undefined): void;
}

const FREE: WorstCase = Object.freeze({ inputTokens: 0, outputTokens: 0, micros: 0 });
/** A hold made when no limit applies: nothing held, nothing to settle. */
export const freeHold = (): Hold => ({ worst: FREE, held: false, settle() {}, refund() {} });

interface Asked {
  hold: Hold;
  /** The client event that asked (OpenAI `event_id`), to match the provider's refusal of it. */
  eventId: string | undefined;
  model: string | undefined;
}

export class ResponseBook {
  private serverTurns = false;
  private armed: Hold | undefined;
  private arming: Promise<Hold> | undefined;
  private readonly asked: Asked[] = [];
  private readonly running = new Map<string, Asked>();
  /** Resolved (and replaced) each time a response ends: what `cover` waits for. */
  private ended$ = deferred();
  private closed = false;

  constructor(private readonly limits: ResponseLimits, private readonly costOf: CostOf, private readonly hooks: BookHooks) {}

  /** Whether the provider may start responses on its own now. Off: the armed hold goes back. */
  setServerTurns(on: boolean): void {
    this.serverTurns = on;
    if (!on && this.armed) {
      this.armed.refund();
      this.armed = undefined;
    }
  }

  get serverTurnsOn(): boolean {
    return this.serverTurns;
  }

  /** Responses started and not yet ended. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Arms the next server-started response now if a limit applies (a failure is not fatal here: `cover` retries). */
  armAhead(worst: Worst): void {
    if (!this.serverTurns || this.armed || this.closed) return;
    this.arm(worst).catch(() => {});
  }

  /** Holds a response the client asks for; throws the refusal (nothing is held then). */
  async forClient(worst: Worst, eventId: string | undefined, model?: string): Promise<void> {
    const hold = (await this.limits.applies()) ? await this.limits.hold(worst()) : freeHold();
    if (this.closed) return hold.refund();
    this.asked.push({ hold, eventId, model });
  }

  /**
   * Before input that could let the provider start a response on its own is forwarded: the next such response
   * is held. Throws the refusal when it cannot be, even after the running responses ended.
   */
  async cover(worst: Worst): Promise<void> {
    if (!this.serverTurns || this.armed || this.closed) return;
    try {
      await this.arm(worst);
    } catch (err) {
      if (this.running.size === 0) throw err;
      // A running response holds its worst case: once it ends, what it did not use is back. Tried once more.
      await this.ended$.promise;
      if (this.armed || this.closed) return;
      await this.arm(worst);
    }
  }

  /** The provider started response `id` (OpenAI `response.created`, Gemini's first message of a turn). */
  started(id: string, worst: Worst): void {
    if (this.closed || this.running.has(id)) return;
    let entry = this.asked.shift();
    if (!entry && this.armed) {
      entry = { hold: this.armed, eventId: undefined, model: undefined };
      this.armed = undefined;
    }
    if (entry) {
      this.running.set(id, entry);
      this.armAhead(worst);
      return;
    }
    // Started with nothing held for it: held now, or the session ends.
    const late: Asked = { hold: freeHold(), eventId: undefined, model: undefined };
    this.running.set(id, late);
    Promise.resolve(this.limits.applies()).then(async (applies) => {
      if (!applies) return;
      const hold = await this.limits.hold(worst());
      if (this.closed || !this.running.has(id)) return hold.settle(undefined);
      late.hold = hold;
      this.armAhead(worst);
    }).catch((err: ApiError) => this.hooks.uncovered(err));
  }

  /** Response `id` ended with the provider's final signal; `usage` as it reported it (undefined: none). */
  ended(id: string, usage: TokenUsage | undefined, model?: string): void {
    const entry = this.running.get(id);
    if (!entry) return;
    this.running.delete(id);
    this.settle(entry, usage, model ?? entry.model);
    const signal = this.ended$;
    this.ended$ = deferred();
    signal.resolve();
  }

  /**
   * The provider refused a client's request before starting it: its hold goes back. Matched by the client's
   * event id, else `which` says whose: the newest request (a second while one runs) or the oldest (queued in order).
   */
  refusedByProvider(eventId: string | undefined, which?: 'newest' | 'oldest'): void {
    const i = eventId !== undefined ? this.asked.findIndex((a) => a.eventId === eventId) : which === 'newest' ? this.asked.length - 1 : which === 'oldest' ? 0 : -1;
    if (i < 0) return;
    const [entry] = this.asked.splice(i, 1);
    entry!.hold.refund();
  }

  /** The session is over: running and asked-for responses are charged as cut; the armed hold goes back. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const entry of this.running.values()) this.settle(entry, undefined, entry.model);
    for (const entry of this.asked) this.settle(entry, undefined, entry.model);
    this.running.clear();
    this.asked.length = 0;
    this.armed?.refund();
    this.armed = undefined;
    this.ended$.resolve();
  }

  private settle(entry: Asked, usage: TokenUsage | undefined, model: string | undefined): void {
    const priced = usage ? this.costOf(usage, model) : undefined;
    // Final usage priced: that. Otherwise (cut, or nothing reported) the larger of it and the whole worst case.
    const micros = priced !== undefined ? priced : entry.hold.held ? entry.hold.worst.micros : undefined;
    entry.hold.settle(priced !== undefined && usage ? { usage, micros: priced } : undefined);
    this.hooks.settled(usage, micros);
  }

  private async arm(worst: Worst): Promise<void> {
    if (!(await this.limits.applies())) return;
    this.arming ??= this.limits.hold(worst()).finally(() => (this.arming = undefined));
    const hold = await this.arming;
    if (this.closed || !this.serverTurns || this.armed) {
      if (this.armed !== hold) hold.refund();
      return;
    }
    this.armed = hold;
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
