/**
 * Input-audio transcription in OpenAI's Realtime API (and Azure's): which
 * settings turn it on and price it, read from the client's `session.update` /
 * `transcription_session.update` and the server's `session.created` /
 * `session.updated` / `transcription_session.*`, in the GA shape
 * (`audio.input.transcription`, `audio.input.format`, `audio.input.turn_detection`)
 * and the beta one (`input_audio_transcription`, `input_audio_format`,
 * `turn_detection`); `?intent=transcription` turns it on from the start. The
 * money is the TranscriptionBook's (../transcription.ts): this file tells it
 * what each message means.
 *
 * As for the session's model, a setting the client asks for counts at once
 * where it could cost more (a transcription turned on, another model, a slower
 * format, the server committing on its own) and is believed off only once the
 * server confirms it; until then both are priced, at the dearer. An audio chunk
 * is measured at the slowest byte rate its format may have (pcm16 at 24 kHz:
 * 48,000 bytes a second; G.711: 8,000), from its base64 length; a format that
 * cannot be measured is refused under a cap (`price_unknown`), like a
 * transcription model with no price or no bound.
 */
import type { GatewayError, RealtimeHost, TokenUsage, TranscriptionBook, TranscriptionPrices, TranscriptionUsage } from '@keyward/sdk';
import { countOf, objectOf, stringOf } from './shared.js';

/** Bytes a second of the formats the API takes (16-bit PCM at its rate, G.711 at 8 kHz). */
const PCM16_24K = 48_000;
const G711 = 8_000;

/** A format as bytes a second, or the value as sent when it cannot be measured. */
type Rate = number | { readonly unknown: string };

/** The transcription-related settings a session object names (undefined: not named). */
interface Settings {
  /** null: off; otherwise on, with its model (if named) and the settings' length (the prompt's bound). */
  transcription?: { model: string | undefined; bytes: number } | null;
  rate?: Rate;
  /** Whether the server commits items on its own (turn detection of any kind). */
  serverCommits?: boolean;
  /** The session only transcribes (GA `type: "transcription"`): it starts no responses. */
  transcriptionOnly: boolean;
}

function rateOf(format: unknown): Rate {
  if (format === 'pcm16') return PCM16_24K;
  if (format === 'g711_ulaw' || format === 'g711_alaw') return G711;
  const o = objectOf(format);
  if (o?.type === 'audio/pcmu' || o?.type === 'audio/pcma') return G711;
  if (o?.type === 'audio/pcm') {
    if (o.rate === undefined) return PCM16_24K;
    const hz = countOf(o.rate);
    if (hz !== undefined && hz > 0) return hz * 2;
  }
  return { unknown: (JSON.stringify(format) ?? String(format)).slice(0, 80) };
}

function settingsOf(session: Record<string, unknown>): Settings {
  const input = objectOf(objectOf(session.audio)?.input);
  const settings: Settings = { transcriptionOnly: session.type === 'transcription' };
  const named = (key: string, beta: string): [boolean, unknown] =>
    input && key in input ? [true, input[key]] : beta in session ? [true, session[beta]] : [false, undefined];
  const [hasT, t] = named('transcription', 'input_audio_transcription');
  if (hasT) {
    const o = objectOf(t);
    settings.transcription = t === null ? null : { model: stringOf(o?.model), bytes: Buffer.byteLength(JSON.stringify(t) ?? '') };
  }
  const [hasF, f] = named('format', 'input_audio_format');
  if (hasF) settings.rate = rateOf(f);
  const [hasD, d] = named('turn_detection', 'turn_detection');
  if (hasD) settings.serverCommits = d !== null;
  return settings;
}

/** A transcription's `usage` (`{type: "tokens", …}` or `{type: "duration", seconds}`), or undefined when malformed. */
export function transcriptionUsage(u: Record<string, unknown> | undefined): TranscriptionUsage | undefined {
  if (!u) return undefined;
  if (u.type === 'duration') {
    const s = u.seconds;
    return typeof s === 'number' && Number.isFinite(s) && s >= 0 ? { kind: 'duration', seconds: s } : undefined;
  }
  const input = countOf(u.input_tokens);
  const output = countOf(u.output_tokens);
  if ((u.type !== undefined && u.type !== 'tokens') || input === undefined || output === undefined) return undefined;
  const usage: TokenUsage = { inputTokens: input, outputTokens: output };
  const audio = countOf(objectOf(u.input_token_details)?.audio_tokens);
  if (audio !== undefined) usage.audioInputTokens = Math.min(audio, input);
  return { kind: 'tokens', usage };
}

/** What one update forwarded asked for (a field undefined: not named), and its event id. */
interface Asked {
  readonly transcription: Settings['transcription'];
  readonly rate: Rate | undefined;
  readonly serverCommits: boolean | undefined;
  readonly eventId: string | undefined;
}

/** Updates the provider has not answered yet, at most: more are refused (each is remembered until it is). */
const MAX_PENDING = 64;

/** Bytes of base64 text `s` decodes to, at most (padding or not). */
const decodedBytes = (s: string): number => Math.ceil((s.length * 3) / 4);

export class OpenAITranscription {
  /** What the server confirmed (or the session opened with). */
  private on: boolean;
  private model: string | undefined;
  private bytes = 0;
  private rate: Rate = PCM16_24K;
  private serverCommits = true;
  /**
   * What each update forwarded and not yet confirmed asked for, in order (each `*.updated` confirms the oldest; an
   * `error` naming its event id drops it), and the one being checked: all count until confirmed.
   */
  private readonly pending: Asked[] = [];
  private candidate: Asked | undefined;
  /** Audio forwarded while nothing transcribed it, since the buffer last emptied (held if transcription turns on). */
  private unheldMs = 0;

  private readonly book: TranscriptionBook;
  private readonly host: RealtimeHost;
  readonly intent: boolean;

  constructor(host: RealtimeHost, intent: boolean) {
    this.host = host;
    this.intent = intent;
    this.book = host.transcriptions;
    this.on = intent;
    // `?intent=transcription&model=…` (Azure's deployment) names the transcription model.
    this.model = intent ? host.model : undefined;
    // Turn detection is on when a session opens: the server may commit items on its own.
    this.book.setServerCommits(true);
  }

  private get asks(): readonly Asked[] {
    return this.candidate ? [...this.pending, this.candidate] : this.pending;
  }

  /** Whether input audio may be transcribed now (asked for, confirmed, or the session's intent). */
  get transcribing(): boolean {
    return this.on || this.asks.some((a) => a.transcription !== undefined && a.transcription !== null);
  }

  /** The prices the session may be transcribing at (the confirmed model and every one asked); throws price_unknown. */
  private readonly prices: TranscriptionPrices = () => {
    for (const r of [this.rate, ...this.asks.map((a) => a.rate)]) {
      if (typeof r === 'object') throw this.host.errors.priceUnknown(`Under a cap, realtime transcription must be priced: the input audio format ${r.unknown} (\`audio.input.format\` / \`input_audio_format\`) cannot be measured. Nothing was forwarded.`);
    }
    const named = new Set<string>();
    for (const m of [this.on ? this.model : undefined, ...this.asks.map((a) => a.transcription?.model)]) if (m !== undefined) named.add(m);
    const models = named.size > 0 ? [...named] : [undefined];
    return models.map((m) => this.host.transcriptionPrice(m));
  };

  private get promptBytes(): number {
    return Math.max(this.bytes, ...this.asks.map((a) => a.transcription?.bytes ?? 0));
  }

  /** Milliseconds of `bytes` of audio at the slowest rate the session may be using. */
  private ms(bytes: number): number {
    const rates = [this.rate, ...this.asks.map((a) => a.rate ?? this.rate)].map((r) => (typeof r === 'number' ? r : G711));
    return (bytes * 1000) / Math.min(...rates);
  }

  /** Server commits count on while confirmed on or asked on by an update not yet confirmed. */
  private recount(): void {
    this.book.setServerCommits(this.serverCommits || this.pending.some((a) => a.serverCommits === true));
  }

  /**
   * A client's session update (`eventId` its event's): what it asks for counts at once, and, under a cap, is checked
   * (and the audio forwarded unheld before transcription turns on is held). Resolves to the refusal, after which
   * nothing it asked counts.
   */
  async update(session: Record<string, unknown>, eventId: string | undefined): Promise<GatewayError | undefined> {
    if (this.pending.length >= MAX_PENDING) return this.host.errors.invalidRequest(`${MAX_PENDING} session updates are still unanswered by the provider; wait for its session.updated.`);
    const s = settingsOf(session);
    const wasOn = this.transcribing;
    const commitsBefore = this.book.serverCommitsOn;
    this.candidate = { transcription: s.transcription, rate: s.rate, serverCommits: s.serverCommits, eventId };
    if (s.serverCommits === true) this.book.setServerCommits(true);
    // Checked when it turns transcription or server commits on, or changes what it costs (never when it turns one off).
    const costsMore = !wasOn || (s.transcription !== undefined && s.transcription !== null) || s.rate !== undefined || (s.serverCommits === true && !commitsBefore);
    if (this.transcribing && costsMore) {
      try {
        await this.book.check(this.prices);
        // (An update that turns server commits off too leaves none to cover once the server applies it.)
        if (s.serverCommits !== false) await this.book.cover(this.prices, this.promptBytes);
        if (!wasOn && this.unheldMs > 0) await this.book.holdBacklog(this.prices, this.unheldMs);
      } catch (err) {
        this.candidate = undefined;
        this.book.setServerCommits(commitsBefore);
        return err as GatewayError;
      }
      if (!wasOn) this.unheldMs = 0;
    }
    this.pending.push(this.candidate);
    this.candidate = undefined;
    this.recount();
    return undefined;
  }

  /** An `input_audio_buffer.append`: its audio held before it goes while transcribing (the promise), else counted. */
  append(message: Record<string, unknown>): void | Promise<void> {
    const audio = message.audio;
    const ms = this.ms(typeof audio === 'string' ? decodedBytes(audio) : 0);
    if (!this.transcribing) {
      this.unheldMs += ms;
      return this.book.append(this.prices, ms, 0, false);
    }
    return this.book.append(this.prices, ms, this.promptBytes, true);
  }

  /** An `input_audio_buffer.commit`: the item it makes held first while transcribing. */
  commit(eventId: string | undefined): Promise<void> | undefined {
    this.unheldMs = 0;
    return this.transcribing ? this.book.commit(this.prices, this.promptBytes, eventId) : undefined;
  }

  /** An `input_audio_buffer.clear`, forwarded. */
  clear(): void {
    this.unheldMs = 0;
    this.book.clear();
  }

  /**
   * A server session object: the truth of the settings, confirming the oldest update still unconfirmed when it
   * answers one (`*.updated`; `*.created` answers none). Returns whether the session only transcribes.
   */
  confirmed(session: Record<string, unknown>, answersUpdate: boolean): boolean {
    const s = settingsOf(session);
    if (answersUpdate) this.pending.shift();
    if (s.transcription !== undefined) {
      this.on = s.transcription !== null || this.intent;
      this.model = s.transcription?.model ?? (this.intent ? this.model : undefined);
      this.bytes = s.transcription?.bytes ?? 0;
    }
    if (s.rate !== undefined) this.rate = s.rate;
    if (s.serverCommits !== undefined) this.serverCommits = s.serverCommits;
    this.recount();
    return s.transcriptionOnly;
  }

  /** A provider event about the input buffer or a transcription (the caller has parsed it; `type` is its type). */
  fromServer(type: string, event: Record<string, unknown>): void {
    const itemId = stringOf(event.item_id);
    switch (type) {
      case 'input_audio_buffer.speech_stopped':
      case 'input_audio_buffer.timeout_triggered': {
        const end = countOf(event.audio_end_ms);
        if (itemId !== undefined && end !== undefined) this.book.speechStopped(itemId, end);
        return;
      }
      case 'input_audio_buffer.committed':
        this.unheldMs = 0;
        if (itemId !== undefined && this.transcribing) this.book.committed(itemId, this.prices, this.promptBytes);
        return;
      case 'input_audio_buffer.cleared':
        this.book.cleared();
        return;
      case 'conversation.item.input_audio_transcription.completed':
        if (itemId !== undefined) this.book.ended(itemId, transcriptionUsage(objectOf(event.usage)));
        return;
      case 'conversation.item.input_audio_transcription.failed':
        if (itemId !== undefined) this.book.ended(itemId, undefined);
        return;
      case 'error': {
        const error = objectOf(event.error);
        const eventId = stringOf(error?.event_id);
        // The provider refused an update: it will never confirm it.
        const i = eventId === undefined ? -1 : this.pending.findIndex((a) => a.eventId === eventId);
        if (i >= 0) {
          this.pending.splice(i, 1);
          this.recount();
        }
        this.book.refusedByProvider(eventId, stringOf(error?.code)?.startsWith('input_audio_buffer') === true);
        return;
      }
    }
  }
}
