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
 * server-started response); the input audio buffer as the API keeps it: an
 * append adds its decoded bytes, `commit` makes an item (`input_audio_buffer.
 * committed`; an empty buffer is an `input_audio_buffer_commit_empty` error),
 * `clear` empties it (`input_audio_buffer.cleared`), and with turn detection on
 * a silent chunk (all zero bytes) after speech commits it on its own
 * (`speech_stopped` with `audio_end_ms`, then `committed`). With input-audio
 * transcription on (`audio.input.transcription`, `input_audio_transcription`,
 * `transcription_session.update`; `?intent=transcription` opens a transcription
 * session) each item is transcribed and billed as OpenAI bills it (`transcribed`):
 * 10 audio tokens a second, the transcript `transcriptTokens` tokens (whisper-1:
 * the seconds), reported in `conversation.item.input_audio_transcription.completed`
 * (or `.failed`, or never: `transcription`). `conversation.item.create` whose text is one of
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
  /** Every plain (not upgraded) request, `METHOD /path`: it answers each 404. */
  requests: string[];
  /** Every client message, parsed, in arrival order, by connection. */
  received: Array<Array<Record<string, any>>>;
  /** Every message sent, per connection, in order. */
  sent: Array<Array<Record<string, any>>>;
  sockets: WebSocket[];
  /** Usage reported by the next responses (OpenAI realtime shape); tests change it. */
  usage: Record<string, any>;
  geminiUsage: Record<string, any>;
  /** What it does with a committed item's transcription: reports it (default), fails it, or never answers. */
  transcription: 'complete' | 'fail' | 'never';
  /** Output tokens of each transcript a token-billed model makes. */
  transcriptTokens: number;
  /** Every transcription it made and bills (failed and unreported ones too), in order: the item, the model, the usage. */
  transcribed: Array<{ item_id: string; model: string; usage: Record<string, any>; reported: boolean }>;
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
  server.on('request', (req, res) => {
    fake.requests.push(`${req.method} ${req.url}`);
    req.resume();
    res.writeHead(404);
    res.end();
  });
  const wss = new WebSocketServer({ noServer: true, handleProtocols: (p) => (p.has('realtime') ? 'realtime' : false) });
  const fake: FakeRealtime = {
    url: '', port: 0, handshakes: [], requests: [], received: [], sent: [], sockets: [],
    usage: DEFAULT_USAGE, geminiUsage: DEFAULT_GEMINI_USAGE, transcription: 'complete', transcriptTokens: 12, transcribed: [],
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
      serve(fake, ws, i, kind, model, key, new URL(url, 'http://x').searchParams.get('intent') === 'transcription');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.port = (server.address() as AddressInfo).port;
  fake.url = `${tls ? 'https' : 'http'}://127.0.0.1:${fake.port}`;
  return fake;
}

/** The GA and beta shapes of a session's input-audio settings, kept in the GA shape. */
function applyInput(session: Record<string, any>, s: Record<string, any>): void {
  const input = session.audio.input;
  const ga = s.audio?.input ?? {};
  for (const [field, beta] of [['transcription', 'input_audio_transcription'], ['format', 'input_audio_format'], ['turn_detection', 'turn_detection']] as const) {
    if (field in ga) input[field] = ga[field];
    else if (beta in s) input[field] = field === 'format' ? ({ pcm16: { type: 'audio/pcm', rate: 24000 }, g711_ulaw: { type: 'audio/pcmu' }, g711_alaw: { type: 'audio/pcma' } } as Record<string, unknown>)[s[beta]] ?? s[beta] : s[beta];
  }
}

function serve(fake: FakeRealtime, ws: WebSocket, i: number, kind: 'gemini' | 'responses' | 'realtime', model: string | undefined, key: string, intent: boolean): void {
  let seq = 0;
  const send = (event: Record<string, any>, binary = false): void => {
    const e = { ...event, seq: ++seq };
    fake.sent[i]!.push(e);
    ws.send(JSON.stringify(e), { binary });
  };
  const session: Record<string, any> = intent
    ? { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: null, turn_detection: { type: 'server_vad' } } } }
    : { model, output_modalities: ['audio'], max_output_tokens: 'inf', audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: null, turn_detection: { type: 'server_vad', create_response: true } } } };
  const serverTurns = () => !intent && session.audio.input.turn_detection !== null && session.audio.input.turn_detection?.create_response !== false;
  // The input audio buffer: bytes since the last commit or clear, whether they held speech, and the session's audio in ms.
  let buffered = 0;
  let speech = false;
  let audioMs = 0;
  let items = 0;
  const bytesPerSecond = () => (session.audio.input.format?.type === 'audio/pcm' ? 2 * (session.audio.input.format.rate ?? 24000) : 8000);
  const commitBuffer = (id: string): void => {
    const seconds = buffered / bytesPerSecond();
    buffered = 0;
    speech = false;
    send({ type: 'input_audio_buffer.committed', item_id: id, previous_item_id: null });
    const transcriber: string | undefined = session.audio.input.transcription?.model;
    if (!transcriber) return;
    const audioTokens = Math.ceil(seconds * 10);
    const usage = transcriber === 'whisper-1'
      ? { type: 'duration', seconds }
      : { type: 'tokens', input_tokens: audioTokens, input_token_details: { text_tokens: 0, audio_tokens: audioTokens }, output_tokens: fake.transcriptTokens, total_tokens: audioTokens + fake.transcriptTokens };
    // Billed whatever it reports (a failed or unreported transcription may be billed too).
    fake.transcribed.push({ item_id: id, model: transcriber, usage, reported: fake.transcription === 'complete' });
    if (fake.transcription === 'never') return;
    if (fake.transcription === 'fail') return send({ type: 'conversation.item.input_audio_transcription.failed', item_id: id, content_index: 0, error: { type: 'transcription_error', message: 'failed' } });
    send({ type: 'conversation.item.input_audio_transcription.completed', item_id: id, content_index: 0, transcript: 'hello', usage });
  };
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
      case 'session.update':
      case 'transcription_session.update': {
        const s = m.session ?? {};
        if (s.model) session.model = s.model;
        if (s.max_output_tokens !== undefined) session.max_output_tokens = s.max_output_tokens;
        applyInput(session, s);
        send({ type: m.type === 'session.update' ? 'session.updated' : 'transcription_session.updated', session });
        return;
      }
      case 'response.create':
        respond();
        return;
      case 'input_audio_buffer.append': {
        const bytes = Buffer.from(String(m.audio ?? ''), 'base64');
        const silent = bytes.every((b) => b === 0);
        buffered += bytes.length;
        audioMs += (bytes.length * 1000) / bytesPerSecond();
        if (!silent) speech = true;
        else if (speech && session.audio.input.turn_detection) {
          // Turn detection: speech, then silence: the buffer is committed on its own.
          const id = `item_${++items}`;
          send({ type: 'input_audio_buffer.speech_stopped', item_id: id, audio_end_ms: Math.floor(audioMs) });
          commitBuffer(id);
          if (serverTurns()) respond();
        }
        return;
      }
      case 'input_audio_buffer.commit':
        if (buffered === 0) {
          return send({ type: 'error', error: { type: 'invalid_request_error', code: 'input_audio_buffer_commit_empty', message: 'buffer too small', event_id: m.event_id ?? null } });
        }
        commitBuffer(`item_${++items}`);
        if (serverTurns()) respond();
        return;
      case 'input_audio_buffer.clear':
        buffered = 0;
        speech = false;
        send({ type: 'input_audio_buffer.cleared' });
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
