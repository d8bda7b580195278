/**
 * OpenAI's Responses API over WebSocket (`GET v1/responses`, as Codex CLI opens
 * it with `OpenAI-Beta: responses_websockets=…`): each `response.create`
 * message carries what an HTTP `POST v1/responses` body carries, and the
 * server answers with the same events as the HTTP stream, one response at a
 * time, in order.
 *
 * - `response.create`: its `model` is checked against the token's `models`
 *   scope, and under a limit its worst case is held before it is forwarded,
 *   bounded exactly as an HTTP request's (RealtimeHost.requestWorst: the message's
 *   length, or the context window when it references stored content such as
 *   `previous_response_id`; its output cap or the model's largest output).
 *   A refusal is an error event; the message is not forwarded.
 * - From the server: `response.created` starts; `response.completed`,
 *   `response.incomplete` and `response.failed` (with `usage`) settle; an
 *   `error` before a response started gives the oldest request's hold back.
 */
import type { GatewayError, RealtimeHost, RealtimeProtocol, RealtimeSessionProtocol, RealtimeVerdict, TokenUsage } from '@keyward/sdk';
import { FORWARD, forwardOrRefuse, countOf, markers, objectOf, openaiErrorEvent, readMarked, stringOf } from './shared.js';

const SERVER_MARKERS = markers('response.created', 'response.completed', 'response.incomplete', 'response.failed', 'error');

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

export class OpenAIResponses implements RealtimeSessionProtocol {
  readonly binaryJson = false;
  model: string | undefined;
  private readonly host: RealtimeHost;

  constructor(host: RealtimeHost) {
    this.host = host;
    this.model = host.model;
  }

  fromClient(message: Record<string, unknown>, bytes: number): RealtimeVerdict | Promise<RealtimeVerdict> {
    if (message.type !== 'response.create') return FORWARD;
    const eventId = stringOf(message.event_id);
    // The body may sit under `response` (the Realtime shape) or at the top (Codex's): both are read.
    const body = objectOf(message.response) ?? message;
    const model = stringOf(body.model);
    if (this.host.scoped && (model === undefined || !this.host.modelAllowed(model))) {
      return { kind: 'refuse', error: this.host.errors.modelNotAllowed(model ?? '(none)'), eventId };
    }
    if (model !== undefined) {
      this.model = model;
      this.host.seen(model);
    }
    return forwardOrRefuse(this.host.book.forClient(this.host.requestWorst(model, body, bytes), eventId, model), eventId);
  }

  fromServer(raw: Uint8Array): void {
    const event = readMarked(raw, SERVER_MARKERS);
    if (!event) return;
    const response = objectOf(event.response);
    const id = stringOf(response?.id);
    switch (event.type) {
      case 'response.created':
        // Every response here is one the client asked for; one that was not is held at the session's model's worst case.
        if (id !== undefined) this.host.book.started(id, this.host.responseWorst([this.model], () => undefined));
        return;
      case 'response.completed':
      case 'response.incomplete':
      case 'response.failed':
        if (id !== undefined) this.host.book.ended(id, responsesUsage(objectOf(response?.usage)), stringOf(response?.model));
        return;
      case 'error':
        // An error while no response runs refused the oldest request (a running one ends with response.failed).
        if (this.host.book.runningCount === 0) this.host.book.refusedByProvider(undefined, 'oldest');
        return;
    }
  }

  errorEvent(err: GatewayError, eventId: string | undefined): string {
    return openaiErrorEvent(err, eventId);
  }
}

/** OpenAI's Responses API over WebSocket, as the OpenAI provider's `GET v1/responses` route declares it. */
export const openAIResponses: RealtimeProtocol = Object.freeze({
  name: 'openai-responses',
  open: (host: RealtimeHost) => new OpenAIResponses(host),
});
