/**
 * OpenAI's Responses API over WebSocket (`GET v1/responses`, as Codex CLI opens
 * it with `OpenAI-Beta: responses_websockets=…`): each `response.create`
 * message carries what an HTTP `POST v1/responses` body carries, and the
 * server answers with the same events as the HTTP stream, one response at a
 * time, in order.
 *
 * - `response.create`: its `model` is checked against the token's `models`
 *   scope, and under a limit its worst case is held before it is forwarded,
 *   bounded exactly as an HTTP request's (pricing/spend-bound.ts: the message's
 *   length, or the context window when it references stored content such as
 *   `previous_response_id`; its output cap or the model's largest output).
 *   A refusal is an error event; the message is not forwarded.
 * - From the server: `response.created` starts; `response.completed`,
 *   `response.incomplete` and `response.failed` (with `usage`) settle; an
 *   `error` before a response started gives the oldest request's hold back.
 */
import { Errors, type ApiError } from '../../../errors.js';
import type { TokenUsage } from '../../../catalog/provider.js';
import { worstCaseCost } from '../../../pricing/prices.js';
import { BOUND_FIELDS, MEDIA_KEYS, requestBound, type ScannedValue } from '../../../pricing/spend-bound.js';
import type { Worst } from '../book.js';
import { FORWARD, forwardOrRefuse, countOf, worstAt, markers, objectOf, openaiErrorEvent, readMarked, stringOf, type ProtocolDeps, type SessionProtocol, type Verdict } from './protocol.js';

const SERVER_MARKERS = markers('response.created', 'response.completed', 'response.incomplete', 'response.failed', 'error');
const MEDIA = new Set<string>(MEDIA_KEYS.map((k) => k.toLowerCase()));

/** The Responses API's `usage` as TokenUsage. */
export function responsesUsage(u: Record<string, unknown> | undefined): TokenUsage | undefined {
  const input = countOf(u?.input_tokens);
  const output = countOf(u?.output_tokens);
  if (input === undefined || output === undefined) return undefined;
  const usage: TokenUsage = { inputTokens: input, outputTokens: output };
  const cached = countOf(objectOf(u?.input_tokens_details)?.cached_tokens);
  if (cached !== undefined) usage.cachedInputTokens = cached;
  return usage;
}

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

export class OpenAIResponses implements SessionProtocol {
  readonly binaryJson = false;
  model: string | undefined;

  constructor(private readonly deps: ProtocolDeps) {
    this.model = deps.model;
  }

  fromClient(message: Record<string, unknown>, bytes: number): Verdict | Promise<Verdict> {
    if (message.type !== 'response.create') return FORWARD;
    const eventId = stringOf(message.event_id);
    // The body may sit under `response` (the Realtime shape) or at the top (Codex's): both are read.
    const body = objectOf(message.response) ?? message;
    const model = stringOf(body.model);
    if (this.deps.scoped && (model === undefined || !this.deps.modelAllowed(model))) {
      return { kind: 'refuse', error: Errors.modelNotAllowed(model ?? '(none)'), eventId };
    }
    if (model !== undefined) {
      this.model = model;
      this.deps.seen(model);
    }
    const worst: Worst = () => {
      const price = model === undefined ? undefined : this.deps.price(model);
      if (!price) throw Errors.modelUnpriced(model);
      const bound = requestBound(price, { fields: boundFields(body), bytes, mediaKeys: mediaKeys(body) });
      if ('refusal' in bound) throw Errors.maxTokensRequired(bound.refusal);
      return { inputTokens: bound.inputTokens, outputTokens: bound.outputTokens, micros: worstCaseCost(price, bound.inputTokens, bound.outputTokens) };
    };
    return forwardOrRefuse(this.deps.book.forClient(worst, eventId, model), eventId);
  }

  fromServer(raw: Buffer): void {
    const event = readMarked(raw, SERVER_MARKERS);
    if (!event) return;
    const response = objectOf(event.response);
    const id = stringOf(response?.id);
    switch (event.type) {
      case 'response.created':
        // Every response here is one the client asked for; one that was not is held at the session's model's worst case.
        if (id !== undefined) this.deps.book.started(id, worstAt((m) => this.deps.price(m), [this.model], () => undefined));
        return;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (id !== undefined) this.deps.book.ended(id, responsesUsage(objectOf(response?.usage)), stringOf(response?.model));
        return;
      case 'error':
        // An error while no response runs refused the oldest request (a running one ends with response.failed).
        if (this.deps.book.runningCount === 0) this.deps.book.refusedByProvider(undefined, 'oldest');
        return;
    }
  }

  errorEvent(err: ApiError, eventId: string | undefined): string {
    return openaiErrorEvent(err, eventId);
  }
}
