/**
 * Test support: a fake realtime provider on 127.0.0.1:0 speaking OpenAI's
 * Realtime API (and Azure's paths), the Responses API over WebSocket and Gemini
 * Live, with `ws`. It accepts a handshake only with the stored key where the
 * provider's signer puts it (Authorization: Bearer, api-key, x-goog-api-key),
 * answers 401 otherwise, and records every handshake and every client message,
 * so a test can prove what reached it (and what did not: the proxy token, a
 * refused message). It numbers what it sends (`seq`) so order can be checked.
 *
 * Client events it acts on (OpenAI): `session.update` (answered with
 * `session.updated`, turn detection and output cap applied); `response.create`
 * (a response: created, a text delta, an audio delta, done with `usage`);
 * `input_audio_buffer.commit` while server turn detection is on (a
 * server-started response); `conversation.item.create` whose text is one of
 *   `echo-key`   → a message carrying the stored key (masking)
 *   `flood:N:K`  → N messages of K KiB at once (back-pressure)
 *   `big:K`      → one message of K KiB (the size limit)
 *   anything     → `conversation.item.created` echoing the item (order)
 * Gemini: `setup` → `setupComplete`; `clientContent` with `turnComplete` or
 * `realtimeInput` audio (automatic activity detection) → a turn (text part,
 * audio part, `turnComplete` with `usageMetadata`), as binary frames as Google sends.
 */
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';

export interface Handshake {
  url: string;
  headers: http.IncomingHttpHeaders;
  protocol: string | undefined;
}

export interface FakeRealtime {
  url: string;
  port: number;
  handshakes: Handshake[];
  /** Every client message, parsed, in arrival order, by connection. */
  received: Array<Array<Record<string, any>>>;
  /** Every message sent, per connection, in order. */
  sent: Array<Array<Record<string, any>>>;
  sockets: WebSocket[];
  /** Usage reported by the next responses (OpenAI realtime shape); tests change it. */
  usage: Record<string, any>;
  geminiUsage: Record<string, any>;
  /** Resolves when connection `i` has received at least `n` messages. */
  messages(i: number, n: number): Promise<Array<Record<string, any>>>;
  connection(i: number): Promise<WebSocket>;
  close(): Promise<void>;
}

const DEFAULT_USAGE = {
  total_tokens: 1500, input_tokens: 1000, output_tokens: 500,
  input_token_details: { cached_tokens: 200, text_tokens: 600, audio_tokens: 400, cached_tokens_details: { text_tokens: 100, audio_tokens: 100 } },
  output_token_details: { text_tokens: 100, audio_tokens: 400 },
};
const DEFAULT_GEMINI_USAGE = {
  promptTokenCount: 800, responseTokenCount: 300, totalTokenCount: 1100,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 500 }, { modality: 'AUDIO', tokenCount: 300 }],
  responseTokensDetails: [{ modality: 'AUDIO', tokenCount: 300 }],
};

export async function startRealtimeFake(key: string, tls?: { cert: Buffer; key: Buffer }): Promise<FakeRealtime> {
  const server = tls ? https.createServer({ cert: tls.cert, key: tls.key }) : http.createServer();
  server.on('request', (_req, res) => {
    res.writeHead(404);
    res.end();
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has('realtime') ? 'realtime' : false) });
  const fake: FakeRealtime = {
    url: '', port: 0, handshakes: [], received: [], sent: [], sockets: [],
    usage: DEFAULT_USAGE, geminiUsage: DEFAULT_GEMINI_USAGE,
    async messages(i, n) {
      for (;;) {
        const got = fake.received[i];
        if (got && got.length >= n) return got;
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    async connection(i) {
      for (;;) {
        if (fake.sockets[i]) return fake.sockets[i]!;
        await new Promise((r) => setTimeout(r, 5));
      }
    },
    close: () => new Promise<void>((resolve) => {
      for (const s of fake.sockets) s.terminate();
      wss.close();
      server.closeAllConnections?.();
      server.close(() => resolve());
    }),
  };
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = req.url ?? '';
    fake.handshakes.push({ url, headers: req.headers, protocol: req.headers['sec-websocket-protocol'] });
    const keyed = req.headers.authorization === `Bearer ${key}` || req.headers['api-key'] === key || req.headers['x-goog-api-key'] === key;
    if (!keyed) {
      const given = String(req.headers.authorization ?? req.headers['api-key'] ?? req.headers['x-goog-api-key'] ?? '').replace(/^Bearer /, '');
      const body = JSON.stringify({ error: { message: `Incorrect API key provided: ${given}`, type: 'invalid_request_error', code: 'invalid_api_key' } });
      socket.end(`HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      const i = fake.sockets.length;
      fake.sockets.push(ws);
      fake.received.push([]);
      fake.sent.push([]);
      const kind = url.includes('GenerativeService') ? 'gemini' : url.startsWith('/v1/responses') ? 'responses' : 'realtime';
      const model = new URL(url, 'http://x').searchParams.get('model') ?? new URL(url, 'http://x').searchParams.get('deployment') ?? undefined;
      serve(fake, ws, i, kind, model, key);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `${tls ? 'https' : 'http'}://127.0.0.1:${fake.port}`;
  return fake;
}

function serve(fake: FakeRealtime, ws: WebSocket, i: number, kind: 'gemini' | 'responses' | 'realtime', model: string | undefined, key: string): void {
  let seq = 0;
  const send = (event: Record<string, any>, binary = false): void => {
    const e = { ...event, seq: ++seq };
    fake.sent[i]!.push(e);
    ws.send(JSON.stringify(e), { binary });
  };
  const session: Record<string, any> = { model, output_modalities: ['audio'], max_output_tokens: 'inf', audio: { input: { turn_detection: { type: 'server_vad', create_response: true } } } };
  const serverTurns = () => session.audio.input.turn_detection !== null && session.audio.input.turn_detection?.create_response !== false;
  let responses = 0;
  const respond = (): void => {
    const id = `resp_${++responses}`;
    send({ type: 'response.created', response: { id, status: 'in_progress' } });
    send({ type: 'response.output_text.delta', response_id: id, delta: 'Hello' });
    send({ type: 'response.output_audio.delta', response_id: id, delta: Buffer.from('pcm-audio-bytes').toString('base64') });
    send({ type: 'response.done', response: { id, status: 'completed', usage: fake.usage } });
  };
  if (kind === 'realtime') send({ type: 'session.created', session });
  let geminiTurns = 0;
  const geminiTurn = (): void => {
    geminiTurns++;
    send({ serverContent: { modelTurn: { parts: [{ text: `turn ${geminiTurns}` }] } } }, true);
    send({ serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: 'audio/pcm;rate=24000', data: Buffer.from('gemini-audio').toString('base64') } }] } } }, true);
    send({ serverContent: { turnComplete: true }, usageMetadata: fake.geminiUsage }, true);
  };
  ws.on('message', (data: Buffer) => {
    let m: Record<string, any>;
    try {
      m = JSON.parse(data.toString());
    } catch {
      return;
    }
    fake.received[i]!.push(m);
    if (kind === 'gemini') {
      if (m.setup) send({ setupComplete: {} }, true);
      else if (m.clientContent?.turnComplete === true || m.realtimeInput) geminiTurn();
      return;
    }
    if (kind === 'responses') {
      if (m.type === 'response.create') {
        const id = `resp_${++responses}`;
        send({ type: 'response.created', response: { id, model: m.model, status: 'in_progress' } });
        send({ type: 'response.output_text.delta', delta: 'done' });
        send({ type: 'response.completed', response: { id, model: m.model, status: 'completed', usage: { input_tokens: 1200, input_tokens_details: { cached_tokens: 200 }, output_tokens: 300 } } });
      }
      return;
    }
    switch (m.type) {
      case 'session.update': {
        const s = m.session ?? {};
        if (s.model) session.model = s.model;
        if (s.max_output_tokens !== undefined) session.max_output_tokens = s.max_output_tokens;
        if (s.audio?.input && 'turn_detection' in s.audio.input) session.audio.input.turn_detection = s.audio.input.turn_detection;
        send({ type: 'session.updated', session });
        return;
      }
      case 'response.create':
        respond();
        return;
      case 'input_audio_buffer.commit':
        if (serverTurns()) respond();
        return;
      case 'conversation.item.create': {
        const text: string = m.item?.content?.[0]?.text ?? '';
        if (text === 'echo-key') return send({ type: 'conversation.item.created', item: { content: [{ type: 'input_text', text: `your key is ${key}` }] } });
        if (text.startsWith('flood:')) {
          const [, n, kib] = text.split(':').map(Number);
          const pad = 'x'.repeat(kib! * 1024);
          for (let k = 0; k < n!; k++) send({ type: 'response.output_audio.delta', delta: pad });
          return;
        }
        if (text.startsWith('big:')) return send({ type: 'response.output_audio.delta', delta: 'y'.repeat(Number(text.slice(4)) * 1024) });
        return send({ type: 'conversation.item.created', item: m.item });
      }
    }
  });
}
