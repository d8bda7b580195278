/**
 * A realtime protocol: how the messages of a provider's WebSocket route are read, declared by the provider
 * (`websocket: { protocol }`) as it declares its usage shape. The core relays every message, masks the key in
 * the provider's, and keeps the money (the response book: holds under a cap, settlement from usage); the
 * protocol only says what each message means: whether a client message goes on, is refused with the
 * protocol's error event, or ends the session; when a response starts and ends and what usage it reported;
 * which model the session uses. What it needs of the core comes with each session (RealtimeHost).
 *
 * Each message passes a protocol on the hot path: read a provider message only when it may matter (a byte
 * search for a marker string before any JSON.parse), and allocate nothing for one that does not.
 */
import type { GatewayError, HostErrors } from './errors.js';
import type { TokenUsage } from './prices.js';

/** What becomes of one client message. */
export type RealtimeVerdict =
  | { readonly kind: 'forward' }
  /** Answered with the protocol's error event (or a close where it has none), not forwarded; the session goes on. */
  | { readonly kind: 'refuse'; readonly error: GatewayError; readonly eventId?: string }
  /** The session ends with `code` (the error event first, where the protocol has one). */
  | { readonly kind: 'close'; readonly code: number; readonly error: GatewayError; readonly eventId?: string };

/** The most one response (or one transcription item, or a stretch of audio) can cost: its tokens and µ$. */
export interface WorstCase {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly micros: number;
}

/** A worst case worked out only when a limit applies; throws the refusal (model_unpriced, max_tokens_required…). */
export type RealtimeWorst = () => WorstCase;

/**
 * The responses of one session and what holds each under the caps that apply. The protocol says when a response
 * may start, starts and ends; the book holds, refuses, settles and charges. Without a cap holds are free.
 */
export interface ResponseBook {
  /** Whether the provider may start responses on its own now (server turn detection). Off: the armed hold goes back. */
  setServerTurns(on: boolean): void;
  readonly serverTurnsOn: boolean;
  /** Responses started and not yet ended. */
  readonly runningCount: number;
  /** Arms the hold of the next server-started response now (in the background: a failure is retried by `cover`). */
  armAhead(worst: RealtimeWorst): void;
  /** Holds a response the client asks for before its message goes on; rejects with the refusal. */
  forClient(worst: RealtimeWorst, eventId: string | undefined, model?: string): Promise<void>;
  /** Before input that may let the provider start a response on its own goes on: that response is held, or this rejects. */
  cover(worst: RealtimeWorst): Promise<void>;
  /** The provider started response `id`. */
  started(id: string, worst: RealtimeWorst): void;
  /** Response `id` ended with the provider's final signal; `usage` as reported (undefined: none, charged whole). */
  ended(id: string, usage: TokenUsage | undefined, model?: string): void;
  /** The provider refused a client's request before starting it: matched by event id, else the newest or oldest asked. */
  refusedByProvider(eventId: string | undefined, which?: 'newest' | 'oldest'): void;
}

/** What a provider reported for one transcription item: tokens, or seconds for a model billed by duration. */
export type TranscriptionUsage = { readonly kind: 'tokens'; readonly usage: TokenUsage } | { readonly kind: 'duration'; readonly seconds: number };

/** One transcription model's bounds and costs (RealtimeHost.transcriptionPrice makes them). */
export interface TranscriptionPrice {
  readonly model: string;
  /** The worst case of `seconds` of appended audio. */
  audio(seconds: number): WorstCase;
  /** The worst case of one item beyond its audio: a prompt of `promptBytes`, the transcript, a duration rounded up. */
  item(promptBytes: number): WorstCase;
  /** What `usage` cost and how many tokens it counts; undefined when it does not fit the price (charged whole). */
  cost(usage: TranscriptionUsage): { micros: number; tokens: number } | undefined;
}

/** The prices a session may be transcribing at now (each model it may be using); throws price_unknown. */
export type TranscriptionPrices = () => readonly TranscriptionPrice[];

/**
 * A session's input-audio transcription and what holds it: appended audio, items the client or the server
 * commits, and their usage. The protocol says what each message means; the book keeps the money.
 */
export interface TranscriptionBook {
  /** Whether the provider commits items on its own (turn detection on). Off: the armed hold goes back. */
  setServerCommits(on: boolean): void;
  readonly serverCommitsOn: boolean;
  /** Rejects with the refusal when the prices cannot be worked out under a cap (price_unknown). */
  check(prices: TranscriptionPrices): Promise<void>;
  /** Holds the next item the server may commit on its own (a prompt of `promptBytes`), or rejects. */
  cover(prices: TranscriptionPrices, promptBytes: number): Promise<void>;
  /** Holds `ms` of audio forwarded before transcription turned on, or rejects. */
  holdBacklog(prices: TranscriptionPrices, ms: number): Promise<void>;
  /** An appended chunk of `ms` of audio: held before it goes when `transcribing` (the promise), else only counted. */
  append(prices: TranscriptionPrices, ms: number, promptBytes: number, transcribing: boolean): void | Promise<void>;
  /** A client's commit: the item it makes held before it goes; rejects with the refusal. */
  commit(prices: TranscriptionPrices, promptBytes: number, eventId: string | undefined): Promise<void>;
  /** A client's clear of the input buffer, forwarded. */
  clear(): void;
  /** The provider cleared the input buffer. */
  cleared(): void;
  /** The server heard item `itemId`'s speech end at `endMs` of the session's audio. */
  speechStopped(itemId: string, endMs: number): void;
  /** The provider committed item `itemId`. */
  committed(itemId: string, prices: TranscriptionPrices, promptBytes: number): void;
  /** Item `itemId`'s transcription ended with `usage` (undefined: failed or unreported, charged whole). */
  ended(itemId: string, usage: TranscriptionUsage | undefined): void;
  /** The provider refused a client's event (`eventId`); `bufferError`: an input-buffer error (a commit of nothing). */
  refusedByProvider(eventId: string | undefined, bufferError: boolean): void;
}

/** An upgrade's query parameters (a `URLSearchParams` at run time). */
export interface QueryParams {
  get(name: string): string | null;
}

/** What the core offers one session's protocol: the upgrade, the token's model scope, the books and the price helpers. */
export interface RealtimeHost {
  /** The model the upgrade named (its query or path), if any. */
  readonly model: string | undefined;
  /** The upgrade's query parameters (OpenAI's `intent=transcription`), without any that carries a key (`?key=`). */
  readonly query: QueryParams;
  /** Whether the token has a `models` scope. */
  readonly scoped: boolean;
  /** Whether the token's `models` scope allows `model` (true when it has none). */
  modelAllowed(model: string): boolean;
  /** A model named inside the session (a request's own): noted if it has no price. */
  seen(model: string): void;
  readonly errors: HostErrors;
  readonly book: ResponseBook;
  readonly transcriptions: TranscriptionBook;
  /**
   * One response's worst case at the dearest of `models` (a session whose model may be changing is held at the
   * dearer): its input the model's context window, its output `outputCap()` or the model's largest.
   */
  responseWorst(models: Iterable<string | undefined>, outputCap: () => number | undefined): RealtimeWorst;
  /** One request's worst case bounded as an HTTP request's body is (its length, its output cap, its media). */
  requestWorst(model: string | undefined, body: Record<string, unknown>, bytes: number): RealtimeWorst;
  /** The bounds and costs of transcribing with `model` on this route; throws price_unknown when one is missing. */
  transcriptionPrice(model: string | undefined): TranscriptionPrice;
}

/** One session's reading of its messages. */
export interface RealtimeSessionProtocol {
  /** Whether a binary client message is JSON too (Gemini); otherwise it ends the session with 1003. */
  readonly binaryJson: boolean;
  /** The model the session uses, as last known (the log line's, and the one its usage is priced at). */
  readonly model: string | undefined;
  /** One client message, parsed (one JSON object), and its length in bytes; may wait (a hold being made). */
  fromClient(message: Record<string, unknown>, bytes: number): RealtimeVerdict | Promise<RealtimeVerdict>;
  /**
   * One provider message, before masking; it is relayed whatever this does (a throw is logged, not fatal). A
   * Node.js `Buffer` at run time: `Buffer` methods (`indexOf` of a marker, `toString`) may be used on it.
   */
  fromServer(raw: Uint8Array): void;
  /** The text of the protocol's error event for a refusal, or undefined when it has none (the close reason says it). */
  errorEvent(error: GatewayError, eventId: string | undefined): string | undefined;
}

/** A realtime protocol, as a WebSocket route declares it (`websocket: { protocol }`). */
export interface RealtimeProtocol {
  /** For logs and checks: `openai-realtime`, `acme-live`. */
  readonly name: string;
  /** Called once per session, after the provider's side is open and before any message passes. */
  open(host: RealtimeHost): RealtimeSessionProtocol;
  /**
   * Whether a session opened with this query only transcribes input audio (OpenAI's `?intent=transcription`):
   * under a cap its price is checked before the upgrade.
   */
  transcribesFromStart?(query: QueryParams): boolean;
}
