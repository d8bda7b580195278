/**
 * A fake Vertex AI on 127.0.0.1:0 that checks `Authorization: Bearer <token>` against the
 * tokens the fake Google token sources issued (401 otherwise) and answers like Vertex:
 * generateContent (JSON with usageMetadata), streamGenerateContent?alt=sse (one SSE event per
 * piece, cumulative usageMetadata), countTokens, rawPredict (Anthropic JSON) and
 * streamRawPredict (Anthropic SSE), and the OpenAI-compatible chat/completions. Stream pieces
 * are written with a pause between them, so a client sees them arrive separately. Every
 * request is recorded; `echo` makes every answer carry those strings (a hostile upstream).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { IssuedTokens } from './google-auth.js';

export const PIECES = ['Hel', 'lo', '!'];

export interface VertexReceived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface FakeVertex {
  url: string;
  received: VertexReceived[];
  /** Strings every answer echoes (set by a test): in a header and in the body. */
  echo: string[];
  close(): Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function startFakeVertex(issued: IssuedTokens): Promise<FakeVertex> {
  const state: FakeVertex = { url: '', received: [], echo: [], close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void answer(req, res, Buffer.concat(chunks).toString()).catch(() => res.destroy()));
  });

  async function answer(req: http.IncomingMessage, res: http.ServerResponse, body: string): Promise<void> {
    state.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
    const auth = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
    if (!auth || !issued.all.has(auth[1]!)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 401, message: 'Request had invalid authentication credentials.', status: 'UNAUTHENTICATED' } }));
      return;
    }
    const echo = state.echo.join(' ');
    // A header cannot hold a line break: only the one-line strings go there.
    const oneLine = state.echo.filter((e) => !e.includes('\n')).join(' ');
    const extra = oneLine ? { 'x-echo': oneLine } : {};
    const url = new URL(req.url ?? '/', 'http://x');
    const action = /:([A-Za-z]+)$/.exec(url.pathname)?.[1];
    const usage = (n: number) => ({ promptTokenCount: 7, candidatesTokenCount: n, totalTokenCount: 7 + n });
    if (action === 'generateContent') {
      res.writeHead(200, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({
        candidates: [{ content: { role: 'model', parts: [{ text: PIECES.join('') + echo }] }, finishReason: 'STOP' }], usageMetadata: usage(3),
      }));
      return;
    }
    if (action === 'streamGenerateContent') {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...extra });
      for (let i = 0; i < PIECES.length; i++) {
        const text = PIECES[i]! + (i === PIECES.length - 1 ? echo : '');
        res.write(`data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts: [{ text }] } }], usageMetadata: usage(i + 1) })}\r\n\r\n`);
        await pause(30);
      }
      res.end();
      return;
    }
    if (action === 'countTokens') {
      res.writeHead(200, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({ totalTokens: 5 }));
      return;
    }
    if (action === 'rawPredict' && url.pathname.endsWith('/count-tokens:rawPredict')) {
      res.writeHead(200, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({ input_tokens: 11 }));
      return;
    }
    if (action === 'rawPredict') {
      res.writeHead(200, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({
        id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4@20250514', content: [{ type: 'text', text: PIECES.join('') + echo }],
        stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 2 },
      }));
      return;
    }
    if (action === 'streamRawPredict') {
      res.writeHead(200, { 'content-type': 'text/event-stream', ...extra });
      const ev = (type: string, data: object): string => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
      res.write(ev('message_start', { message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4@20250514', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } }));
      res.write(ev('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }));
      for (const piece of [...PIECES.slice(0, 2), ...(echo ? [echo] : [])]) {
        await pause(30);
        res.write(ev('content_block_delta', { index: 0, delta: { type: 'text_delta', text: piece } }));
      }
      res.write(ev('content_block_stop', { index: 0 }));
      res.write(ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }));
      res.end(ev('message_stop', {}));
      return;
    }
    if (url.pathname.endsWith('/endpoints/openapi/chat/completions')) {
      res.writeHead(200, { 'content-type': 'application/json', ...extra }).end(JSON.stringify({
        id: 'c1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: PIECES.join('') + echo }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 },
      }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 404, message: 'not found' } }));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return state;
}
