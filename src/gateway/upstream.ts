/**
 * The upstream leg, on http-proxy-3's Node http path with keep-alive agents
 * (its experimental fetch path is never used: its proxyTimeout would cut long
 * streams). A chunked request body streams through a size limiter, and a
 * body a scope reads through its scan (body-scan.ts); either cuts the exchange
 * off when the body breaks its limit, before the upstream has it whole. The
 * response (selfHandleResponse) streams back through the key masker and any
 * taps (usage reading) in one pass, never buffered.
 * Redirects are passed back, never followed. Connect and idle timeouts come
 * from the config; neither caps a stream's length. A caller who disconnects
 * aborts the upstream request.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import { ProxyServer } from 'http-proxy-3';
import type { Config } from '../config.js';
import { ApiError, Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { sendError } from '../http/reply.js';
import type { BodyScan } from './body-scan.js';
import type { ProxyContext } from './contracts.js';
import { downstreamHeaders, stripKeyParams, upstreamHeaders } from './headers.js';
import { StreamMasker, maskString } from './masking.js';
import type { Provider } from '../catalog/registry.js';

export interface ResponseTap {
  scan(chunk: Buffer): void;
}

/** What the gateway hands the upstream leg for one request. */
export interface Forward {
  ctx: ProxyContext;
  /** The caller's request and response (the context does not expose them). */
  req: IncomingMessage;
  res: ServerResponse;
  provider: Provider;
  key: string;
  /** The body's scan when a scope read it: the held bytes, then the rest, scanned as they pass. */
  body?: BodyScan;
  /** Readers of the masked response bytes as they pass (usage reading); they never change them. */
  taps: ResponseTap[];
  /** Headers added to a response head (proxied, or an upstream fault) about to go out with `status`. */
  responseHeaders(ctx: ProxyContext, status: number): Record<string, string>;
  /** Called when the body's scan refuses it before any response started: the upstream never had a whole request. */
  onCutOff?(): void;
  /** Called once when the exchange is over, whatever happened. */
  onFinish(): void;
}

interface Flight {
  forward: Forward;
  proxyReq?: http.ClientRequest;
  /** The caller's body grew past the limit or broke its scan: abort as soon as we can. */
  overflow: boolean;
  /** The upstream's response head arrived. */
  responded?: boolean;
}

const UPSTREAM_ERRORS_502 = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EPROTO', 'HPE_INVALID_CONSTANT']);

class IdleTimeout extends Error {
  readonly code = 'EIDLE_TIMEOUT';
}

/** Counts request body bytes; past the limit it stops the flow and reports once. */
class BodyLimiter extends Transform {
  private seen = 0;
  constructor(private readonly limit: number, private readonly onOverflow: () => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) {
      this.onOverflow();
      done();
      return;
    }
    done(null, chunk);
  }
}

/**
 * The response body, upstream to caller: masked, read by the taps and counted in one pass, with
 * backpressure. Plain listeners rather than stream.pipeline over a Transform chain: per response,
 * pipeline builds an AbortController and, on completion, an AbortError and a premature-close error
 * (stack traces included), which cost more than everything else on this leg.
 */
function relay(source: Readable, complete: () => boolean, res: ServerResponse, masker: StreamMasker, taps: ResponseTap[], ctx: ProxyContext): void {
  const send = (chunk: Buffer | undefined): void => {
    if (chunk === undefined || res.destroyed) return;
    for (const tap of taps) tap.scan(chunk);
    ctx.bytesOut += chunk.length;
    if (!res.write(chunk)) source.pause();
  };
  res.on('drain', () => source.resume());
  source.on('data', (chunk: Buffer) => send(masker.push(chunk)));
  source.on('end', () => {
    send(masker.end());
    if (!res.destroyed) res.end();
  });
  // An upstream that dies mid-body ('aborted', ECONNRESET): the caller's stream ends with an error,
  // never a clean end. A caller who leaves stops the upstream response.
  source.on('error', () => {});
  source.on('close', () => {
    if (!complete() && !res.destroyed) res.destroy();
  });
  res.on('close', () => {
    if (!complete()) source.destroy();
  });
}

/**
 * Upstream is asked for identity encoding so the key can be seen; one that compresses anyway is
 * decompressed here (the caller gets identity bytes), so masking never goes blind.
 */
/** A decompressor for `encoding`; undefined for identity; null for one the gateway cannot undo. */
function decoderFor(encoding: string | undefined): Transform | undefined | null {
  switch (encoding?.trim().toLowerCase()) {
    case undefined: case '': case 'identity': return undefined;
    case 'gzip': case 'x-gzip': return zlib.createGunzip();
    case 'deflate': return zlib.createInflate();
    case 'br': return zlib.createBrotliDecompress();
    case 'zstd': return (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress?.() ?? null;
    default: return null;
  }
}

export class UpstreamProxy {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly proxy: ProxyServer;
  /** The flight of each request in the air: http-proxy-3's events name the request, not our context. */
  private readonly flights = new WeakMap<IncomingMessage, Flight>();

  /**
   * @param keyQueryParams every key-carrying query parameter any provider declares: all are stripped
   * whatever the provider, since any of them may hold the caller's token.
   */
  constructor(private readonly config: Config, private readonly log: Logger, private readonly keyQueryParams: readonly string[]) {
    const agentOptions = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets: 1024, maxFreeSockets: 256, scheduling: 'lifo' as const };
    this.agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
    // xfwd off (the gateway adds no X-Forwarded-*), Host set to the upstream's, redirects never followed,
    // certificates always verified, the response handled by us (masking, usage, backpressure).
    this.proxy = new ProxyServer({ xfwd: false, changeOrigin: true, selfHandleResponse: true, followRedirects: false, secure: true });
    this.proxy.on('proxyReq', (proxyReq: http.ClientRequest, req: IncomingMessage) => {
      const flight = this.flights.get(req);
      if (flight) this.watch(proxyReq, flight);
    });
    this.proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage) => {
      const flight = this.flights.get(req);
      if (flight) this.onProxyRes(proxyRes, flight);
      else proxyRes.resume();
    });
    // Errors are handled per request by the callback given to web(); these keep the emitter from throwing.
    this.proxy.on('error', () => {});
    this.proxy.on('econnreset', () => {});
  }

  forward(f: Forward): void {
    const { ctx, provider, key, req, res } = f;
    const flight: Flight = { forward: f, overflow: false };
    this.flights.set(req, flight);

    // Cut off: the upstream request is destroyed before its body completes; the caller gets the refusal if no
    // response has started (and the connection closes), else its stream is cut.
    const cutOff = (err: ApiError, stopReading: () => void, refused: boolean): void => {
      if (flight.overflow) return;
      flight.overflow = true;
      flight.proxyReq?.destroy();
      stopReading();
      if (!res.headersSent) {
        res.setHeader('connection', 'close');
        ctx.error = err;
        ctx.status = err.status;
        if (refused) f.onCutOff?.();
        sendError(res, err);
      } else {
        res.destroy();
      }
    };
    // A declared content-length was held to the limit already and Node's parser holds the body to it:
    // only a chunked body is counted on its way upstream (a scanned body counts itself).
    let body: Readable | undefined;
    if (f.body) {
      const scan = f.body;
      // A body a scope reads is refused by its scan (a scope refusal); a body only counted is cut off after forwarding.
      scan.onViolation((err) => cutOff(err, () => {
        scan.discard();
        req.resume();
      }, true));
      body = scan;
    } else if (req.headers['content-length'] === undefined) {
      const limiter = new BodyLimiter(this.config.maxBody, () => cutOff(Errors.payloadTooLarge(this.config.maxBody), () => {
        req.unpipe(limiter);
        req.resume();
      }, false));
      req.pipe(limiter);
      body = limiter;
    }
    res.once('close', () => f.onFinish());
    // The scan broke before the upstream leg began: refused above, nothing is sent.
    if (flight.overflow) return;

    // http-proxy-3 builds the upstream request from req.url and req.headers, synchronously inside
    // web(). They are swapped for the clean path and headers for that call only, so the caller's
    // request object stays as it arrived (a plugin's onDone never finds the stored key in it).
    const query = stripKeyParams(ctx.query, this.keyQueryParams);
    const original = { url: req.url, headers: req.headers };
    req.url = `/${ctx.path}${query ? `?${query}` : ''}`;
    req.headers = upstreamHeaders(req.headers, provider, key, ctx.auth?.credential.fields) as typeof req.headers;
    try {
      this.proxy.web(req, res, {
        target: provider.target,
        agent: provider.target.protocol === 'https:' ? this.agents.https : this.agents.http,
        connectTimeout: this.config.upstreamConnectTimeoutMs,
        ...(body ? { buffer: body } : {}),
      }, (err: NodeJS.ErrnoException) => this.onError(err, flight));
    } finally {
      req.url = original.url;
      req.headers = original.headers;
    }
  }

  private watch(proxyReq: http.ClientRequest, flight: Flight): void {
    flight.proxyReq = proxyReq;
    if (flight.overflow) {
      proxyReq.destroy();
      return;
    }
    // Silence on the upstream connection, not the stream's length.
    proxyReq.setTimeout(this.config.upstreamIdleTimeoutMs, () => proxyReq.destroy(new IdleTimeout('upstream idle timeout')));
    // Node ends some exchanges with neither 'response' nor 'error': a 101 the request never asked
    // for has its socket destroyed silently (no 'upgrade' listener). The caller would wait forever:
    // a request that closes without a response is a 502 (after any error event had its turn).
    proxyReq.once('close', () => setImmediate(() => {
      if (!flight.responded) this.onError(Object.assign(new Error('upstream closed without a response'), { code: 'ECONNRESET' }), flight);
    }));
  }

  private onProxyRes(proxyRes: IncomingMessage, flight: Flight): void {
    const { res } = flight.forward;
    if (flight.overflow) {
      proxyRes.resume();
      return;
    }
    flight.responded = true;
    const { ctx, key, taps } = flight.forward;
    ctx.ttfbMs = Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    const status = proxyRes.statusCode ?? 0;
    const encoding = proxyRes.headers['content-encoding'];
    const decoder = decoderFor(typeof encoding === 'string' ? encoding : undefined);
    if (decoder === null) {
      // An encoding we cannot undo (stacked, or unknown) would hide the key from the scan: refused.
      proxyRes.destroy();
      this.onError(Object.assign(new Error(`upstream content-encoding ${String(encoding).slice(0, 32)}`), { code: 'EPROTO' }), flight);
      return;
    }
    const headers = downstreamHeaders(proxyRes.rawHeaders, (v) => maskString(v, key), decoder !== undefined);
    const extraHeaders = flight.forward.responseHeaders(ctx, status);
    for (const name in extraHeaders) headers.push(name, extraHeaders[name]!);
    try {
      // The parser lets through statuses writeHead refuses (`HTTP/1.1 099`): a bad gateway, not a throw
      // out of an event handler that would leave the caller waiting forever.
      if (status < 100 || status > 999) throw Object.assign(new Error(`upstream status ${status}`), { code: 'EPROTO' });
      // The reason phrase is upstream text too: masked like headers and body.
      res.writeHead(status, maskString(proxyRes.statusMessage ?? '', key), headers);
    } catch (err) {
      proxyRes.destroy();
      this.onError(err as NodeJS.ErrnoException, flight);
      return;
    }
    ctx.status = status;
    // Flush headers now: a stream's caller should see the status before the first event.
    res.flushHeaders();
    const masker = new StreamMasker(Buffer.from(key, 'utf8'));
    if (decoder) {
      proxyRes.on('error', () => {});
      proxyRes.on('close', () => {
        if (!proxyRes.complete) decoder.destroy();
      });
      proxyRes.pipe(decoder);
      relay(decoder, () => decoder.readableEnded, res, masker, taps, ctx);
    } else {
      relay(proxyRes, () => proxyRes.complete, res, masker, taps, ctx);
    }
  }

  private onError(err: NodeJS.ErrnoException, flight: Flight): void {
    const { ctx, res } = flight.forward;
    if (flight.overflow || res.destroyed || res.writableEnded) return;
    if (res.headersSent) {
      // Mid-stream: the caller's stream ends with an error (no clean chunked terminator).
      this.log.warn({ request_id: ctx.requestId, code: err.code }, 'upstream failed mid-response');
      res.destroy();
      return;
    }
    const apiError: ApiError = err instanceof IdleTimeout || err.code === 'ECONNECT_TIMEOUT' || err.code === 'ETIMEDOUT'
      ? Errors.upstreamTimeout()
      : Errors.upstreamUnreachable();
    if (!UPSTREAM_ERRORS_502.has(err.code ?? '') && apiError.status === 502) {
      this.log.warn({ request_id: ctx.requestId, code: err.code, err }, 'unexpected upstream error');
    }
    ctx.error = apiError;
    ctx.status = apiError.status;
    sendError(res, apiError, flight.forward.responseHeaders(ctx, apiError.status));
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
