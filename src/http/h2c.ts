/**
 * Cleartext HTTP/2 (h2c, prior knowledge) on the same port as HTTP/1.1: the AWS
 * SDK for JavaScript's Bedrock client speaks nothing else over `http://`. The
 * HTTP/1.1 server keeps its listening socket and every behaviour it had; its
 * `connection` listener is wrapped so each new socket is first peeked: bytes that
 * begin the HTTP/2 connection preface go to an HTTP/2 server (never listening
 * itself), anything else to the original HTTP/1.1 listener, with the peeked bytes
 * put back. Both servers call the same request handler through the compatibility
 * API. The HTTP/2 side is bounded: concurrent streams, header list size, session
 * memory, and an idle timeout; a socket that sends nothing is dropped after the
 * header timeout. Sessions are tracked so a drain can close them.
 */
import http from 'node:http';
import http2 from 'node:http2';
import type { Socket } from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/** Connection-specific headers: HTTP/2 forbids them (Node warns or throws); the HTTP/1.1 code sets some. */
const CONNECTION_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/**
 * What the shared handler reads of an HTTP/1.1 response, on an HTTP/2 one: `destroyed` (the
 * stream's), `writeHead` without a reason phrase, and `writeHead`/`setHeader` ignoring connection-specific headers (`connection: close` after a
 * refusal means nothing on a multiplexed connection; the stream ends on its own).
 */
function compatResponse(res: http2.Http2ServerResponse): http.ServerResponse {
  Object.defineProperty(res, 'destroyed', { get: () => res.stream.destroyed, configurable: true });
  const setHeader = res.setHeader.bind(res);
  res.setHeader = (name: string, value: number | string | readonly string[]) => (CONNECTION_HEADERS.has(name.toLowerCase()) ? res : setHeader(name, value));
  // HTTP/2 has no reason phrase: the HTTP/1.1 code's status message is dropped (Node would warn).
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => http2.Http2ServerResponse;
  (res as { writeHead: unknown }).writeHead = (status: number, ...rest: unknown[]) => {
    const args = typeof rest[0] === 'string' ? rest.slice(1) : rest;
    const headers = args[0];
    if (headers && typeof headers === 'object' && !Array.isArray(headers)) {
      args[0] = Object.fromEntries(Object.entries(headers).filter(([name]) => !CONNECTION_HEADERS.has(name.toLowerCase())));
    }
    return writeHead(status, ...args);
  };
  return res as unknown as http.ServerResponse;
}

export interface H2cLimits {
  /** A connection that sends no first bytes within this is closed. */
  firstBytesTimeoutMs: number;
  /** An HTTP/2 session idle this long is closed. */
  idleTimeoutMs: number;
  /** The largest header list accepted (as HTTP/1.1's maxHeaderSize). */
  maxHeaderSize: number;
}

export type CompatHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export class H2cFrontDoor {
  readonly h2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();

  constructor(h1: http.Server, handler: CompatHandler, limits: H2cLimits) {
    this.h2 = http2.createServer({
      maxSessionMemory: 10,
      maxHeaderListPairs: 256,
      peerMaxConcurrentStreams: 100,
      maxSessionRejectedStreams: 100,
      maxSessionInvalidFrames: 100,
      settings: { maxConcurrentStreams: 100, maxHeaderListSize: limits.maxHeaderSize, enablePush: false },
    }, (req, res) => handler(req as unknown as http.IncomingMessage, compatResponse(res)));
    // Without a listener of its own, an idle session is destroyed.
    this.h2.setTimeout(limits.idleTimeoutMs);
    this.h2.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      session.on('error', () => session.destroy());
    });
    // A stream the peer broke (a malformed header, a reset): nothing to answer.
    this.h2.on('sessionError', () => {});
    const original = h1.listeners('connection') as Array<(socket: Socket) => void>;
    h1.removeAllListeners('connection');
    h1.on('connection', (socket: Socket) => this.peek(socket, (isH2) => {
      if (isH2) this.h2.emit('connection', socket);
      else for (const l of original) l.call(h1, socket);
    }, limits.firstBytesTimeoutMs));
  }

  /** Reads just enough to tell the HTTP/2 preface from an HTTP/1.1 request line, then puts it back. */
  private peek(socket: Socket, route: (isH2: boolean) => void, timeoutMs: number): void {
    let seen = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    const done = (isH2: boolean) => {
      clearTimeout(timer);
      socket.off('readable', read);
      socket.off('close', closed);
      socket.unshift(seen);
      route(isH2);
    };
    const closed = () => clearTimeout(timer);
    const read = () => {
      let chunk: Buffer | null;
      while ((chunk = socket.read() as Buffer | null) !== null) {
        seen = Buffer.concat([seen, chunk]);
        const n = Math.min(seen.length, PREFACE.length);
        if (!seen.subarray(0, n).equals(PREFACE.subarray(0, n))) return done(false);
        if (seen.length >= PREFACE.length) return done(true);
      }
    };
    socket.on('readable', read);
    socket.once('close', closed);
  }

  /** Graceful: every session is told to finish its streams and take no new ones. */
  close(): void {
    this.h2.close();
    for (const s of this.sessions) s.close();
  }

  /** Every session is torn down now. */
  destroyAll(): void {
    for (const s of this.sessions) s.destroy();
  }

  get openSessions(): number {
    return this.sessions.size;
  }
}
