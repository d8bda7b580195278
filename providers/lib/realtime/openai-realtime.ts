/**
 * OpenAI's Realtime API (and Azure's, the same events), GA and beta shapes:
 *
 * - `session.update`: a `model` outside the token's `models` scope is refused
 *   (error event, not forwarded); its output cap (`max_output_tokens`, beta
 *   `max_response_output_tokens`) and turn detection (`audio.input.
 *   turn_detection`, beta `turn_detection`) are noted. Turning server turns
 *   on is held first (the response the server may then start).
 * - `response.create`: held at the response's (or the session's) output cap
 *   before it is forwarded; refused with an error event otherwise.
 * - `input_audio_buffer.append` / `commit` while server turns are on: the
 *   next server-started response must be held (ResponseBook.cover), or the
 *   session gets an error event and closes with 1008.
 * - Input-audio transcription (`input_audio_transcription`,
 *   `audio.input.transcription`, `transcription_session.update`, or
 *   `?intent=transcription`, which starts no responses): each append's audio,
 *   and each item the buffer's commit makes, is held before it is forwarded
 *   (openai-transcription.ts; the host's TranscriptionBook); refused with an error event
 *   otherwise (`price_unknown` when it cannot be priced). Each
 *   `conversation.item.input_audio_transcription.completed` settles with its
 *   `usage`.
 * - From the server: `session.created` / `session.updated` are the truth of
 *   the model, the cap and turn detection (server turns on by default: the
 *   next response is armed as the session opens); `response.created` starts,
 *   `response.done` (with `usage`) settles; an `error` about a client's
 *   `response.create` gives its hold back.
 *
 * Turn detection switched off by the client is believed only once the server
 * confirms it (`session.updated`): until then the armed hold stays.
 */
import type { GatewayError, QueryParams, RealtimeHost, RealtimeProtocol, RealtimeSessionProtocol, RealtimeVerdict, TokenUsage } from '@keyward/sdk';
import { OpenAITranscription } from './openai-transcription.js';
import { FORWARD, forwardOrRefuse, capOf, countOf, hasMarker, markers, objectOf, openaiErrorEvent, parseObject, stringOf } from './shared.js';

/** Always read (a clear's answer too: each client clear is matched to it in order). */
const SERVER_MARKERS = markers('session.created', 'session.updated', 'response.created', 'response.done', 'error', 'input_audio_buffer.cleared');
/** Read once the session may transcribe: its items and their usage. */
const TRANSCRIPTION_MARKERS = markers(
  'transcription_session.created', 'transcription_session.updated', 'input_audio_buffer.committed', 'input_audio_buffer.speech_stopped',
  'input_audio_buffer.timeout_triggered', 'conversation.item.input_audio_transcription.completed', 'conversation.item.input_audio_transcription.failed',
);

/** The Realtime API's `usage` (response.done) as TokenUsage: audio apart from text, cached tokens of each. */
export function realtimeUsage(u: Record<string, unknown> | undefined): TokenUsage | undefined {
  if (!u) return undefined;
  const input = countOf(u.input_tokens);
  const output = countOf(u.output_tokens);
  if (input === undefined || output === undefined) return undefined;
  const inDetails = objectOf(u.input_token_details);
  const outDetails = objectOf(u.output_token_details);
  const cachedDetails = objectOf(inDetails?.cached_tokens_details);
  const usage: TokenUsage = { inputTokens: input, outputTokens: output };
  const cached = countOf(inDetails?.cached_tokens);
  if (cached !== undefined) usage.cachedInputTokens = cached;
  const audioIn = countOf(inDetails?.audio_tokens);
  if (audioIn !== undefined) usage.audioInputTokens = audioIn;
  const cachedAudio = countOf(cachedDetails?.audio_tokens);
  if (cachedAudio !== undefined) usage.cachedAudioInputTokens = cachedAudio;
  const audioOut = countOf(outDetails?.audio_tokens);
  if (audioOut !== undefined) usage.audioOutputTokens = audioOut;
  return usage;
}

/** The turn detection a session object sets: true/false for on/off (a server that only detects, never responds, is off), null: not named. */
function serverTurnsOf(session: Record<string, unknown>): boolean | null {
  const audioInput = objectOf(objectOf(session.audio)?.input);
  const key = audioInput && 'turn_detection' in audioInput ? audioInput : 'turn_detection' in session ? session : undefined;
  if (!key) return null;
  const td = key.turn_detection;
  if (td === null) return false;
  const o = objectOf(td);
  return o ? o.create_response !== false : null;
}

const capIn = (o: Record<string, unknown>): number | undefined | null => {
  const ga = capOf(o.max_output_tokens);
  return ga !== null ? ga : capOf(o.max_response_output_tokens);
};

export class OpenAIRealtime implements RealtimeSessionProtocol {
  readonly binaryJson = false;
  private readonly host: RealtimeHost;
  private confirmedModel: string | undefined;
  /** A model a client's session.update asked for, until the server confirms one. */
  private askedModel: string | undefined;
  /** Output caps: the server's confirmed one and the client's asked one (undefined: the model's largest). */
  private confirmedCap: number | undefined = undefined;
  private askedCap: number | undefined | null = null;

  private readonly transcription: OpenAITranscription;
  /** A transcription session (`?intent=transcription`, or the server says so) starts no responses. */
  private transcriptionOnly: boolean;
  /** Whether the session has ever transcribed (then the server's transcription events are read). */
  private transcribed: boolean;

  constructor(host: RealtimeHost) {
    this.host = host;
    this.transcriptionOnly = transcribesOnly(host.query);
    this.transcribed = this.transcriptionOnly;
    this.confirmedModel = this.transcriptionOnly ? undefined : host.model;
    this.transcription = new OpenAITranscription(host, this.transcriptionOnly);
    // Server turn detection is on when a conversation session opens.
    host.book.setServerTurns(!this.transcriptionOnly);
  }

  get model(): string | undefined {
    return this.confirmedModel;
  }

  /** The session's output cap: the larger of the confirmed and the asked one (undefined, the model's largest, beats any number). */
  private readonly sessionCap = (): number | undefined => {
    if (this.askedCap === null) return this.confirmedCap;
    if (this.askedCap === undefined || this.confirmedCap === undefined) return undefined;
    return Math.max(this.askedCap, this.confirmedCap);
  };

  private worst(cap: () => number | undefined) {
    return this.host.responseWorst(this.askedModel !== undefined ? [this.confirmedModel, this.askedModel] : [this.confirmedModel], cap);
  }

  fromClient(message: Record<string, unknown>): RealtimeVerdict | Promise<RealtimeVerdict> {
    const type = message.type;
    const eventId = stringOf(message.event_id);
    if (type === 'session.update' || type === 'transcription_session.update') return this.sessionUpdate(objectOf(message.session) ?? {}, eventId, type === 'session.update');
    if (type === 'response.create') {
      const cap = capIn(objectOf(message.response) ?? {});
      return forwardOrRefuse(this.host.book.forClient(this.worst(cap === null ? this.sessionCap : () => cap), eventId), eventId);
    }
    if (type === 'input_audio_buffer.append' || type === 'input_audio_buffer.commit') {
      this.transcribed ||= this.transcription.transcribing;
      const transcribe = () => (type === 'input_audio_buffer.append' ? this.transcription.append(message) : this.transcription.commit(eventId));
      if (this.host.book.serverTurnsOn) return this.inputVerdict(this.host.book.cover(this.worst(this.sessionCap)), transcribe, eventId);
      const held = transcribe();
      return held ? forwardOrRefuse(held, eventId) : FORWARD;
    }
    if (type === 'input_audio_buffer.clear') this.transcription.clear();
    return FORWARD;
  }

  /** Input forwarded once a server-started response is covered (else the session ends), then its transcription held (else refused). */
  private async inputVerdict(covering: Promise<void>, transcribe: () => void | Promise<void>, eventId: string | undefined): Promise<RealtimeVerdict> {
    try {
      await covering;
    } catch (err) {
      return { kind: 'close', code: 1008, error: err as GatewayError, eventId };
    }
    try {
      await transcribe();
    } catch (err) {
      return { kind: 'refuse', error: err as GatewayError, eventId };
    }
    return FORWARD;
  }

  /** A session update (`conversation`: session.update; else transcription_session.update): refused, nothing it asks counts. */
  private async sessionUpdate(session: Record<string, unknown>, eventId: string | undefined, conversation: boolean): Promise<RealtimeVerdict> {
    const model = conversation ? stringOf(session.model) : undefined;
    if (model !== undefined && !this.host.modelAllowed(model)) return { kind: 'refuse', error: this.host.errors.modelNotAllowed(model), eventId };
    const turns = conversation && !this.transcriptionOnly ? serverTurnsOf(session) : null;
    const cap = conversation ? capIn(session) : null;
    const before = { model: this.askedModel, cap: this.askedCap, turns: this.host.book.serverTurnsOn };
    if (model !== undefined) this.askedModel = model;
    if (cap !== null) this.askedCap = cap;
    try {
      if (turns === true && !this.host.book.serverTurnsOn) {
        this.host.book.setServerTurns(true);
        await this.host.book.cover(this.worst(this.sessionCap));
      }
      const refusal = await this.transcription.update(session, eventId);
      if (refusal) throw refusal;
    } catch (err) {
      this.host.book.setServerTurns(before.turns);
      this.askedModel = before.model;
      this.askedCap = before.cap;
      return { kind: 'refuse', error: err as GatewayError, eventId };
    }
    this.transcribed ||= this.transcription.transcribing;
    return FORWARD;
  }

  fromServer(raw: Uint8Array): void {
    const marked = hasMarker(raw, SERVER_MARKERS) || (this.transcribed && hasMarker(raw, TRANSCRIPTION_MARKERS));
    const event = marked ? parseObject(raw) : undefined;
    if (!event) return;
    const book = this.host.book;
    const type = stringOf(event.type) ?? '';
    switch (type) {
      case 'session.created':
      case 'session.updated':
      case 'transcription_session.created':
      case 'transcription_session.updated': {
        const session = objectOf(event.session) ?? {};
        this.transcriptionOnly = this.transcription.confirmed(session, type.endsWith('.updated')) || this.transcriptionOnly || type.startsWith('transcription_session.');
        this.transcribed ||= this.transcription.transcribing;
        if (this.transcriptionOnly) return book.setServerTurns(false);
        const model = stringOf(session.model);
        if (model !== undefined) this.confirmedModel = model;
        this.askedModel = undefined;
        const cap = capIn(session);
        if (cap !== null) this.confirmedCap = cap;
        this.askedCap = null;
        const turns = serverTurnsOf(session);
        if (turns !== null) book.setServerTurns(turns);
        book.armAhead(this.worst(this.sessionCap));
        return;
      }
      case 'response.created': {
        const id = stringOf(objectOf(event.response)?.id);
        if (id !== undefined) book.started(id, this.worst(this.sessionCap));
        return;
      }
      case 'response.done': {
        const response = objectOf(event.response);
        const id = stringOf(response?.id);
        if (id !== undefined) book.ended(id, realtimeUsage(objectOf(response?.usage)));
        return;
      }
      case 'error': {
        const error = objectOf(event.error);
        const code = stringOf(error?.code);
        book.refusedByProvider(stringOf(error?.event_id), code === 'conversation_already_has_active_response' ? 'newest' : undefined);
        this.transcription.fromServer(type, event);
        return;
      }
      default:
        this.transcription.fromServer(type, event);
    }
  }

  errorEvent(err: GatewayError, eventId: string | undefined): string {
    return openaiErrorEvent(err, eventId);
  }
}

/** `?intent=transcription`: a session that only transcribes its input audio (it starts no responses). */
const transcribesOnly = (query: QueryParams): boolean => query.get('intent') === 'transcription';

/** OpenAI's Realtime API (Azure's too), as the OpenAI and Azure providers' realtime routes declare it. */
export const openAIRealtime: RealtimeProtocol = Object.freeze({
  name: 'openai-realtime',
  open: (host: RealtimeHost) => new OpenAIRealtime(host),
  transcribesFromStart: transcribesOnly,
});
