/**
 * Test support: a fake provider that streams every shape Keyward settles (Anthropic, OpenAI chat and
 * Responses, Gemini, Bedrock's ConverseStream and InvokeModelWithResponseStream event streams, Vertex's
 * Anthropic and Gemini publishers) and keeps a bill: what it would charge for each request, the way a real
 * provider does. A stream that ends normally bills its final usage. A stream cut before the event that
 * carries its final usage (cut by the provider, or by the caller leaving) bills as if generation had gone on to
 * the request's output cap: the most a provider can bill, which Keyward's charge must never be below.
 *
 * Steered per request with headers (they pass through the gateway like any custom header):
 *   x-bill-id: id        required: the bill's key
 *   x-bill-cut: k        send k events, then reset the connection
 *   x-bill-pause: k      send k events, then hold the stream open until the caller leaves
 *   x-bill-input: n      input tokens (default: the body's bytes, never above what Keyward bounds it by)
 *   x-bill-output: n     final output tokens (default: half the output cap)
 *   x-bill-tool-uses: n  provider-side tool uses billed (the test prices them)
 *
 * A pool's member (billing-gateway.ts `pool`) is told by its key, which names what it does (`member-<b>-`):
 *   ok      answers as above
 *   hang    reads the whole body, bills it (generation may run to the cap) and never answers (the gateway's
 *           idle timeout ends it)
 *   reset   reads the whole body, bills it likewise and resets the connection before any response byte
 *   429/503 answers that status, billing nothing (providers do not bill such answers)
 * Every request's bill is kept under its x-bill-id in arrival order (`attempts`: a pooled request's attempts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { frame } from './cloud/bedrock-fake.js';

export type StreamShape = 'anthropic' | 'openai-chat' | 'openai-responses' | 'gemini' | 'bedrock-converse' | 'bedrock-invoke' | 'vertex-anthropic' | 'vertex-gemini';

export const SHAPES: readonly StreamShape[] = ['anthropic', 'openai-chat', 'openai-responses', 'gemini', 'bedrock-converse', 'bedrock-invoke', 'vertex-anthropic', 'vertex-gemini'];

export const VERTEX_PROJECT = 'bill-proj-123';
export const VERTEX_LOCATION = 'us-east5';
const VERTEX_BASE = `v1/projects/${VERTEX_PROJECT}/locations/${VERTEX_LOCATION}/publishers`;
const BEDROCK_MODEL = 'anthropic.claude-sonnet-4-5-20250929-v1:0';

/** One shape: the provider it goes through, the priced model, its path and body, and its events. */
export interface ShapeSpec {
  provider: 'anthropic' | 'openai' | 'gemini' | 'bedrock' | 'vertex';
  /** The model as the provider's price table names it. */
  model: string;
  path: string;
  body(maxTokens: number, extra?: Record<string, unknown>): Record<string, unknown>;
  /** The events of a whole answer reporting `input` and `output` tokens. */
  events(input: number, output: number): Buffer[];
  /** The index of the event that carries the final usage. */
  finalAt: number;
  contentType: string;
}

const sse = (data: unknown, event?: string, crlf = false): Buffer => {
  const nl = crlf ? '\r\n' : '\n';
  return Buffer.from(`${event ? `event: ${event}${nl}` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}${nl}${nl}`);
};

const anthropicEvents = (input: number, output: number): Array<[string, object]> => [
  ['message_start', { type: 'message_start', message: { id: 'msg_bill', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, usage: { input_tokens: input, output_tokens: 1 } } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo "stop_reason":"end_turn"' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: output } }],
  ['message_stop', { type: 'message_stop' }],
];

const chatChunk = (delta: object, finish: string | null, extra: object = {}) => ({ id: 'chatcmpl-bill', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish }], usage: null, ...extra });
const openaiChatEvents = (input: number, output: number): Buffer[] => [
  sse(chatChunk({ role: 'assistant', content: '' }, null)),
  sse(chatChunk({ content: 'Hel' }, null)),
  sse(chatChunk({ content: 'lo "finish_reason":"stop"' }, null)),
  sse(chatChunk({}, 'stop')),
  sse({ id: 'chatcmpl-bill', object: 'chat.completion.chunk', model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }),
  sse('[DONE]'),
];

const geminiChunk = (text: string, input: number, output: number, finish?: string) => ({
  candidates: [{ content: { parts: [{ text }], role: 'model' }, index: 0, ...(finish ? { finishReason: finish, safetyRatings: [{ category: 'HARM_CATEGORY_HATE_SPEECH', probability: 'NEGLIGIBLE' }, { category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'NEGLIGIBLE' }, { category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }] } : {}) }],
  usageMetadata: { promptTokenCount: input, candidatesTokenCount: output, totalTokenCount: input + output },
  modelVersion: 'gemini-2.5-flash',
});
const geminiEvents = (input: number, output: number): Buffer[] => [
  sse(geminiChunk('Hel', input, 1), undefined, true),
  sse(geminiChunk('lo', input, 2), undefined, true),
  sse(geminiChunk(' there', input, output, 'STOP'), undefined, true),
];

const b64 = (event: unknown) => ({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') });

export const SHAPE_SPECS: Readonly<Record<StreamShape, ShapeSpec>> = {
  'anthropic': {
    provider: 'anthropic', model: 'claude-sonnet-4-5', path: 'v1/messages', contentType: 'text/event-stream', finalAt: 5,
    body: (max, extra = {}) => ({ model: 'claude-sonnet-4-5', max_tokens: max, stream: true, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    events: (i, o) => anthropicEvents(i, o).map(([e, d]) => sse(d, e)),
  },
  'openai-chat': {
    provider: 'openai', model: 'gpt-4o-mini', path: 'v1/chat/completions', contentType: 'text/event-stream', finalAt: 4,
    body: (max, extra = {}) => ({ model: 'gpt-4o-mini', max_tokens: max, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    events: openaiChatEvents,
  },
  'openai-responses': {
    provider: 'openai', model: 'gpt-4o-mini', path: 'v1/responses', contentType: 'text/event-stream', finalAt: 4,
    body: (max, extra = {}) => ({ model: 'gpt-4o-mini', max_output_tokens: max, stream: true, input: 'hello', ...extra }),
    events: (i, o) => [
      sse({ type: 'response.created', response: { id: 'resp_bill', status: 'in_progress', usage: null } }, 'response.created'),
      sse({ type: 'response.output_text.delta', delta: 'Hel' }, 'response.output_text.delta'),
      sse({ type: 'response.output_text.delta', delta: 'lo "type":"response.completed"' }, 'response.output_text.delta'),
      sse({ type: 'response.output_text.done', text: 'Hello' }, 'response.output_text.done'),
      sse({ type: 'response.completed', response: { id: 'resp_bill', status: 'completed', output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }], usage: { input_tokens: i, output_tokens: o, total_tokens: i + o } } }, 'response.completed'),
    ],
  },
  'gemini': {
    provider: 'gemini', model: 'gemini-2.5-flash', path: 'v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse', contentType: 'text/event-stream', finalAt: 2,
    body: (max, extra = {}) => ({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }], generationConfig: { maxOutputTokens: max }, ...extra }),
    events: geminiEvents,
  },
  'bedrock-converse': {
    provider: 'bedrock', model: BEDROCK_MODEL, path: `model/${BEDROCK_MODEL}/converse-stream`, contentType: 'application/vnd.amazon.eventstream', finalAt: 5,
    body: (max, extra = {}) => ({ messages: [{ role: 'user', content: [{ text: 'hello' }] }], inferenceConfig: { maxTokens: max }, ...extra }),
    events: (i, o) => [
      frame('messageStart', { role: 'assistant' }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'Hel' } }),
      frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'lo' } }),
      frame('contentBlockStop', { contentBlockIndex: 0 }),
      frame('messageStop', { stopReason: 'end_turn' }),
      frame('metadata', { usage: { inputTokens: i, outputTokens: o, totalTokens: i + o }, metrics: { latencyMs: 10 } }),
    ].map((f) => Buffer.from(f)),
  },
  'bedrock-invoke': {
    provider: 'bedrock', model: BEDROCK_MODEL, path: `model/${BEDROCK_MODEL}/invoke-with-response-stream`, contentType: 'application/vnd.amazon.eventstream', finalAt: 3,
    body: (max, extra = {}) => ({ anthropic_version: 'bedrock-2023-05-31', max_tokens: max, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    events: (i, o) => [
      frame('chunk', b64({ type: 'message_start', message: { usage: { input_tokens: i, output_tokens: 1 } } })),
      frame('chunk', b64({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello' } })),
      frame('chunk', b64({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: o } })),
      frame('chunk', b64({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: i, outputTokenCount: o, invocationLatency: 10, firstByteLatency: 5 } })),
    ].map((f) => Buffer.from(f)),
  },
  'vertex-anthropic': {
    provider: 'vertex', model: 'claude-sonnet-4-5@20250929', path: `${VERTEX_BASE}/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`, contentType: 'text/event-stream', finalAt: 5,
    body: (max, extra = {}) => ({ anthropic_version: 'vertex-2023-10-16', max_tokens: max, stream: true, messages: [{ role: 'user', content: 'hello' }], ...extra }),
    events: (i, o) => anthropicEvents(i, o).map(([e, d]) => sse(d, e)),
  },
  'vertex-gemini': {
    provider: 'vertex', model: 'gemini-2.5-flash', path: `${VERTEX_BASE}/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse`, contentType: 'text/event-stream', finalAt: 2,
    body: (max, extra = {}) => ({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }], generationConfig: { maxOutputTokens: max }, ...extra }),
    events: geminiEvents,
  },
};

/** The output cap a shape's body names. */
function outputCap(body: any): number {
  return Number(body.max_tokens ?? body.max_output_tokens ?? body.generationConfig?.maxOutputTokens ?? body.inferenceConfig?.maxTokens ?? 0);
}

function shapeOf(url: string): StreamShape {
  if (url.includes('/publishers/anthropic/')) return 'vertex-anthropic';
  if (url.includes('/publishers/google/')) return 'vertex-gemini';
  if (url.includes('converse-stream')) return 'bedrock-converse';
  if (url.includes('invoke-with-response-stream')) return 'bedrock-invoke';
  if (url.includes('streamGenerateContent')) return 'gemini';
  if (url.includes('/responses')) return 'openai-responses';
  if (url.includes('/chat/completions')) return 'openai-chat';
  return 'anthropic';
}

/** What the provider charges for one request (tokens; the test prices them). */
export interface Bill {
  shape: StreamShape;
  input: number;
  output: number;
  toolUses: number;
  /** The event carrying the final usage went out. */
  finished: boolean;
  /** When the request reached the provider (epoch ms). */
  at: number;
}

export type MemberBehaviour = 'ok' | 'hang' | 'reset' | '429' | '503';
export const MEMBER_BEHAVIOURS: readonly MemberBehaviour[] = ['ok', 'hang', 'reset', '429', '503'];

/** What a pool member whose key names `member-<b>-` does (any other key: `ok`). */
function memberOf(req: http.IncomingMessage): MemberBehaviour {
  const url = new URL(req.url ?? '/', 'http://fake');
  const presented = `${req.headers.authorization ?? ''} ${req.headers['x-api-key'] ?? ''} ${req.headers['x-goog-api-key'] ?? ''} ${url.searchParams.get('key') ?? ''}`;
  return (/member-(ok|hang|reset|429|503)-/.exec(presented)?.[1] as MemberBehaviour | undefined) ?? 'ok';
}

export interface BillingProvider {
  url: string;
  /** The last bill under each x-bill-id. */
  bills: Map<string, Bill>;
  /** Every bill under each x-bill-id, in arrival order (one per attempt that reached a member that bills). */
  attempts: Map<string, Bill[]>;
  /** Requests received. */
  received: number;
  close(): Promise<void>;
}

const num = (v: string | string[] | undefined): number | undefined => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : undefined);

export async function startBillingProvider(): Promise<BillingProvider> {
  const state: BillingProvider = { url: '', bills: new Map(), attempts: new Map(), received: 0, close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => {});
    req.on('end', () => {
      state.received++;
      const raw = Buffer.concat(chunks);
      let body: any = {};
      try {
        body = JSON.parse(raw.toString());
      } catch { /* an empty or broken body: bill what the headers say */ }
      const shape = shapeOf(req.url ?? '');
      const spec = SHAPE_SPECS[shape];
      const cap = outputCap(body);
      const input = num(req.headers['x-bill-input']) ?? raw.length;
      const output = Math.min(cap, num(req.headers['x-bill-output']) ?? Math.ceil(cap / 2));
      const events = spec.events(input, output);
      const cut = num(req.headers['x-bill-cut']);
      const pause = num(req.headers['x-bill-pause']);
      const stop = Math.min(events.length, cut ?? pause ?? events.length);
      const member = memberOf(req);
      if (member === '429' || member === '503') {
        const text = JSON.stringify({ error: { type: member === '429' ? 'rate_limit_error' : 'api_error', message: `member said ${member}` } });
        res.writeHead(Number(member), { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...(member === '429' ? { 'retry-after': '1' } : {}) });
        res.end(text);
        return;
      }
      // Until the event with the final usage goes out, the provider may have generated up to the cap.
      const bill: Bill = { shape, input, output: cap, toolUses: num(req.headers['x-bill-tool-uses']) ?? 0, finished: false, at: Date.now() };
      const id = String(req.headers['x-bill-id'] ?? `anon-${state.received}`);
      state.bills.set(id, bill);
      const billed = state.attempts.get(id);
      if (billed) billed.push(bill);
      else state.attempts.set(id, [bill]);
      // The whole body arrived: a member that never answers, or resets now, has it (and may bill it).
      if (member === 'hang') return;
      if (member === 'reset') return void res.socket?.destroy();
      res.writeHead(200, { 'content-type': spec.contentType, 'transfer-encoding': 'chunked' });
      res.flushHeaders();
      let sent = 0;
      const next = (): void => {
        if (res.destroyed) return;
        if (sent === stop) {
          if (cut !== undefined && stop < events.length) res.socket?.destroy();
          else if (pause !== undefined && stop < events.length) return; // held open until the caller leaves
          else res.end();
          return;
        }
        res.write(events[sent]!);
        if (sent === spec.finalAt) {
          bill.output = output;
          bill.finished = true;
        }
        sent++;
        setImmediate(next);
      };
      next();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  };
  return state;
}

/** The bytes of the first `k` events of a shape's whole answer (for a caller that leaves after reading them). */
export function bytesOfEvents(shape: StreamShape, k: number, input: number, output: number): number {
  return SHAPE_SPECS[shape].events(input, output).slice(0, k).reduce((n, e) => n + e.length, 0);
}
