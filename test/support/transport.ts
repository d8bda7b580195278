/**
 * Test support: one request to a gateway over HTTP/1.1 or cleartext HTTP/2 (h2c), with the body framed as
 * asked (a content-length, or none: chunked on HTTP/1.1, bare DATA frames on HTTP/2) and sent whole or
 * trickled in pieces with gaps between them. Resolves with the answer, whatever it is (a reset stream or a
 * closed connection as status 0).
 */
import http from 'node:http';
import http2 from 'node:http2';
import { sleep } from './wait.js';

export type Transport = 'h1' | 'h2c';

export interface SendOptions {
  transport: Transport;
  method?: string;
  /** The path, `/v1/proxy/…`. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send a content-length (default true). */
  length?: boolean;
  /** Split the body into this many pieces (default 1: whole). */
  pieces?: number;
  /** Milliseconds between pieces (default 0). */
  gapMs?: number;
  /** Called with a function that aborts the request (the caller leaves) as soon as it is open. */
  onOpen?: (abort: () => void) => void;
  /** Called when the response head arrives. */
  onHead?: (abort: () => void) => void;
  /** Called with each response body chunk (the stream's events as they come). */
  onData?: (chunk: Buffer, abort: () => void) => void;
}

export interface Answer {
  /** 0 when the stream or connection ended without a response. */
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
  /** The response ended cleanly (not reset or cut). */
  complete: boolean;
  /** HTTP/2 only: the code the stream closed with (NGHTTP2_NO_ERROR for a clean end, INTERNAL_ERROR for a cut). */
  rstCode?: number;
}


function parse(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function piecesOf(body: Buffer, n: number): Buffer[] {
  if (n <= 1 || body.length <= 1) return [body];
  const size = Math.ceil(body.length / n);
  const out: Buffer[] = [];
  for (let i = 0; i < body.length; i += size) out.push(body.subarray(i, i + size));
  return out;
}

/** Writes the pieces with gaps, stopping if `stopped()` turns true. */
async function writePieces(write: (b: Buffer) => void, end: () => void, pieces: Buffer[], gapMs: number, stopped: () => boolean): Promise<void> {
  for (let i = 0; i < pieces.length; i++) {
    if (stopped()) return;
    write(pieces[i]!);
    if (gapMs > 0 && i < pieces.length - 1) await sleep(gapMs);
  }
  if (!stopped()) end();
}

export function send(base: string, o: SendOptions): Promise<Answer> {
  const body = o.body === undefined ? undefined : Buffer.isBuffer(o.body) ? o.body : Buffer.from(o.body);
  const headers: Record<string, string> = { ...(body ? { 'content-type': 'application/json' } : {}), ...o.headers };
  if (body && o.length !== false) headers['content-length'] = String(body.length);
  const pieces = body ? piecesOf(body, o.pieces ?? 1) : [];
  return o.transport === 'h2c' ? sendH2(base, o, headers, pieces) : sendH1(base, o, headers, pieces, body !== undefined);
}

function sendH1(base: string, o: SendOptions, headers: Record<string, string>, pieces: Buffer[], hasBody: boolean): Promise<Answer> {
  if (hasBody && o.length === false) headers['transfer-encoding'] = 'chunked';
  return new Promise((resolve) => {
    let done = false;
    const finish = (a: Answer) => {
      if (!done) {
        done = true;
        resolve(a);
      }
    };
    const req = http.request(base + o.path, { method: o.method ?? 'POST', agent: false, headers });
    const abort = () => req.destroy();
    o.onOpen?.(abort);
    req.on('response', (res) => {
      o.onHead?.(abort);
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        o.onData?.(c, abort);
      });
      const end = (complete: boolean) => {
        const text = Buffer.concat(chunks).toString();
        finish({ status: res.statusCode ?? 0, headers: res.headers, text, body: parse(text), complete });
      };
      res.on('end', () => end(true));
      res.on('error', () => end(false));
      res.on('close', () => end(res.complete));
    });
    req.on('error', () => finish({ status: 0, headers: {}, text: '', body: undefined, complete: false }));
    if (!hasBody) {
      req.end();
      return;
    }
    void writePieces((b) => req.write(b), () => req.end(), pieces, o.gapMs ?? 0, () => done || req.destroyed);
  });
}

function sendH2(base: string, o: SendOptions, headers: Record<string, string>, pieces: Buffer[]): Promise<Answer> {
  return new Promise((resolve) => {
    const session = http2.connect(base);
    session.on('error', () => {});
    let done = false;
    const finish = (a: Answer) => {
      if (done) return;
      done = true;
      session.close();
      resolve(a);
    };
    const stream = session.request({ ':method': o.method ?? 'POST', ':path': o.path, ...headers }, { endStream: pieces.length === 0 });
    const abort = () => stream.close(http2.constants.NGHTTP2_CANCEL);
    o.onOpen?.(abort);
    let status = 0;
    let got: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      status = Number(h[':status']);
      got = h as typeof got;
      o.onHead?.(abort);
    });
    stream.on('data', (c: Buffer) => {
      chunks.push(c);
      o.onData?.(c, abort);
    });
    // Complete: the response's END_STREAM arrived and the stream closed without an error code.
    let ended = false;
    stream.on('end', () => (ended = true));
    stream.on('error', () => {});
    stream.on('close', () => {
      const text = Buffer.concat(chunks).toString();
      finish({ status, headers: got, text, body: parse(text), complete: ended && stream.rstCode === http2.constants.NGHTTP2_NO_ERROR, rstCode: stream.rstCode });
    });
    if (pieces.length > 0) void writePieces((b) => stream.write(b), () => stream.end(), pieces, o.gapMs ?? 0, () => done || stream.destroyed);
  });
}
