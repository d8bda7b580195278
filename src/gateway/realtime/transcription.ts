/**
 * Realtime input-audio transcription: what a session that transcribes its
 * input audio holds under a cap and is charged, whatever the protocol's shape
 * (providers/lib/realtime/openai-transcription.ts reads OpenAI's).
 *
 * The provider bills each transcription item (the audio between two commits
 * of the input buffer) once its transcript is done: the item's audio (tokens,
 * or seconds for a model billed by duration), its prompt and its transcript.
 * So under a cap:
 *
 * - every appended audio chunk is held before it is forwarded: its worst case
 *   (transcription-price.ts: its seconds, at the slowest byte rate the
 *   session's format may have, times the route's declared audio-token bound at
 *   the dearest input price, plus its seconds at the model's per-second price),
 *   in blocks of a second at least that the next chunks fill, so a session
 *   makes one hold a second at most;
 * - every item holds what is not audio: its prompt (the transcription
 *   settings' length plus the usual overhead) and its transcript at the
 *   model's largest output, plus one second (a duration rounded up). An item
 *   the client commits is held before the commit is forwarded; one the server
 *   commits on its own (turn detection on) takes the hold kept armed ahead,
 *   made before any audio is forwarded; an item that starts with nothing held
 *   is held when it starts or the session ends (`uncovered`);
 * - an item the provider committed takes the chunks its audio certainly
 *   holds: those that ended by the server's `audio_end_ms`, or by the client's
 *   commit; the item's usage then settles its hold and its chunks together,
 *   each charged at most its own worst case in turn; what is left (audio of
 *   a chunk the item's end cut, still held for the next item) is charged
 *   with the next settlement, or on the last hold when none is open;
 * - usage that does not fit the price (tokens for a model priced by the
 *   second, none at all, a failed transcription) charges the item whole; at
 *   the session's end every hold not settled is charged whole (the provider
 *   may still bill it), the armed one too while audio no item holds went.
 *
 * Without a cap nothing is held, and each item's usage is only counted.
 */
import type { ApiError } from '../../errors.js';
import type { TokenUsage } from '../../catalog/provider.js';
import { freeHold } from './book.js';
import type { Hold, ResponseLimits, WorstCase } from './limits.js';
import type { TranscriptionPrice, TranscriptionUsage } from './transcription-price.js';

export { transcriptionPrice, type TranscriptionPrice, type TranscriptionUsage } from './transcription-price.js';

/** The dearer of two worst cases, field by field. */
const dearer = (a: WorstCase, b: WorstCase): WorstCase => ({
  inputTokens: Math.max(a.inputTokens, b.inputTokens), outputTokens: Math.max(a.outputTokens, b.outputTokens), micros: Math.max(a.micros, b.micros),
});

/** The prices a session may be transcribing at now (the confirmed model and every one asked for); throws price_unknown. */
export type Prices = () => readonly TranscriptionPrice[];

export interface TranscriptionHooks {
  /** An item the provider committed could not be held: the session must end now (1008). */
  uncovered(err: ApiError): void;
  /** An item is over: its usage (undefined when unreported or by duration), what it is charged, at which model. */
  settled(usage: TokenUsage | undefined, micros: number | undefined, model: string | undefined): void;
}

/** A chunk of audio forwarded: its hold and where it lies in the session's audio (ms at the slowest rate). */
interface Chunk {
  readonly hold: Hold;
  readonly start: number;
  /** Where the audio it holds ends so far: later appends fill the block up to `capacity` ms while it is the last. */
  end: number;
  capacity: number;
}

/**
 * Audio is held in blocks of at least this many ms, filled by the appends that follow (a chunk of 20 ms holds a
 * second, the next 49 take none): one hold a second of audio at most, whatever the chunk size. Near the cap, a
 * block that does not fit falls back to the chunk's own worst case.
 */
const BLOCK_MS = 1000;

interface Item {
  /** The item's own hold first, then its chunks. */
  readonly holds: Hold[];
  readonly prices: readonly TranscriptionPrice[];
}

/** A commit the client sent: its hold, its event id, and the audio written when it went. */
interface Asked {
  readonly hold: Hold;
  readonly eventId: string | undefined;
  readonly boundary: number;
}

export class TranscriptionBook {
  private serverCommits = false;
  private armed: Hold | undefined;
  private arming: Promise<Hold> | undefined;
  private readonly asked: Asked[] = [];
  /** Chunks no committed item holds yet, in order. */
  private readonly chunks: Chunk[] = [];
  private readonly items = new Map<string, Item>();
  /** Where the server said an item's speech ended (`audio_end_ms`), by item id, until the item is committed. */
  private readonly stops = new Map<string, number>();
  /** The audio written when each client `clear` went, until the server confirms it. */
  private readonly clears: number[] = [];
  /** Milliseconds of audio forwarded, at the slowest byte rate the session's format may have. */
  private written = 0;
  /** The end of the audio committed items hold. */
  private assigned = 0;
  /** What settled items cost past their own holds, not charged yet: charged with the next (the holds still open cover it). */
  private debt = { micros: 0, tokens: 0 };
  private closed = false;

  constructor(private readonly limits: ResponseLimits, private readonly hooks: TranscriptionHooks) {}

  /** Whether the provider commits items on its own (turn detection on). Off: the armed hold goes back. */
  setServerCommits(on: boolean): void {
    this.serverCommits = on;
    if (!on && this.armed) {
      this.armed.refund();
      this.armed = undefined;
    }
  }

  get serverCommitsOn(): boolean {
    return this.serverCommits;
  }

  /**
   * While the server commits items on its own, the next one is held (before a setting that turns that, or
   * transcription, on is forwarded: the audio already in the buffer may make an item at once). Throws the refusal.
   */
  async cover(prices: Prices, promptBytes: number): Promise<void> {
    if (!this.serverCommits || this.armed || this.closed || !(await this.limits.applies())) return;
    await this.arm(prices(), promptBytes);
  }

  /** Refuses (throws price_unknown) when a cap applies and `prices` cannot price the session's transcription. */
  async check(prices: Prices): Promise<void> {
    if (await this.limits.applies()) prices();
  }

  /**
   * Before an audio chunk of `ms` milliseconds is forwarded: while it may be transcribed (`transcribed`) and a cap
   * applies, its worst case is held (and, while the server commits items, the next item's): the promise, which
   * rejects with the refusal (nothing held then). Otherwise it is only counted, at once.
   */
  append(prices: Prices, ms: number, promptBytes: number, transcribed: boolean): void | Promise<void> {
    const applies = transcribed && !this.closed ? this.limits.applies() : false;
    if (applies === false) {
      this.written += ms;
      return;
    }
    return this.holdChunk(applies, prices, ms, promptBytes);
  }

  private async holdChunk(applies: true | Promise<boolean>, prices: Prices, ms: number, promptBytes: number): Promise<void> {
    if (!(await applies)) {
      this.written += ms;
      return;
    }
    const list = prices();
    if (this.serverCommits && !this.armed) await this.arm(list, promptBytes);
    const worst = (chunkMs: number) => list.map((p) => p.audio(chunkMs / 1000)).reduce(dearer);
    const last = this.chunks[this.chunks.length - 1];
    // The last block has room, and was held at prices no lower than today's (the model may have changed since).
    if (last && last.end === this.written && last.end - last.start + ms <= last.capacity && covers(last.hold.worst, worst(last.capacity))) {
      last.end += ms;
      this.written += ms;
      return;
    }
    const block = Math.max(ms, BLOCK_MS);
    let capacity = block;
    let hold: Hold;
    try {
      hold = await this.limits.hold(worst(block));
    } catch (err) {
      if (block === ms) throw err;
      capacity = ms;
      hold = await this.limits.hold(worst(ms));
    }
    if (this.closed) return hold.settle(undefined);
    this.chunks.push({ hold, start: this.written, end: this.written + ms, capacity });
    this.written += ms;
  }

  /** No later audio goes in the last block (a commit or clear ends the buffer's audio there). */
  private seal(): void {
    const last = this.chunks[this.chunks.length - 1];
    if (last) last.capacity = last.end - last.start;
  }

  /** Transcription turns on: the last `ms` of audio already forwarded (unheld, not yet committed) is held now. Throws the refusal. */
  async holdBacklog(prices: Prices, ms: number): Promise<void> {
    if (!(await this.limits.applies()) || this.closed) return;
    const hold = await this.limits.hold(prices().map((p) => p.audio(ms / 1000)).reduce(dearer));
    if (this.closed) return hold.settle(undefined);
    const start = Math.max(this.assigned, this.written - ms);
    // In order: it ends where the audio written so far ends, after every chunk held before it.
    this.chunks.push({ hold, start, end: this.written, capacity: this.written - start });
  }

  /** Before a client's commit is forwarded: the item it makes is held. Throws the refusal. */
  async commit(prices: Prices, promptBytes: number, eventId: string | undefined): Promise<void> {
    const boundary = this.written;
    this.seal();
    const hold = (await this.limits.applies()) ? await this.limits.hold(prices().map((p) => p.item(promptBytes)).reduce(dearer)) : freeHold();
    if (this.closed) return hold.refund();
    this.asked.push({ hold, eventId, boundary });
  }

  /** A client's `clear` is forwarded: the audio written so far, not committed, is dropped once the server confirms. */
  clear(): void {
    this.seal();
    this.clears.push(this.written);
  }

  /** The server confirmed a clear: chunks wholly past what committed items hold, and before the clear, go back. */
  cleared(): void {
    const upTo = this.clears.shift() ?? this.assigned;
    for (let i = this.chunks.length - 1; i >= 0; i--) {
      const c = this.chunks[i]!;
      if (c.start >= this.assigned && c.end <= upTo) {
        c.hold.refund();
        this.chunks.splice(i, 1);
      }
    }
  }

  /** The server detected the end of item `id`'s speech at `endMs` of the session's audio. */
  speechStopped(id: string, endMs: number): void {
    if (!this.closed) this.stops.set(id, endMs);
  }

  /** The provider committed item `id` (its transcription will be billed): held, with the chunks its audio holds. */
  committed(id: string, prices: Prices, promptBytes: number): void {
    if (this.closed || this.items.has(id)) return;
    const stop = this.stops.get(id);
    this.stops.delete(id);
    let hold: Hold | undefined;
    let boundary: number | undefined = stop;
    if (stop === undefined && this.asked.length > 0) {
      const asked = this.asked.shift()!;
      hold = asked.hold;
      boundary = asked.boundary;
    } else if (this.armed) {
      hold = this.armed;
      this.armed = undefined;
    }
    let list: readonly TranscriptionPrice[] = [];
    try {
      list = prices();
    } catch {
      // Unpriced (and so uncapped, or refused before its audio went): counted, not priced.
    }
    const item: Item = { holds: [hold ?? freeHold()], prices: list };
    while (boundary !== undefined && this.chunks.length > 0 && this.chunks[0]!.end <= boundary) item.holds.push(this.chunks.shift()!.hold);
    if (boundary !== undefined) this.assigned = Math.max(this.assigned, boundary);
    this.items.set(id, item);
    if (hold) return;
    // Committed with nothing held for it (two items from audio forwarded under one hold): held now, or the session ends.
    Promise.resolve(this.limits.applies()).then(async (applies) => {
      if (!applies) return;
      const late = await this.limits.hold(prices().map((p) => p.item(promptBytes)).reduce(dearer));
      if (this.closed || this.items.get(id) !== item) return late.settle(undefined);
      item.holds[0] = late;
    }).catch((err: ApiError) => this.hooks.uncovered(err));
  }

  /** Item `id`'s transcription is done (`usage` as reported) or failed (undefined): it settles. */
  ended(id: string, usage: TranscriptionUsage | undefined): void {
    const item = this.items.get(id);
    if (!item) return;
    this.items.delete(id);
    let priced: { micros: number; tokens: number; model: string } | undefined;
    for (const p of usage && item.prices.length > 0 ? item.prices : []) {
      const c = p.cost(usage!);
      if (!c) {
        priced = undefined;
        break;
      }
      if (!priced || c.micros > priced.micros) priced = { ...c, model: p.model };
    }
    const reported = usage?.kind === 'tokens' ? usage.usage : undefined;
    if (!priced) return this.hooks.settled(reported, chargeWhole(item.holds), item.prices[0]?.model);
    // Past the item's own holds (audio of a chunk its end cut, still held for the next item): carried to the next
    // settlement while some hold is open to cover it, else charged on the item's last hold.
    const open = this.chunks.length > 0 || this.items.size > 0 || this.asked.length > 0;
    this.debt = shareOut(item.holds, priced.micros + this.debt.micros, priced.tokens + this.debt.tokens, open);
    this.hooks.settled(reported, priced.micros, priced.model);
  }

  /** The provider refused a client's commit: its hold goes back (matched by event id, else the oldest when `oldest`). */
  refusedByProvider(eventId: string | undefined, oldest: boolean): void {
    const i = eventId !== undefined ? this.asked.findIndex((a) => a.eventId === eventId) : oldest ? 0 : -1;
    if (i < 0 || i >= this.asked.length) return;
    this.asked.splice(i, 1)[0]!.hold.refund();
  }

  /**
   * The session is over: every item, commit and chunk not settled is charged whole; so is the armed hold while audio
   * no item holds was forwarded (the server may have committed an item from it whose news never came), else it
   * goes back. Audio past the last commit goes back when the server commits nothing on its own (no turn detection).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const item of this.items.values()) this.hooks.settled(undefined, chargeWhole(item.holds), item.prices[0]?.model);
    if (this.armed && this.chunks.length > 0) this.asked.push({ hold: this.armed, eventId: undefined, boundary: this.written });
    else this.armed?.refund();
    this.armed = undefined;
    if (!this.serverCommits) {
      // Nothing commits audio past the last commit but the client: what no commit reached is never billed.
      const reached = this.asked.reduce((max, a) => Math.max(max, a.boundary), this.assigned);
      for (let i = this.chunks.length - 1; i >= 0 && this.chunks[i]!.start >= reached; i--) this.chunks.splice(i, 1)[0]!.hold.refund();
    }
    const rest = [...this.asked.map((a) => a.hold), ...this.chunks.map((c) => c.hold)];
    const micros = chargeWhole(rest);
    if (micros !== undefined) this.hooks.settled(undefined, micros, undefined);
    this.items.clear();
    this.asked.length = 0;
    this.chunks.length = 0;
    this.stops.clear();
    // The holds just charged whole covered the audio the debt is for.
    this.debt = { micros: 0, tokens: 0 };
  }

  private async arm(list: readonly TranscriptionPrice[], promptBytes: number): Promise<void> {
    this.arming ??= this.limits.hold(list.map((p) => p.item(promptBytes)).reduce(dearer)).finally(() => (this.arming = undefined));
    const hold = await this.arming;
    if (this.closed || !this.serverCommits || this.armed) {
      if (this.armed !== hold) hold.refund();
      return;
    }
    this.armed = hold;
  }
}

/** Whether a hold of `held` covers `worst` (micros and tokens). */
const covers = (held: WorstCase, worst: WorstCase): boolean => held.micros >= worst.micros && held.inputTokens + held.outputTokens >= worst.inputTokens + worst.outputTokens;

/** Charges every hold its whole worst case: the sum of those that held something (undefined: none did). */
function chargeWhole(holds: readonly Hold[]): number | undefined {
  let micros: number | undefined;
  for (const h of holds) {
    h.settle(undefined);
    if (h.held) micros = (micros ?? 0) + h.worst.micros;
  }
  return micros;
}

/**
 * Settles `holds` to `micros` and `tokens` between them, each taking at most its own worst case in turn. What is
 * left is returned when `carry` (another hold still covers it), else the last held one takes it.
 */
function shareOut(holds: readonly Hold[], micros: number, tokens: number, carry: boolean): { micros: number; tokens: number } {
  const held = holds.filter((h) => h.held);
  let m = micros;
  let t = tokens;
  held.forEach((h, i) => {
    const last = i === held.length - 1 && !carry;
    const cm = last ? m : Math.min(m, h.worst.micros);
    const ct = last ? t : Math.min(t, h.worst.inputTokens + h.worst.outputTokens);
    m -= cm;
    t -= ct;
    h.settle({ usage: { inputTokens: ct, outputTokens: 0 }, micros: cm });
  });
  for (const h of holds) if (!h.held) h.settle(undefined);
  return held.length > 0 && carry ? { micros: m, tokens: t } : { micros: 0, tokens: 0 };
}
