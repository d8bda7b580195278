/**
 * A local fake LLM provider on 127.0.0.1:0 speaking OpenAI, Anthropic and
 * Gemini shapes (JSON and SSE), recording every request it receives. Tests
 * steer it per request with `x-fake-*` headers or by replacing `handler`.
 *   x-fake-events: n       number of streamed content events (default 3)
 *   x-fake-delay-ms: ms    pause between events (default 0)
 *   x-fake-status: code    answer with this status and a provider-style error
 *   x-fake-echo: 1         put the received headers in the body and in x-echo-* headers
 *   x-fake-hang: 1         never answer
 *   x-fake-reset: n        send n events then reset the connection
 *   x-fake-redirect: url   answer 307 to url
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from './wait.js';

export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  /** True when the caller went away before the response finished. */
  aborted: boolean;
}

export type FakeHandler = (req: IncomingMessage, res: ServerResponse, body: string, record: Received) => void | Promise<void>;

export interface FakeProvider {
  url: string;
  port: number;
  received: Received[];
  /** Replace to take over every response; set back to undefined for the default shapes. */
  handler: FakeHandler | undefined;
  /** Resolves when the next request arrives. */
  nextRequest(): Promise<Received>;
  close(): Promise<void>;
}


function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-request-id': 'upstream-req-1', ...headers });
  res.end(text);
}

function parse(body: string): any {
  try {
    return JSON.parse(body);
  } catch {
    return {};
  }
}

export const WORDS = ['Hello', ' from', ' the', ' fake', ' provider', '!'];

export async function startFakeProvider(): Promise<FakeProvider> {
  const received: Received[] = [];
  const waiters: Array<(r: Received) => void> = [];
  const fake: FakeProvider = {
    url: '',
    port: 0,
    received,
    handler: undefined,
    nextRequest: () => new Promise((resolve) => waiters.push(resolve)),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the gateway aborted the request mid-body: nothing to answer
    }
    const body = Buffer.concat(chunks).toString('utf8');
    const record: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body, aborted: false };
    res.once('close', () => {
      if (!res.writableFinished) record.aborted = true;
    });
    received.push(record);
    for (const w of waiters.splice(0)) w(record);
    try {
      if (fake.handler) await fake.handler(req, res, body, record);
      else await defaultHandler(req, res, body);
    } catch {
      res.destroy();
    }
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `http://127.0.0.1:${fake.port}`;
  return fake;
}

export async function defaultHandler(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
  const h = req.headers;
  const url = new URL(req.url ?? '/', 'http://fake');
  const path = url.pathname;
  if (h['x-fake-hang']) return; // never answer
  if (h['x-fake-redirect']) {
    res.writeHead(307, { location: String(h['x-fake-redirect']), 'content-length': '0' });
    res.end();
    return;
  }
  if (h['x-fake-status']) {
    const status = Number(h['x-fake-status']);
    json(res, status, { error: { message: `fake error ${status}`, type: 'fake_error', code: 'fake' } });
    return;
  }
  if (h['x-fake-echo']) {
    const echoHeaders: Record<string, string> = {};
    for (const name of ['authorization', 'x-api-key', 'x-goog-api-key']) {
      const v = h[name];
      if (typeof v === 'string') echoHeaders[`x-echo-${name}`] = v;
    }
    const payload = JSON.stringify({ method: req.method, url: req.url, headers: h, body });
    if (h['x-fake-echo'] === 'stream') {
      // The echo split into small chunks, so a key straddles chunk edges.
      res.writeHead(200, { 'content-type': 'text/plain', ...echoHeaders });
      for (let i = 0; i < payload.length; i += 7) {
        res.write(payload.slice(i, i + 7));
        await sleep(0);
      }
      res.end();
    } else {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...echoHeaders });
      res.end(payload);
    }
    return;
  }
  const events = Number(h['x-fake-events'] ?? 3);
  const delay = Number(h['x-fake-delay-ms'] ?? 0);
  const resetAfter = h['x-fake-reset'] !== undefined ? Number(h['x-fake-reset']) : undefined;
  const request = parse(body);

  if (req.method === 'GET' && /\/models$/.test(path)) {
    json(res, 200, { object: 'list', data: [{ id: 'fake-model', object: 'model', created: 0, owned_by: 'fake' }] });
    return;
  }
  if (req.method === 'POST' && path.endsWith('/chat/completions')) {
    await openaiChat(res, request, events, delay, resetAfter);
    return;
  }
  if (req.method === 'POST' && path === '/v1/messages') {
    await anthropicMessage(res, request, events, delay, resetAfter);
    return;
  }
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(path);
  if (req.method === 'POST' && gemini) {
    await geminiGenerate(res, gemini[1]!, gemini[2] === 'streamGenerateContent', events, delay, resetAfter);
    return;
  }
  json(res, 200, { ok: true, method: req.method, path });
}

async function sse(res: ServerResponse, frames: string[], delay: number, resetAfter: number | undefined): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'upstream-req-1' });
  res.flushHeaders();
  for (let i = 0; i < frames.length; i++) {
    if (resetAfter !== undefined && i === resetAfter) {
      res.socket?.resetAndDestroy();
      return;
    }
    if (res.destroyed) return;
    res.write(frames[i]);
    if (delay > 0 && i < frames.length - 1) await sleep(delay);
  }
  res.end();
}

const text = (i: number) => WORDS[i % WORDS.length]!;

async function openaiChat(res: ServerResponse, request: any, events: number, delay: number, resetAfter: number | undefined): Promise<void> {
  const model = request.model ?? 'fake-model';
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: 11, completion_tokens: events, total_tokens: 11 + events };
  const tools = Array.isArray(request.tools) && request.tools.length > 0;
  if (!request.stream) {
    const message = tools
      ? { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: request.tools[0].function.name, arguments: '{"city":"Paris"}' } }] }
      : { role: 'assistant', content: Array.from({ length: events }, (_, i) => text(i)).join('') };
    json(res, 200, { id: 'chatcmpl-fake', object: 'chat.completion', created, model, choices: [{ index: 0, message, finish_reason: tools ? 'tool_calls' : 'stop', logprobs: null }], usage });
    return;
  }
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }], ...extra })}\n\n`;
  const frames = [chunk({ role: 'assistant', content: '' }, null)];
  for (let i = 0; i < events; i++) frames.push(chunk({ content: text(i) }, null));
  frames.push(chunk({}, 'stop'));
  if (request.stream_options?.include_usage) {
    frames.push(`data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
  }
  frames.push('data: [DONE]\n\n');
  await sse(res, frames, delay, resetAfter);
}

async function anthropicMessage(res: ServerResponse, request: any, events: number, delay: number, resetAfter: number | undefined): Promise<void> {
  const model = request.model ?? 'claude-fake';
  const full = Array.from({ length: events }, (_, i) => text(i)).join('');
  if (!request.stream) {
    json(res, 200, {
      id: 'msg_fake', type: 'message', role: 'assistant', model, content: [{ type: 'text', text: full }],
      stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 13, output_tokens: events },
    });
    return;
  }
  const ev = (name: string, data: object) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const frames = [
    ev('message_start', { message: { id: 'msg_fake', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 13, output_tokens: 1 } } }),
    ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
  ];
  for (let i = 0; i < events; i++) frames.push(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: text(i) } }));
  frames.push(ev('content_block_stop', { index: 0 }));
  frames.push(ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: events } }));
  frames.push(ev('message_stop', {}));
  await sse(res, frames, delay, resetAfter);
}

async function geminiGenerate(res: ServerResponse, model: string, stream: boolean, events: number, delay: number, resetAfter: number | undefined): Promise<void> {
  const candidate = (t: string, finish?: string) => ({ content: { parts: [{ text: t }], role: 'model' }, index: 0, ...(finish ? { finishReason: finish } : {}) });
  const usageMetadata = { promptTokenCount: 17, candidatesTokenCount: events, totalTokenCount: 17 + events };
  if (!stream) {
    json(res, 200, { candidates: [candidate(Array.from({ length: events }, (_, i) => text(i)).join(''), 'STOP')], usageMetadata, modelVersion: model });
    return;
  }
  const frames: string[] = [];
  for (let i = 0; i < events; i++) {
    const last = i === events - 1;
    frames.push(`data: ${JSON.stringify({ candidates: [candidate(text(i), last ? 'STOP' : undefined)], ...(last ? { usageMetadata } : {}), modelVersion: model })}\r\n\r\n`);
  }
  await sse(res, frames, delay, resetAfter);
}
