/**
 * Cleartext HTTP/2 (h2c, prior knowledge) on the same port as HTTP/1.1: the AWS
 * SDK for JavaScript's Bedrock client speaks nothing else over `http://`. The
 * HTTP/1.1 server keeps its listening socket and every behaviour it had; its
 * `connection` listener is wrapped so each new socket is first peeked: bytes that
 * begin the HTTP/2 connection preface go to an HTTP/2 server (never listening
 * itself), anything else to the original HTTP/1.1 listener, with the peeked bytes
 * put back. Both servers call the same request handler through the compatibility
 * API (filled in where the handler reads what it lacks: compatRequest, compatResponse). The HTTP/2 side is bounded: concurrent streams, header list size, session
 * memory, and an idle timeout; a socket that sends nothing is dropped after the
 * header timeout. New streams are handed to the handler at most STREAMS_PER_TURN
 * to a turn of the event loop, in order (TurnQueue), so a burst of them cannot
 * hold up every other connection. Sessions are tracked so a drain can close them.
 *
 * HTTP/2 streams keep HTTP/1.1's deadlines (KEYWARD_HEADERS_TIMEOUT_MS,
 * KEYWARD_BODY_TIMEOUT_MS): a session must bring its first request's headers
 * within the header timeout of its preface, and a request's body must have
 * ended (END_STREAM) within the request timeout (the larger of the two, as
 * HTTP/1.1's requestTimeout) of its headers. A late body is answered 408
 * `request_timeout` if no response has started, and its stream is reset
 * either way, as HTTP/1.1 closes the connection. One sweep, on an interval
 * like Node's own connection check (on the injected timers), reads deadlines
 * against the clock.
 */
import type * as http from 'node:http';
import http2 from 'node:http2';
import type { Socket } from 'node:net';
import { PassThrough, type Readable } from 'node:stream';
import type { Clock, Timers } from '../clock.js';
import { Errors } from '../errors.js';
import { sendError } from './reply.js';

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

/**
 * What the shared handler reads of an HTTP/1.1 request that HTTP/2's compatibility request lacks:
 * `headersDistinct` (each header's values as an array; the admin API reads credential headers through it).
 */
function compatRequest(req: http2.Http2ServerRequest): http.IncomingMessage {
  if (!('headersDistinct' in req)) {
    Object.defineProperty(req, 'headersDistinct', {
      configurable: true,
      get(): NodeJS.Dict<string[]> {
        const out: NodeJS.Dict<string[]> = {};
        const raw = req.rawHeaders;
        for (let i = 0; i < raw.length; i += 2) {
          const name = raw[i]!.toLowerCase();
          if (name.startsWith(':')) continue;
          (out[name] ??= []).push(raw[i + 1]!);
        }
        return out;
      },
    });
  }
  return req as unknown as http.IncomingMessage;
}

/**
 * An HTTP/2 request whose answer is written while its body is still coming: once the answer has gone out whole
 * (the stream's writable side finished: its last DATA frame is queued before anything sent after it), the stream
 * is reset, which tells the client to stop sending. Nothing for an HTTP/1.1 request (its connection is closed
 * instead).
 */
export function stopUpload(req: http.IncomingMessage): void {
  if (req.httpVersionMajor < 2) return;
  const stream = (req as unknown as http2.Http2ServerRequest).stream;
  const reset = (): void => {
    if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
  };
  if (stream.writableFinished) reset();
  else stream.once('finish', reset);
}

/**
 * An HTTP/2 request body that ends only at its END_STREAM. Node's compatibility request ends its readable side
 * when the stream is reset too (by the client, or by a deadline here), so a pipe would hand a cut body on as a
 * whole one; this one errors instead (the upstream request is then aborted, as HTTP/1.1's is). Its end waits one
 * turn, for the 'aborted' or the reset code that follows a reset's end.
 */
class H2Body extends PassThrough {
  constructor(req: http2.Http2ServerRequest) {
    super();
    // Its readers listen for the error they care about; a reset nobody reads is no crash.
    this.on('error', () => {});
    let aborted = false;
    req.once('aborted', () => {
      aborted = true;
      this.destroy(new Error('the request stream was reset'));
    });
    req.on('error', (err: Error) => this.destroy(err));
    req.pipe(this, { end: false });
    req.once('end', () => setImmediate(() => {
      const code = req.stream.rstCode;
      if (aborted || (code !== undefined && code !== http2.constants.NGHTTP2_NO_ERROR)) this.destroy(new Error('the request stream was reset'));
      else this.end();
    }));
  }
}

/** The request's body as the gateway reads it: the request itself (HTTP/1.1), or one that ends only at END_STREAM (HTTP/2). */
export function requestBody(req: http.IncomingMessage): Readable {
  return req.httpVersionMajor < 2 ? req : new H2Body(req as unknown as http2.Http2ServerRequest);
}

export interface H2cLimits {
  /** A connection that sends no first bytes within this is closed; a session that opens no stream within it, too. */
  firstBytesTimeoutMs: number;
  /** A request's body must end within this of its headers. */
  requestTimeoutMs: number;
  /** How often deadlines are checked. */
  checkEveryMs: number;
  /** Where deadlines read the time. */
  clock: Clock;
  /** What the sweep runs on (tests move it: test/support/clocks.ts). */
  timers: Pick<Timers, 'every'>;
  /** An HTTP/2 session idle this long is closed. */
  idleTimeoutMs: number;
  /** The largest header list accepted (as HTTP/1.1's maxHeaderSize). */
  maxHeaderSize: number;
  /** At most this many new streams are handled in one turn of the event loop; the rest wait, in order, for the next (STREAMS_PER_TURN). */
  streamsPerTurn?: number;
}

/**
 * How many new HTTP/2 streams are handled in one turn of the event loop. One socket read can carry a hundred
 * HEADERS frames (a caller that stalled, then caught up), and several sessions' reads land in the same turn:
 * handling each at once made turns of 100 ms and more while 10,000 streams opened at 1,000 a second, and every
 * other connection's request waited behind them (issue 29). As Envoy's max_requests_per_io_cycle does, the rest
 * are handled in the turns after, where the I/O of everything else comes first. Each waits only its turn: no stream
 * is refused and none is reordered.
 */
export const STREAMS_PER_TURN = 16;

/**
 * Jobs run in arrival order, at most `perTurn` of them between two check phases of the event loop (setImmediate
 * marks the turn, so this is ordering, not a timer: nothing here reads the clock).
 */
export class TurnQueue {
  /** Waiting jobs from `head` on; those before it have run (their slots emptied so nothing is kept alive). */
  private readonly jobs: Array<(() => void) | undefined> = [];
  private head = 0;
  private ranThisTurn = 0;
  private armed = false;

  constructor(private readonly perTurn: number) {}

  run(job: () => void): void {
    this.arm();
    if (this.head === this.jobs.length && this.ranThisTurn < this.perTurn) {
      this.ranThisTurn++;
      job();
    } else this.jobs.push(job);
  }

  /** How many jobs wait for a later turn. */
  get waiting(): number {
    return this.jobs.length - this.head;
  }

  private arm(): void {
    if (this.armed) return;
    this.armed = true;
    setImmediate(this.nextTurn);
  }

  private readonly nextTurn = (): void => {
    this.armed = false;
    this.ranThisTurn = 0;
    while (this.head < this.jobs.length && this.ranThisTurn < this.perTurn) {
      const job = this.jobs[this.head]!;
      this.jobs[this.head++] = undefined;
      this.ranThisTurn++;
      this.arm();
      job();
    }
    if (this.head === this.jobs.length) {
      this.jobs.length = 0;
      this.head = 0;
    }
  };
}

export type CompatHandler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** A request whose body has not ended yet, and when it must have. */
interface Pending {
  readonly stream: http2.ServerHttp2Stream;
  readonly res: http2.Http2ServerResponse;
  readonly deadline: number;
}

export class H2cFrontDoor {
  readonly h2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  /** Sessions that have not opened a stream yet, with their deadline. */
  private readonly opening = new Map<http2.ServerHttp2Session, number>();
  private readonly bodies = new Set<Pending>();
  private readonly stopSweep: () => void;
  /** New streams beyond this turn's share wait here for the next turns (STREAMS_PER_TURN). */
  private readonly admission: TurnQueue;

  constructor(h1: http.Server, handler: CompatHandler, private readonly limits: H2cLimits) {
    this.h2 = http2.createServer({
      maxSessionMemory: 10,
      maxHeaderListPairs: 256,
      peerMaxConcurrentStreams: 100,
      maxSessionRejectedStreams: 100,
      maxSessionInvalidFrames: 100,
      settings: { maxConcurrentStreams: 100, maxHeaderListSize: limits.maxHeaderSize, enablePush: false },
    }, (req, res) => {
      // A body follows unless the HEADERS frame ended the stream: it must end in time.
      if (!req.stream.endAfterHeaders) this.bodies.add({ stream: req.stream, res, deadline: limits.clock.now() + limits.requestTimeoutMs });
      this.admission.run(() => {
        // Reset by the caller while it waited its turn: nothing to answer, nothing to hold.
        if (!req.stream.destroyed) handler(compatRequest(req), compatResponse(res));
      });
    });
    this.admission = new TurnQueue(limits.streamsPerTurn ?? STREAMS_PER_TURN);
    // Without a listener of its own, an idle session is destroyed.
    this.h2.setTimeout(limits.idleTimeoutMs);
    this.h2.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.add(session);
      this.opening.set(session, limits.clock.now() + limits.firstBytesTimeoutMs);
      session.once('stream', () => this.opening.delete(session));
      session.once('close', () => {
        this.sessions.delete(session);
        this.opening.delete(session);
      });
      session.on('error', () => session.destroy());
    });
    this.stopSweep = limits.timers.every(limits.checkEveryMs, () => this.check());
    // A stream the peer broke (a malformed header, a reset): nothing to answer.
    this.h2.on('sessionError', () => {});
    const original = h1.listeners('connection') as Array<(socket: Socket) => void>;
    h1.removeAllListeners('connection');
    h1.on('connection', (socket: Socket) => this.peek(socket, (isH2) => {
      if (isH2) this.handOver(socket);
      else for (const l of original) l.call(h1, socket);
    }, limits.firstBytesTimeoutMs));
  }

  /**
   * Gives a peeked socket to the HTTP/2 server. The session reads the native handle itself, but the end of the
   * client's side reaches only the socket: after the session has taken the bytes put back (on its next tick), a
   * reader of that end closes the socket (not half-open, as the HTTP/1.1 server makes it), so a client that
   * vanishes ends its session and streams at once, as it does for HTTP/1.1.
   */
  private handOver(socket: Socket): void {
    socket.allowHalfOpen = false;
    this.h2.emit('connection', socket);
    process.nextTick(() => socket.on('readable', () => socket.read()));
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

  /** The deadlines: a session with no stream yet, a body not ended in time. */
  private check(): void {
    const now = this.limits.clock.now();
    for (const [session, deadline] of this.opening) {
      if (now >= deadline) {
        this.opening.delete(session);
        session.destroy();
      }
    }
    for (const pending of this.bodies) {
      const { stream, res } = pending;
      // Gone, or its END_STREAM arrived (nghttp2's state, read or not by the handler): nothing to enforce.
      if (stream.destroyed || stream.closed || stream.state.remoteClose) this.bodies.delete(pending);
      else if (now >= pending.deadline) {
        this.bodies.delete(pending);
        this.late(stream, res);
      }
    }
  }

  /** A body past its deadline: 408 if no response started, and the stream ends (HTTP/1.1 closes the connection). */
  private late(stream: http2.ServerHttp2Stream, res: http2.Http2ServerResponse): void {
    if (res.headersSent) {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      return;
    }
    // The handler's response (compatResponse made it speak HTTP/1.1's API in place).
    sendError(res as unknown as http.ServerResponse, Errors.requestTimeout());
    stopUpload(res.req as unknown as http.IncomingMessage);
  }

  /** Graceful: every session is told to finish its streams and take no new ones. */
  close(): void {
    this.h2.close();
    for (const s of this.sessions) s.close();
  }

  /** Every session is torn down now. */
  destroyAll(): void {
    this.stopSweep();
    for (const s of this.sessions) s.destroy();
  }

  get openSessions(): number {
    return this.sessions.size;
  }
}
