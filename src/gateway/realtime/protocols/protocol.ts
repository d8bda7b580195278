/**
 * What a session's message protocol is to the relay (session.ts), and the
 * pieces the three protocols share. A protocol reads each client message (JSON,
 * parsed by the relay) and says whether it goes on, is answered with an error
 * and dropped, or ends the session; it reads the provider's messages to follow
 * the responses (ResponseBook) and the session's settings, never changing them.
 *
 * Server messages are parsed only when they may matter: a message that holds
 * none of the protocol's marker strings (`"response.done"` …, quotes included,
 * which no JSON string value can hold unescaped) is relayed unread. Audio
 * deltas, most of the traffic, cost one byte search per marker.
 */
import { randomBytes } from 'node:crypto';
import { Errors, type ApiError } from '../../../errors.js';
import type { PriceEntry } from '../../../pricing/prices.js';
import type { ResponseBook, Worst } from '../book.js';
import type { TranscriptionBook } from '../transcription.js';
import { responseWorstCase, type WorstCase } from '../limits.js';

export type Verdict =
  | { readonly kind: 'forward' }
  /** Answered with an error event, not forwarded; the session goes on. */
  | { readonly kind: 'refuse'; readonly error: ApiError; readonly eventId?: string }
  /** The session ends (the error event first, where the protocol has one). */
  | { readonly kind: 'close'; readonly code: number; readonly error: ApiError; readonly eventId?: string };

export const FORWARD: Verdict = Object.freeze({ kind: 'forward' });

/** Forwarded once `held` resolves; its refusal ends the session (1008). */
export const forwardOrClose = (held: Promise<void>, eventId?: string): Promise<Verdict> =>
  held.then(() => FORWARD, (err: ApiError) => ({ kind: 'close', code: 1008, error: err, ...(eventId !== undefined ? { eventId } : {}) }));

/** Forwarded once `held` resolves; its refusal is answered with an error event (the session goes on). */
export const forwardOrRefuse = (held: Promise<void>, eventId?: string): Promise<Verdict> =>
  held.then(() => FORWARD, (err: ApiError) => ({ kind: 'refuse', error: err, ...(eventId !== undefined ? { eventId } : {}) }));

export interface ProtocolDeps {
  readonly book: ResponseBook;
  /** Whether the token has a `models` scope, and whether it allows `model` (true when it has none). */
  readonly scoped: boolean;
  modelAllowed(model: string): boolean;
  price(model: string): PriceEntry | undefined;
  /** A request inside the session named `model` (the Responses API's response.create): noted if it has no price of its own. */
  seen(model: string): void;
  /** The model the upgrade named (its query), if any. */
  readonly model: string | undefined;
  /** The upgrade's query parameters (OpenAI's `intent=transcription`). */
  readonly query: URLSearchParams;
  /** The route's declared bound of tokens a second of input audio is billed (WebSocketRoute), if any. */
  readonly inputAudioTokensPerSecond: number | undefined;
  /** The session's input-audio transcriptions and what holds them. */
  readonly transcriptions: TranscriptionBook;
}

export interface SessionProtocol {
  /** Whether a binary client message is JSON too (Gemini); otherwise it ends the session with 1003. */
  readonly binaryJson: boolean;
  /** The model the session uses, as last known (the log line's). */
  readonly model: string | undefined;
  /** One client message, parsed; may wait (a hold being made). */
  fromClient(message: Record<string, unknown>, bytes: number): Verdict | Promise<Verdict>;
  /** One provider message, before masking (the relay sends it on whatever this does). */
  fromServer(raw: Buffer): void;
  /** The text of an error event for a refusal, or undefined when the protocol has none (then the close reason says it). */
  errorEvent(err: ApiError, eventId: string | undefined): string | undefined;
}

/** Marker strings as bytes, made once per protocol. */
export const markers = (...names: string[]): readonly Buffer[] => names.map((n) => Buffer.from(`"${n}"`));

export function hasMarker(raw: Buffer, list: readonly Buffer[]): boolean {
  for (const m of list) if (raw.indexOf(m) !== -1) return true;
  return false;
}

/** A provider message worth reading (it holds one of `list`'s markers) as a JSON object, else undefined. */
export function readMarked(raw: Buffer, list: readonly Buffer[]): Record<string, unknown> | undefined {
  return hasMarker(raw, list) ? parseObject(raw) : undefined;
}

/** A provider message as a JSON object, or undefined (it is relayed as it is either way). */
export function parseObject(raw: Buffer): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(raw.toString('utf8'));
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

export const objectOf = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
export const stringOf = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** A token count as providers write it: a whole number ≥ 0. */
export const countOf = (v: unknown): number | undefined => (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined);

/** An output cap: a count, `"inf"` (the model's largest output: undefined here), or absent (no change: null). */
export function capOf(v: unknown): number | undefined | null {
  if (v === undefined) return null;
  if (v === 'inf') return undefined;
  const n = countOf(v);
  return n === undefined ? null : n;
}

/**
 * The worst case of one response at the dearest of `models` (a session whose model may be changing is held at
 * the dearer one): 403 model_unpriced when one has no price, 400 when its bounds are unknown.
 */
export function worstAt(price: ProtocolDeps['price'], models: Iterable<string | undefined>, outputCap: () => number | undefined): Worst {
  return () => {
    let worst: WorstCase | undefined;
    for (const model of models) {
      const entry = model === undefined ? undefined : price(model);
      if (!entry) throw Errors.modelUnpriced(model);
      const w = responseWorstCase(entry, outputCap());
      if (!worst || w.micros > worst.micros) worst = w;
    }
    if (!worst) throw Errors.modelUnpriced(undefined);
    return worst;
  };
}

/**
 * OpenAI's error event (the Realtime and Responses WebSocket APIs' shape), with the refused client event's id:
 * `{"type":"error","event_id":…,"error":{"type","code","message","param":null,"event_id"}}`.
 */
export function openaiErrorEvent(err: ApiError, eventId: string | undefined): string {
  return JSON.stringify({
    type: 'error',
    event_id: `event_kw${randomBytes(9).toString('base64url')}`,
    error: { type: err.type, code: err.code, message: err.message, param: null, event_id: eventId ?? null, ...(err.detail ? { detail: err.detail } : {}) },
  });
}
