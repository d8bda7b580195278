/**
 * The HTTP front door. Gives every request an id, answers health checks
 * (readiness.ts: one shared check, so a flood of probes never becomes a
 * flood of store pings),
 * sends `/v1/proxy/*` to the gateway, the MCP front door's paths (`/v1/mcp/*`, the OAuth metadata
 * documents and the authorization page: mcp-front-door.ts, when MCP authorization is on) to it, and
 * everything else under `/v1` to the admin router. Malformed HTTP is answered by the client-error handler with the
 * contract's JSON; header and body read timeouts come from the config.
 * `drain()` implements graceful shutdown. Cleartext HTTP/2 is served on the same
 * port (h2c.ts), through the same handler, with the same header and body
 * deadlines (read against the injected clock). A WebSocket upgrade of a proxy path
 * (`Upgrade: websocket` on `/v1/proxy/…`) goes to the upgrade handler (realtime
 * sessions); any other upgrade is served as a plain request. With
 * KEYWARD_TLS_CERT/KEY the port speaks TLS: ALPN `h2` goes to the HTTP/2
 * server, anything else to the HTTP/1.1 one (upgrades, `wss:`, included).
 */
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import http from '../node-http.js';
import type { AddressInfo, Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import tls from 'node:tls';
import type { Config } from '../settings/config.js';
import { ApiError, Errors, toApiError } from '../errors.js';
import type { Logger } from '../log.js';
import { systemClock, systemTimers, type Clock, type Timers } from '../clock.js';
import { H2cFrontDoor } from './h2c.js';
import type { LoopbackMetricsListener } from './metrics-listener.js';
import { Readiness } from './readiness.js';
import { rawErrorResponse, sendError, sendJson } from './reply.js';
import type { Route, Router } from './router.js';

export interface ProxyHandler {
  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void;
}

/** WebSocket upgrades of proxy paths (src/gateway/realtime/): sessions that drain like streams. */
export interface UpgradeHandler {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, requestId: string): void;
  /** Refuses new sessions, lets open ones go on up to `ms`, then closes them. */
  drain(ms: number): Promise<void>;
  readonly openSessions: number;
}

/** Runs a matched admin route: authentication, limits, idempotency, the handler, audit (src/api/admin-pipeline.ts). */
export interface AdminHandler {
  handle(route: Route, params: Record<string, string>, query: URLSearchParams, req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void>;
}

/** Keyward's MCP routes, their metadata documents and the authorization pages (mcp-front-door.ts), when MCP authorization is on. */
export interface FrontDoor {
  owns(path: string): boolean;
  /** CORS for the authorization server's JSON endpoints: true when it answered (a preflight). */
  cors(req: IncomingMessage, res: ServerResponse, path: string): boolean;
  handle(req: IncomingMessage, res: ServerResponse, requestId: string, path: string, query: URLSearchParams): void;
}

export interface HealthCheck {
  /** Resolves when the store and key wrapper answer. */
  ready(): Promise<void>;
  /** What a readiness result's age is measured on, and the HTTP/2 deadlines' sweep runs on (default: the real ones). */
  timers?: Pick<Timers, 'elapsed' | 'every'>;
}

export interface ExtraRoutes {
  /** Unauthenticated GET endpoints such as /metrics and /v1/openapi.json. */
  [path: string]: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
}

const PROXY_PREFIX = '/v1/proxy/';
/**
 * `req_` and 32 hex digits, all random (a counter would tell a caller how busy the instance is). The bytes
 * come from a pool refilled 256 ids at a time: a random UUID with its dashes removed cost ~2 µs per request.
 */
const idPool = Buffer.alloc(16 * 256);
let idOffset = idPool.length;
export const newRequestId = (): string => {
  if (idOffset === idPool.length) {
    randomFillSync(idPool);
    idOffset = 0;
  }
  idOffset += 16;
  return `req_${idPool.toString('hex', idOffset - 16, idOffset)}`;
};

export class HttpServer {
  readonly server: Server;
  private readonly h2c: H2cFrontDoor;
  /** What listens: the HTTP/1.1 server itself, or the TLS server in front of it. */
  private readonly listener: NetServer;
  private draining = false;
  private inflight = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly readiness: Readiness;

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly router: Router,
    private readonly pipeline: AdminHandler,
    private readonly proxy: ProxyHandler,
    health: HealthCheck,
    private readonly extra: ExtraRoutes = {},
    private readonly upgrades?: UpgradeHandler,
    /** KEYWARD_METRICS_PORT's listener: opened with the main one, closed after the drain (a collector's last scrape). */
    private readonly loopbackMetrics?: LoopbackMetricsListener,
    clock: Clock = systemClock,
    private readonly mcp?: FrontDoor,
  ) {
    const requestTimeoutMs = Math.max(config.bodyTimeoutMs, config.headersTimeoutMs);
    // Node checks the HTTP/1.1 deadlines on this interval (30 s by default); HTTP/2's sweep runs on it too.
    const checkEveryMs = Math.max(50, Math.min(1000, Math.floor(Math.min(config.headersTimeoutMs, config.bodyTimeoutMs) / 4)));
    const timers = health.timers ?? systemTimers;
    this.readiness = new Readiness(() => health.ready(), log, () => timers.elapsed());
    this.server = http.createServer({
      // Only a WebSocket upgrade of a proxy path is taken over; any other `Upgrade` is a plain request.
      shouldUpgradeCallback: (req) => upgrades !== undefined && req.url?.startsWith(PROXY_PREFIX) === true && String(req.headers.upgrade).toLowerCase() === 'websocket',
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: checkEveryMs,
      keepAliveTimeout: 65_000,
      requireHostHeader: false,
      maxHeaderSize: 32 * 1024,
    }, (req, res) => this.onRequest(req, res));
    this.h2c = new H2cFrontDoor(this.server, (req, res) => this.onRequest(req, res), {
      firstBytesTimeoutMs: config.headersTimeoutMs,
      requestTimeoutMs,
      checkEveryMs,
      clock,
      timers,
      idleTimeoutMs: 65_000,
      maxHeaderSize: 32 * 1024,
    });
    this.server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
    this.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.upgrades!.handleUpgrade(req, socket, head, newRequestId()));
    this.listener = config.tls ? this.tlsFront(config.tls) : this.server;
    // `Expect: 100-continue` with a body over KEYWARD_MAX_BODY (KEYWARD_MAX_ADMIN_BODY off the proxy): do not invite
    // a body that will be refused (Node would send 100 Continue before any check); the handler refuses it unread,
    // and the connection closes.
    this.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
      const limit = req.url?.startsWith(PROXY_PREFIX) || req.url?.startsWith('/v1/mcp/') ? this.config.maxBody : this.config.maxAdminBody;
      if (Number(req.headers['content-length']) > limit) res.setHeader('connection', 'close');
      else res.writeContinue();
      this.onRequest(req, res);
    });
    // An `Expect` other than 100-continue: Node would answer a bare 417 with no body; answer it in the contract's shape.
    this.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      res.setHeader('connection', 'close');
      sendError(res, Errors.expectationFailed(), { 'x-request-id': newRequestId() });
    });
  }

  /**
   * TLS on the listening port: each connection's ALPN choice picks the server (h2: HTTP/2; http/1.1 or none:
   * HTTP/1.1, whose own connection handling, timeouts and upgrades apply as on cleartext).
   */
  private tlsFront(pem: { cert: Buffer; key: Buffer }): tls.Server {
    const front = tls.createServer({ cert: pem.cert, key: pem.key, ALPNProtocols: ['h2', 'http/1.1'], minVersion: 'TLSv1.2' }, (socket) => {
      if (socket.alpnProtocol === 'h2') this.h2c.h2.emit('connection', socket);
      else this.server.emit('connection', socket);
    });
    front.on('tlsClientError', (_err, socket) => socket.destroy());
    return front;
  }

  async listen(): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      this.listener.once('error', reject);
      this.listener.listen(this.config.port, this.config.host, () => {
        this.listener.off('error', reject);
        resolve();
      });
    });
    if (this.loopbackMetrics) {
      const metrics = await this.loopbackMetrics.listen().catch((err: unknown) => {
        this.listener.close();
        throw err;
      });
      this.log.info({ address: metrics.address, port: metrics.port }, 'metrics listening');
    }
    return this.listener.address() as AddressInfo;
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    // A pipelined request waits for its turn (Node queues its response until the one before has
    // finished). If that one closed the connection (`connection: close` after a refused body, a
    // drain…), its turn never comes and it never runs (RFC 9112 §9.6): a request sent after a
    // refusal is never executed with its answer thrown away.
    if (!res.socket) {
      res.once('socket', () => this.onRequest(req, res));
      return;
    }
    // The parser can still hand us a request read after a closing response has ended the socket.
    if (res.socket.writableEnded || res.socket.destroyed) {
      res.socket.destroy();
      return;
    }
    this.inflight++;
    res.once('close', () => {
      if (--this.inflight === 0) for (const w of this.idleWaiters.splice(0)) w();
    });
    const requestId = newRequestId();
    const url = req.url ?? '';
    if (this.draining) {
      res.setHeader('connection', 'close');
      sendError(res, Errors.unavailable(), { 'x-request-id': requestId });
      return;
    }
    if (url.startsWith(PROXY_PREFIX)) {
      this.proxy.handle(req, res, requestId);
      return;
    }
    // An absolute-form target (`POST http://evil.test/…`) is never routed anywhere.
    if (!url.startsWith('/')) {
      req.resume();
      sendError(res, url.includes('/v1/proxy/') ? Errors.pathNotAllowed() : Errors.notFound(), { 'x-request-id': requestId });
      return;
    }
    if (this.mcp) {
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      if (this.mcp.owns(path)) {
        this.mcp.handle(req, res, requestId, path, new URLSearchParams(q === -1 ? '' : url.slice(q + 1)));
        return;
      }
      if (this.mcp.cors(req, res, path)) return;
    }
    res.setHeader('x-request-id', requestId);
    void this.admin(req, res, requestId, url);
  }

  private async admin(req: IncomingMessage, res: ServerResponse, requestId: string, url: string): Promise<void> {
    try {
      const q = url.indexOf('?');
      const path = q === -1 ? url : url.slice(0, q);
      const query = new URLSearchParams(q === -1 ? '' : url.slice(q + 1));
      const method = req.method ?? 'GET';
      if (method === 'GET' && (path === '/healthz' || path === '/readyz')) {
        req.resume();
        await this.healthCheck(path, res);
        return;
      }
      const extra = method === 'GET' ? this.extra[path] : undefined;
      if (extra) {
        req.resume();
        await extra(req, res);
        return;
      }
      const match = this.router.match(method, path);
      if (!match) {
        req.resume();
        throw Errors.notFound('No such route.');
      }
      await this.pipeline.handle(match.route, match.params, query, req, res, requestId);
    } catch (err) {
      const apiError = toApiError(err);
      if (!(err instanceof ApiError)) this.log.error({ err, request_id: requestId }, 'admin request failed');
      // Don't leave an unread body on a keep-alive connection.
      if (!req.readableEnded) res.setHeader('connection', 'close');
      sendError(res, apiError);
    }
  }

  private async healthCheck(path: string, res: ServerResponse): Promise<void> {
    if (path === '/healthz') {
      sendJson(res, 200, { status: 'ok' });
      return;
    }
    if (this.draining) {
      sendJson(res, 503, { status: 'draining' });
      return;
    }
    if (await this.readiness.ready()) sendJson(res, 200, { status: 'ready' });
    else sendJson(res, 503, { status: 'unavailable' });
  }

  private onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT';
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const response = timedOut
      ? rawErrorResponse(408, 'Request Timeout', Errors.requestTimeout())
      : tooLarge
        ? rawErrorResponse(431, 'Request Header Fields Too Large', Errors.headersTooLarge())
        : rawErrorResponse(400, 'Bad Request', Errors.badRequest());
    this.log.debug({ code: err.code }, 'malformed request refused');
    socket.end(response);
    socket.destroySoon?.();
  }

  /** Graceful shutdown: stop accepting, refuse new requests, wait for in-flight ones up to `ms`. */
  async drain(ms: number): Promise<boolean> {
    this.draining = true;
    if (this.listener !== this.server) this.listener.close();
    this.server.close();
    this.server.closeIdleConnections();
    this.h2c.close();
    // Open sessions drain beside in-flight requests, in the same window.
    const sessions = this.upgrades?.drain(ms);
    if (this.inflight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        timer.unref();
        this.idleWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await sessions;
    const clean = this.inflight === 0 && (this.upgrades?.openSessions ?? 0) === 0;
    this.server.closeAllConnections();
    this.h2c.destroyAll();
    this.loopbackMetrics?.close();
    return clean;
  }

  get inflightRequests(): number {
    return this.inflight;
  }
}
