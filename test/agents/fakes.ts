/**
 * Test support for the coding-agent tests: fake Anthropic and OpenAI providers
 * on 127.0.0.1:0 that accept only the stored key (anything else: the
 * provider's 401), and a forward proxy that refuses and records every
 * connection an agent tries to open to anywhere else (its vendor's hosts,
 * telemetry, update checks), so a test can prove the agent spoke to Keyward
 * only.
 *
 * - Anthropic: `POST /v1/messages` (streamed or not, with `usage`),
 *   `POST /v1/messages/count_tokens`.
 * - OpenAI: the Responses API over HTTPS (`POST /v1/responses`, SSE or JSON) and over
 *   WebSocket (`GET /v1/responses` upgraded, as Codex CLI opens it: each
 *   `response.create` answered with created, a text delta, completed with
 *   `usage`; `generate: false`, Codex's warm-up, with no output), and
 *   `GET /v1/models`.
 *
 * Each records every request (headers and body, raw) and every WebSocket
 * handshake and message, so a test can search them for the proxy token.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export const REPLY = 'pong from the fake';

export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** A WebSocket handshake: the messages the client sent on it. */
  messages?: string[];
}

export interface Fake {
  url: string;
  seen: Seen[];
  /** Everything any caller sent, as one string (headers, bodies, messages): to search for what must not be there. */
  everything(): string;
  close(): Promise<void>;
}

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function read(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function fake(seen: Seen[], server: http.Server, url: string, extra: () => void = () => undefined): Fake {
  return {
    url,
    seen,
    everything: () => JSON.stringify(seen),
    close: async () => {
      extra();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Anthropic's Messages API, for `key` only (x-api-key, as the provider file signs). */
export async function startAnthropicFake(key: string): Promise<Fake> {
  const seen: Seen[] = [];
  const server = http.createServer(async (req, res) => {
    const body = await read(req);
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    if (req.headers['x-api-key'] !== key) return json(res, 401, { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } });
    const path = req.url!.split('?')[0];
    let parsed: Record<string, any> = {};
    try {
      parsed = JSON.parse(body);
    } catch { /* answered below */ }
    if (req.method === 'POST' && path === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 42 });
    if (req.method !== 'POST' || path !== '/v1/messages' || typeof parsed.model !== 'string') {
      return json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `no ${req.method} ${path}` } });
    }
    const usage = { input_tokens: 1200, cache_read_input_tokens: 300, cache_creation_input_tokens: 100, output_tokens: 7 };
    const message = { id: 'msg_fake', type: 'message', role: 'assistant', model: parsed.model, content: [{ type: 'text', text: REPLY }], stop_reason: 'end_turn', stop_sequence: null, usage };
    if (!parsed.stream) return json(res, 200, message);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (type: string, data: Record<string, unknown>) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('message_start', { message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: REPLY } });
    event('content_block_stop', { index: 0 });
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } });
    event('message_stop', {});
    res.end();
  });
  return fake(seen, server, await listen(server));
}

/** The Responses API's events for one response to `request` (`generate: false`: Codex's warm-up, no output). */
function responseEvents(request: Record<string, any>, id: string): Array<Record<string, unknown>> {
  const generate = request.generate !== false;
  const item = { id: `msg_${id}`, type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: REPLY, annotations: [] }] };
  const base = { id, object: 'response', created_at: 1_795_000_000, model: request.model, status: 'in_progress', output: [] as unknown[] };
  const usage = { input_tokens: 1500, input_tokens_details: { cached_tokens: 500 }, output_tokens: generate ? 9 : 0, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: generate ? 1509 : 1500 };
  const events: Array<Record<string, unknown>> = [{ type: 'response.created', response: base }];
  if (generate) {
    events.push(
      { type: 'response.output_item.added', output_index: 0, item: { ...item, status: 'in_progress', content: [] } },
      { type: 'response.output_text.delta', item_id: item.id, output_index: 0, content_index: 0, delta: REPLY },
      { type: 'response.output_item.done', output_index: 0, item },
    );
  }
  events.push({ type: 'response.completed', response: { ...base, status: 'completed', output: generate ? [item] : [], usage } });
  return events.map((e, i) => ({ ...e, sequence_number: i }));
}

/** OpenAI's Responses API over HTTPS and WebSocket, and its model list, for `key` only (Authorization: Bearer). */
export async function startOpenAIFake(key: string): Promise<Fake> {
  const seen: Seen[] = [];
  let n = 0;
  const server = http.createServer(async (req, res) => {
    const body = await read(req);
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${key}`) return json(res, 401, { error: { message: 'Incorrect API key provided.', type: 'invalid_request_error', code: 'invalid_api_key' } });
    const path = req.url!.split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') return json(res, 200, { object: 'list', data: [] });
    let parsed: Record<string, any> = {};
    try {
      parsed = JSON.parse(body);
    } catch { /* answered below */ }
    if (req.method !== 'POST' || path !== '/v1/responses' || typeof parsed.model !== 'string') {
      return json(res, 404, { error: { message: `no ${req.method} ${path}`, type: 'invalid_request_error' } });
    }
    const events = responseEvents(parsed, `resp_${++n}`);
    if (!parsed.stream) return json(res, 200, events.at(-1)!.response);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const e of events) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
    res.end();
  });
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => {
    const record: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: '', messages: [] };
    seen.push(record);
    if (req.headers.authorization !== `Bearer ${key}` || req.url!.split('?')[0] !== '/v1/responses') {
      socket.end('HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{"error":{"message":"Incorrect API key provided.","code":"invalid_api_key"}}');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (data) => {
        const text = String(data);
        record.messages!.push(text);
        let message: Record<string, any> = {};
        try {
          message = JSON.parse(text);
        } catch { /* ignored */ }
        if (message.type === 'response.create') for (const e of responseEvents(message, `resp_${++n}`)) ws.send(JSON.stringify(e));
      });
    });
  });
  return fake(seen, server, await listen(server), () => {
    for (const ws of wss.clients) ws.terminate();
  });
}

export interface Outside {
  /** http://127.0.0.1:port, for HTTP_PROXY / HTTPS_PROXY / ALL_PROXY. */
  url: string;
  /** Every destination an agent tried to reach through it (`host:port`, or a URL for plain HTTP). */
  attempts: string[];
  close(): Promise<void>;
}

/** A forward proxy that lets nothing through: every CONNECT or proxied request is recorded and refused (403). */
export async function startOutside(): Promise<Outside> {
  const attempts: string[] = [];
  const server = http.createServer((req, res) => {
    req.socket.on('error', () => undefined);
    attempts.push(req.url ?? '');
    res.writeHead(403, { 'content-length': 0, connection: 'close' });
    res.end();
  });
  server.on('connect', (req: IncomingMessage, socket) => {
    socket.on('error', () => undefined); // a client that resets the refused tunnel
    attempts.push(req.url ?? '');
    socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
  });
  const url = await listen(server);
  return {
    url,
    attempts,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
