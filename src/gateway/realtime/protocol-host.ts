/**
 * What a session's realtime protocol is handed (RealtimeHost, @keyward/sdk: sdk/src/realtime.ts), and the
 * built-in protocols by name. A protocol is the provider's (providers/lib/realtime/ holds the built-in ones,
 * written against the SDK alone): it says what each message means; the core keeps the money, so the worst
 * cases it holds are worked out here, from the price book, as an HTTP request's are:
 *
 * - `responseWorst`: one response at the dearest of the models named (limits.ts responseWorstCase: the
 *   context window in, the cap or the model's largest output out); 403 model_unpriced for a model with no price.
 * - `requestWorst`: a request inside the session bounded like an HTTP body (pricing/spend-bound.ts: the
 *   message's length, or the context window when it references stored content; its output cap).
 * - `transcriptionPrice`: a transcription model's bounds on this route (transcription-price.ts).
 *
 * Each is a thunk worked out only when a limit applies; a session builds its host once, nothing per message.
 */
import { Errors } from '../../errors.js';
import type { QueryParams, RealtimeHost, RealtimeProtocol, RealtimeWorst, ResponseBook, TranscriptionBook, TranscriptionPrice } from '../../../sdk/src/realtime.js';
import type { RealtimeProtocolName } from '../../catalog/provider.js';
import { worstCaseCost, type PriceEntry } from '../../pricing/prices.js';
import { BOUND_FIELDS, MEDIA_KEYS, requestBound, type ScannedValue } from '../../pricing/spend-bound.js';
import { geminiLive } from '../../../providers/lib/realtime/gemini-live.js';
import { openAIRealtime } from '../../../providers/lib/realtime/openai-realtime.js';
import { openAIResponses } from '../../../providers/lib/realtime/openai-responses.js';
import { responseWorstCase, type WorstCase } from './limits.js';
import { transcriptionPrice } from './transcription-price.js';

/** The built-in protocols by the names routes declared before protocols were objects. */
export const BUILT_IN_PROTOCOLS: Readonly<Record<RealtimeProtocolName, RealtimeProtocol>> = Object.freeze({
  'openai-realtime': openAIRealtime,
  'openai-responses': openAIResponses,
  'gemini-live': geminiLive,
});

/** A route's declared protocol (an object, or a built-in's name) as the object. */
export const protocolOf = (declared: RealtimeProtocolName | RealtimeProtocol): RealtimeProtocol =>
  typeof declared === 'string' ? BUILT_IN_PROTOCOLS[declared] : declared;

/** What the relay knows of one session that its protocol's host is made of. */
export interface HostParts {
  readonly book: ResponseBook;
  readonly transcriptions: TranscriptionBook;
  readonly model: string | undefined;
  readonly query: QueryParams;
  readonly scoped: boolean;
  modelAllowed(model: string): boolean;
  seen(model: string): void;
  /** The provider's price of `model` (the price book's lookup). */
  price(model: string): PriceEntry | undefined;
  /** The route's declared bound of tokens a second of input audio is billed (WebSocketRoute), if any. */
  readonly inputAudioTokensPerSecond: number | undefined;
}

export function realtimeHost(p: HostParts): RealtimeHost {
  return {
    model: p.model,
    query: p.query,
    scoped: p.scoped,
    modelAllowed: p.modelAllowed,
    seen: p.seen,
    errors: Errors,
    book: p.book,
    transcriptions: p.transcriptions,
    responseWorst: (models, outputCap) => worstAt(p.price, models, outputCap),
    requestWorst: (model, body, bytes) => requestWorst(p.price, model, body, bytes),
    transcriptionPrice: (model): TranscriptionPrice => transcriptionPrice(model, model === undefined ? undefined : p.price(model), p.inputAudioTokensPerSecond),
  };
}

/**
 * The worst case of one response at the dearest of `models` (a session whose model may be changing is held at
 * the dearer one): 403 model_unpriced when one has no price, 400 when its bounds are unknown.
 */
export function worstAt(price: HostParts['price'], models: Iterable<string | undefined>, outputCap: () => number | undefined): RealtimeWorst {
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

const MEDIA = new Set<string>(MEDIA_KEYS.map((k) => k.toLowerCase()));

/** A request inside a session (the Responses API's response.create body, `bytes` long) bounded as an HTTP body is. */
function requestWorst(price: HostParts['price'], model: string | undefined, body: Record<string, unknown>, bytes: number): RealtimeWorst {
  return () => {
    const entry = model === undefined ? undefined : price(model);
    if (!entry) throw Errors.modelUnpriced(model);
    const bound = requestBound(entry, { fields: boundFields(body), bytes, mediaKeys: mediaKeys(body) });
    if ('refusal' in bound) throw Errors.maxTokensRequired(bound.refusal);
    return { inputTokens: bound.inputTokens, outputTokens: bound.outputTokens, micros: worstCaseCost(entry, bound.inputTokens, bound.outputTokens) };
  };
}

const objectOf = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/** The fields the spend bound reads, as the body scan would report them: dotted paths into the message. */
function boundFields(message: Record<string, unknown>): Map<string, ScannedValue> {
  const fields = new Map<string, ScannedValue>();
  for (const path of BOUND_FIELDS) {
    let v: unknown = message;
    for (const part of path.split('.')) v = objectOf(v)?.[part];
    if (v === undefined) continue;
    fields.set(path, { kind: v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v, value: v });
  }
  return fields;
}

/** MEDIA_KEYS found at any depth (compared without case), as the body scan's `keys`. */
function mediaKeys(value: unknown, found = new Set<string>(), depth = 0): Set<string> {
  if (depth > 64 || !value || typeof value !== 'object') return found;
  if (Array.isArray(value)) {
    for (const v of value) mediaKeys(v, found, depth + 1);
    return found;
  }
  for (const [k, v] of Object.entries(value)) {
    if (MEDIA.has(k.toLowerCase())) found.add(k.toLowerCase());
    mediaKeys(v, found, depth + 1);
  }
  return found;
}
