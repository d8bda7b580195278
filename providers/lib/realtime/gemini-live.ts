/**
 * Gemini Live (BidiGenerateContent over WebSocket): the first client message
 * is `setup` (the model, generation settings, and whether the server detects
 * the user's turns itself); then `clientContent`, `realtimeInput` and
 * `toolResponse`. The server answers with `setupComplete`, then turns of
 * `serverContent` (and `toolCall`), each ending with `turnComplete`, with
 * `usageMetadata` for the turn.
 *
 * - `setup`: a model outside the token's `models` scope ends the session
 *   (1008, the reason in the close frame: Live has no error event). A
 *   session takes one `setup`: a second ends it the same way
 *   (`invalid_request`), never forwarded, so it can never change the model or
 *   settings a session's turns are priced at.
 * - A turn the client asks for (`clientContent` with `turnComplete`, a
 *   `toolResponse`, `activityEnd` under manual activity detection) is held
 *   before it is forwarded; one that cannot be held ends the session (1008).
 * - `realtimeInput` under automatic activity detection (the default): the
 *   turn the server may start must be held (ResponseBook.cover), or 1008.
 * - A turn starts at the server's first message of it and settles at its
 *   `turnComplete` with the `usageMetadata` seen in the turn (none: its whole
 *   worst case); an `interrupted` turn ends there, like a cut one unless usage
 *   came with it. Audio, image and video tokens are priced at `audio`.
 */
import type { GatewayError, RealtimeHost, RealtimeProtocol, RealtimeSessionProtocol, RealtimeVerdict, RealtimeWorst, TokenUsage } from '@keyward/sdk';
import { FORWARD, forwardOrClose, countOf, markers, objectOf, readMarked, stringOf } from './shared.js';

const SERVER_MARKERS = markers('setupComplete', 'serverContent', 'toolCall', 'usageMetadata');

/** `models/gemini-x` (or a Vertex resource name ending in `/models/gemini-x`) → `gemini-x`. */
export const liveModelName = (name: string): string => name.slice(name.lastIndexOf('/') + 1);

/** Tokens of the non-text modalities in a Live `*TokensDetails` list (audio, image, video: priced at `audio`). */
function mediaTokens(details: unknown): number | undefined {
  if (!Array.isArray(details)) return undefined;
  let n = 0;
  for (const d of details) {
    const o = objectOf(d);
    if (o && o.modality !== 'TEXT') n += countOf(o.tokenCount) ?? 0;
  }
  return n;
}

/** Live's `usageMetadata` as TokenUsage. */
export function liveUsage(u: Record<string, unknown> | undefined): TokenUsage | undefined {
  if (!u) return undefined;
  const prompt = countOf(u.promptTokenCount);
  const response = countOf(u.responseTokenCount) ?? countOf(u.candidatesTokenCount);
  if (prompt === undefined && response === undefined) return undefined;
  const usage: TokenUsage = {
    inputTokens: (prompt ?? 0) + (countOf(u.toolUsePromptTokenCount) ?? 0),
    outputTokens: (response ?? 0) + (countOf(u.thoughtsTokenCount) ?? 0),
  };
  const cached = countOf(u.cachedContentTokenCount);
  if (cached !== undefined) usage.cachedInputTokens = cached;
  const audioIn = mediaTokens(u.promptTokensDetails);
  if (audioIn !== undefined) usage.audioInputTokens = audioIn;
  const cachedAudio = mediaTokens(u.cacheTokensDetails);
  if (cachedAudio !== undefined) usage.cachedAudioInputTokens = cachedAudio;
  const audioOut = mediaTokens(u.responseTokensDetails);
  if (audioOut !== undefined) usage.audioOutputTokens = audioOut;
  return usage;
}

export class GeminiLive implements RealtimeSessionProtocol {
  readonly binaryJson = true;
  private readonly host: RealtimeHost;
  model: string | undefined;
  private cap: number | undefined;
  /** The turn running now (its id in the book), and the usage seen in it. */
  private turn: string | undefined;
  private turnUsage: TokenUsage | undefined;
  private turns = 0;
  private setupSeen = false;

  constructor(host: RealtimeHost) {
    this.host = host;
    this.model = host.model;
  }

  /** One turn's worst case at the session's model and output cap (worked out when a limit applies). */
  private readonly worst: RealtimeWorst = () => this.host.responseWorst([this.model], () => this.cap)();

  fromClient(message: Record<string, unknown>): RealtimeVerdict | Promise<RealtimeVerdict> {
    const book = this.host.book;
    const setup = objectOf(message.setup);
    if (message.setup !== undefined && this.setupSeen) return { kind: 'close', code: 1008, error: this.host.errors.invalidRequest('A Gemini Live session takes one `setup` message; a second one is refused.', 'setup') };
    if (setup) {
      this.setupSeen = true;
      const name = stringOf(setup.model);
      const model = name === undefined ? undefined : liveModelName(name);
      if (this.host.scoped && (model === undefined || !this.host.modelAllowed(model))) return { kind: 'close', code: 1008, error: this.host.errors.modelNotAllowed(model ?? '(none)') };
      this.model = model;
      const generation = objectOf(setup.generationConfig) ?? objectOf(setup.generation_config);
      this.cap = countOf(generation?.maxOutputTokens ?? generation?.max_output_tokens);
      const input = objectOf(setup.realtimeInputConfig) ?? objectOf(setup.realtime_input_config);
      const detection = objectOf(input?.automaticActivityDetection) ?? objectOf(input?.automatic_activity_detection);
      book.setServerTurns(detection?.disabled !== true);
      return FORWARD;
    }
    const content = objectOf(message.clientContent) ?? objectOf(message.client_content);
    const realtime = objectOf(message.realtimeInput) ?? objectOf(message.realtime_input);
    const asks = (content && (content.turnComplete === true || content.turn_complete === true))
      || message.toolResponse !== undefined || message.tool_response !== undefined
      || (realtime && !book.serverTurnsOn && (realtime.activityEnd !== undefined || realtime.activity_end !== undefined));
    if (asks) return forwardOrClose(book.forClient(this.worst, undefined));
    if (realtime && book.serverTurnsOn) return forwardOrClose(book.cover(this.worst));
    return FORWARD;
  }

  fromServer(raw: Uint8Array): void {
    const message = readMarked(raw, SERVER_MARKERS);
    if (!message) return;
    const book = this.host.book;
    if (message.setupComplete !== undefined) book.armAhead(this.worst);
    const content = objectOf(message.serverContent);
    const usage = liveUsage(objectOf(message.usageMetadata));
    const turnStuff = (content && (content.modelTurn !== undefined || content.turnComplete === true || content.generationComplete === true)) || message.toolCall !== undefined;
    if (turnStuff && this.turn === undefined) {
      this.turn = `turn-${++this.turns}`;
      this.turnUsage = undefined;
      book.started(this.turn, this.worst);
    }
    if (usage && this.turn !== undefined) this.turnUsage = usage;
    if (this.turn !== undefined && content && (content.turnComplete === true || content.interrupted === true)) {
      // A completed turn's usage is final; an interrupted one's only when it came with the interruption.
      book.ended(this.turn, content.turnComplete === true ? this.turnUsage : usage);
      this.turn = undefined;
      this.turnUsage = undefined;
    }
  }

  /** Live has no error event: a refusal closes the session with its reason. */
  errorEvent(_error: GatewayError, _eventId: string | undefined): undefined {
    return undefined;
  }
}

/** Gemini Live, as the Gemini and Vertex providers' Live routes declare it. */
export const geminiLive: RealtimeProtocol = Object.freeze({
  name: 'gemini-live',
  open: (host: RealtimeHost) => new GeminiLive(host),
});
