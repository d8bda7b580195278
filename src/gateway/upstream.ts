/**
 * The upstream leg, on http-proxy-3's Node http path with keep-alive agents
 * (its experimental fetch path is never used: its proxyTimeout would cut long
 * streams). The request is built from the provider's declaration (outgoing.ts:
 * origin, hygiene, then its signer, which reads the body whole first only if it
 * says it needs it). A chunked request body streams through a size limiter, and a
 * body a scope reads through its scan (body-scan.ts); either cuts the exchange
 * off when the body breaks its limit, before the upstream has it whole. The
 * response (selfHandleResponse) streams back through the masker of every secret
 * of the credential and the provider's usage reader in one pass, never buffered.
 * Redirects are passed back, never followed. Connect and idle timeouts come
 * from the config; neither caps a stream's length. A caller who disconnects
 * aborts the upstream request.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { ProxyServer } from 'http-proxy-3';
import type { Config } from '../config.js';
import { ApiError, Errors } from '../errors.js';
import type { Logger } from '../log.js';
import { sendError } from '../http/reply.js';
import type { BodyScan } from './body-scan.js';
import type { ProxyContext } from './contracts.js';
import { downstreamHeaders, rawHeader, stripKeyParams, upstreamHeaders } from './headers.js';
import { StreamMasker, maskString } from './masking.js';
import type { Provider, ProviderRegistry } from '../catalog/registry.js';
import type { CredentialSecrets, OutgoingRequest, Signer, UsageReader, UsageReaderFactory, UsageResponse } from '../catalog/provider.js';
import type { BufferBudget } from './buffer-budget.js';
import { credentialWire, outgoingRequest, readWhole, requestTarget, signOverBody, withSignerMasks, type CredentialWire, type WholeBody } from './outgoing.js';
import { signerFor, type SignerSettings } from './signers/index.js';
import { applyUsage, guardedReader, usageReaderFactory } from './usage-scanner.js';
import { BodyLimiter, decoderFor, flushIdleHead, relay, type ResponseTap } from './relay.js';

export type { ResponseTap };

/** What the gateway hands the upstream leg for one request. */
export interface Forward {
  ctx: ProxyContext;
  /** The caller's request and response (the context does not expose them). */
  req: IncomingMessage;
  res: ServerResponse;
  provider: Provider;
  /** The credential's secret and plain values (CredentialService.secretsFor). */
  credential: CredentialSecrets;
  /** The body's scan when a scope read it: the held bytes, then the rest, scanned as they pass. */
  body?: BodyScan;
  /** The process-wide budget a body read whole for a signer is charged to. */
  budget?: BufferBudget;
  /** Readers of the masked response bytes as they pass, besides the provider's usage reader; they never change them. */
  taps?: ResponseTap[];
  /** Headers added to a response head (proxied, or an upstream fault) about to go out with `status`. */
  responseHeaders(ctx: ProxyContext, status: number): Record<string, string>;
  /** Called when the body's scan refuses it before any response started: the upstream never had a whole request. */
  onCutOff?(): void;
  /** Called once when the exchange is over, whatever happened. */
  onFinish(): void;
}

interface Flight {
  forward: Forward;
  wire?: CredentialWire;
  proxyReq?: http.ClientRequest;
  /** The caller's body grew past the limit or broke its scan: abort as soon as we can. */
  overflow: boolean;
  /** Handed to http-proxy-3 (a signer may make us wait before it). */
  sent?: boolean;
  /** The body being read whole for a signer. */
  whole?: WholeBody;
  responded?: boolean; // the upstream's response head arrived
  usage?: UsageReader; // this response's usage reader
}

/** What the upstream leg runs for one provider, worked out once at start. */
interface ProviderRuntime {
  signer: Signer;
  usage: UsageReaderFactory;
}

const UPSTREAM_ERRORS_502 = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EPROTO', 'HPE_INVALID_CONSTANT']);

class IdleTimeout extends Error { readonly code = 'EIDLE_TIMEOUT'; }

export class UpstreamProxy {
  private readonly agents: { http: http.Agent; https: https.Agent };
  private readonly proxy: ProxyServer;
  /** The flight of each request in the air (http-proxy-3's events name the request): never on the request itself. */
  private readonly flights = new WeakMap<IncomingMessage, Flight>();
  private readonly runtimes = new Map<string, ProviderRuntime>();

  /**
   * Every provider's signer and usage reader are resolved here, at start: an unknown built-in signer stops
   * start-up naming the provider file. Every key-carrying header and query parameter any provider names is
   * stripped whatever the provider, since any of them may hold the caller's token.
   */
  constructor(private readonly config: Config, private readonly log: Logger, private readonly providers: ProviderRegistry, signers: SignerSettings = {}) {
    for (const id of providers.ids()) {
      const p = providers.get(id)!;
      this.runtimes.set(id, { signer: signerFor(p, { google: { tokenUri: config.googleTokenUri, metadataOrigin: config.gceMetadataHost, ambientProjects: config.ambientProjects }, log, ...signers }), usage: usageReaderFactory(p) });
    }
    // No cap per upstream host: a cap would queue request 1,025 behind streams lasting minutes (ulimit -n bounds it).
    const agentOptions = { keepAlive: true, keepAliveMsecs: 30_000, maxSockets: Infinity, maxFreeSockets: 256, scheduling: 'lifo' as const };
    this.agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
    // xfwd off (no X-Forwarded-*), redirects never followed, certificates verified, the response handled by us
    // (masking, usage, backpressure). No changeOrigin (a split and port check per request): outgoingRequest sets Host.
    this.proxy = new ProxyServer({ xfwd: false, changeOrigin: false, selfHandleResponse: true, followRedirects: false, secure: true });
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
    const { ctx, provider, credential, req, res } = f;
    const runtime = this.runtimes.get(provider.id)!;
    const flight: Flight = { forward: f, overflow: false };
    this.flights.set(req, flight);

    // Cut off: the upstream request is destroyed before its body completes; the caller gets the refusal if no
    // response has started (and the connection closes), else its stream is cut.
    const cutOff = (err: ApiError, stopReading: () => void, refused: boolean): void => {
      if (flight.overflow) return;
      flight.overflow = true;
      flight.proxyReq?.destroy();
      flight.whole?.abort();
      stopReading();
      if (!res.headersSent) {
        res.setHeader('connection', 'close');
        ctx.error = err;
        ctx.status = err.status;
        if (refused) f.onCutOff?.();
        sendError(res, err, { 'x-keyward-request-id': ctx.requestId });
      } else {
        res.destroy();
      }
    };
    // A declared content-length was held to the limit already and Node's parser holds the body to it:
    // only a chunked body is counted on its way upstream (a scanned body counts itself; a body read whole for
    // the signer is counted as it is read).
    let body: Readable | undefined;
    if (f.body) {
      const scan = f.body;
      // A body a scope reads is refused by its scan (a scope refusal); a body only counted is cut off after forwarding.
      scan.onViolation((err) => cutOff(err, () => {
        scan.discard();
        req.resume();
      }, true));
      body = scan;
    } else if (req.headers['content-length'] === undefined && !runtime.signer.needsBody) {
      const limiter = new BodyLimiter(this.config.maxBody, () => cutOff(Errors.payloadTooLarge(this.config.maxBody), () => {
        req.unpipe(limiter);
        req.resume();
      }, false));
      req.pipe(limiter);
      body = limiter;
    }
    res.once('close', () => {
      // The caller left while a signer worked: nothing was sent, so nothing counts.
      if (!flight.sent && !flight.overflow) f.onCutOff?.();
      flight.whole?.abort();
      this.endUsage(flight);
      f.onFinish();
    });
    // The scan broke before the upstream leg began: refused above, nothing is sent.
    if (flight.overflow) return;

    let request: OutgoingRequest;
    try {
      flight.wire = credentialWire(provider, credential);
      // The query with every key-carrying parameter removed; the headers after hygiene, without a credential.
      request = outgoingRequest(ctx.method, flight.wire, ctx.path, stripKeyParams(ctx.query, this.providers.keyQueryParams),
        upstreamHeaders(req.headers, provider, this.providers, credential.plain));
    } catch (err) {
      this.refuseUnsent(flight, err);
      return;
    }
    if (runtime.signer.needsBody) {
      void this.signWithBody(flight, runtime.signer, request, body ?? req);
      return;
    }
    let signed: void | Promise<void>;
    try {
      signed = runtime.signer.sign(request, credential);
    } catch (err) {
      this.refuseUnsent(flight, err);
      return;
    }
    // A header or query signer is synchronous: the request goes out in this same turn.
    if (signed && typeof (signed as Promise<void>).then === 'function') {
      (signed as Promise<void>).then(() => this.send(flight, request, body), (err: unknown) => this.refuseUnsent(flight, err));
    } else {
      this.send(flight, request, body);
    }
  }

  /** Reads the body whole, hands the signer the exact bytes, and sends exactly those with their length. */
  private async signWithBody(flight: Flight, signer: Signer, request: OutgoingRequest, source: Readable | IncomingMessage): Promise<void> {
    const { req } = flight.forward;
    const declared = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
    const whole = readWhole(source, declared, this.config.maxBody, flight.forward.budget);
    flight.whole = whole;
    let bytes: Buffer;
    try {
      bytes = await signOverBody(signer, request, flight.forward.credential, whole, declared !== undefined || req.headers['transfer-encoding'] !== undefined);
    } catch (err) {
      this.refuseUnsent(flight, err);
      return;
    }
    const sent = Readable.from(bytes.length > 0 ? [bytes] : [], { objectMode: false });
    sent.once('end', () => whole.release());
    this.send(flight, request, sent);
  }

  /** Nothing reached the upstream: the caller gets the refusal (a non-ApiError from a signer is a 502), and it does not count. */
  private refuseUnsent(flight: Flight, err: unknown): void {
    const { ctx, onCutOff, req, res } = flight.forward;
    if (flight.overflow || flight.sent) return;
    flight.overflow = true;
    flight.whole?.abort();
    flight.forward.body?.discard();
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else {
      // A signer is provider code: its message may hold a secret, so only its masked first line is logged.
      const message = maskString(String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 200), flight.wire?.maskStrings ?? []);
      this.log.warn({ request_id: ctx.requestId, provider: flight.forward.provider.id, err: message }, 'provider signer failed');
      apiError = Errors.upstreamUnreachable();
    }
    if (res.destroyed || res.headersSent) {
      res.destroy();
      return;
    }
    ctx.error = apiError;
    ctx.status = apiError.status;
    onCutOff?.();
    if (!req.readableEnded) res.setHeader('connection', 'close');
    req.resume();
    sendError(res, apiError, { 'x-keyward-request-id': ctx.requestId });
  }

  private send(flight: Flight, request: OutgoingRequest, body: Readable | undefined): void {
    const { ctx, req, res } = flight.forward;
    // The caller left while a signer worked, or the body broke its limit meanwhile.
    if (flight.overflow || res.destroyed) return;
    flight.sent = true;
    const target = flight.wire!.target;
    // http-proxy-3 builds the upstream request from req.url and req.headers, synchronously inside web(). They are
    // swapped for the clean ones for that call only: the caller's request object stays as it arrived (a plugin's
    // onDone never finds the stored key in it).
    const original = { url: req.url, headers: req.headers };
    req.url = requestTarget(request);
    // An HTTP/2 request's `headers` has a getter only: shadowed on the instance for this call.
    const h2 = req.httpVersionMajor === 2;
    if (h2) Object.defineProperty(req, 'headers', { value: request.headers, configurable: true, writable: true });
    else req.headers = request.headers as typeof req.headers;
    try {
      this.proxy.web(req, res, {
        target,
        // req.url is the whole target as the signer saw it: sent as it is, not parsed into URLs per request.
        prependPath: false, toProxy: true,
        agent: target.protocol === 'https:' ? this.agents.https : this.agents.http,
        connectTimeout: this.config.upstreamConnectTimeoutMs,
        ...(body ? { buffer: body } : {}),
      }, (err: NodeJS.ErrnoException) => this.onError(err, flight));
    } finally {
      req.url = original.url;
      if (h2) delete (req as { headers?: unknown }).headers;
      else req.headers = original.headers;
    }
  }

  /** The response is over (whole or cut): what the provider's reader found goes into the request's usage. */
  private endUsage(flight: Flight): void {
    const reader = flight.usage;
    flight.usage = undefined;
    if (reader) applyUsage(flight.forward.ctx.usage, reader, (err) => this.usageFailed(flight, err));
  }

  private usageFailed(flight: Flight, err: unknown): void {
    flight.usage = undefined;
    this.log.warn({ provider: flight.forward.provider.id, err: String((err as Error)?.message).slice(0, 200) }, 'usage reader failed');
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
    // a request that closes without a response is a 502 (after any error event had its turn; none after a response).
    proxyReq.once('close', () => flight.responded || setImmediate(() => {
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
    const { ctx, provider } = flight.forward;
    const masks = withSignerMasks(flight.wire!, this.runtimes.get(provider.id)?.signer.masks?.(flight.forward.credential));
    ctx.ttfbMs = Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    const status = proxyRes.statusCode ?? 0;
    // From the raw lines: Node's headers object is built only if a usage reader asks for it.
    const encoding = rawHeader(proxyRes.rawHeaders, 'content-encoding');
    const decoder = decoderFor(encoding);
    if (decoder === null) {
      // An encoding we cannot undo (stacked, or unknown) would hide the key from the scan: refused.
      proxyRes.destroy();
      this.onError(Object.assign(new Error(`upstream content-encoding ${String(encoding).slice(0, 32)}`), { code: 'EPROTO' }), flight);
      return;
    }
    const headers = downstreamHeaders(proxyRes.rawHeaders, (v) => maskString(v, masks.maskStrings), decoder !== undefined);
    const extraHeaders = flight.forward.responseHeaders(ctx, status);
    for (const name in extraHeaders) headers.push(name, extraHeaders[name]!);
    try {
      // The parser lets through statuses writeHead refuses (`HTTP/1.1 099`): a bad gateway, not a throw
      // out of an event handler that would leave the caller waiting forever.
      if (status < 100 || status > 999) throw Object.assign(new Error(`upstream status ${status}`), { code: 'EPROTO' });
      // The reason phrase is upstream text too: masked like headers and body.
      res.writeHead(status, maskString(proxyRes.statusMessage ?? '', masks.maskStrings), headers);
    } catch (err) {
      proxyRes.destroy();
      this.onError(err as NodeJS.ErrnoException, flight);
      return;
    }
    ctx.status = status;
    setImmediate(flushIdleHead, res, ctx); // the head goes out with the first body bytes, or alone next turn
    const masker = new StreamMasker(masks.maskBytes);
    const taps = this.responseTaps(flight, { status, get headers() { return proxyRes.headers; }, path: ctx.path }, typeof provider.usage === 'function');
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

  /** The provider's usage reader for this response (a provider file's own one guarded: it can never break the relay), then any others. */
  private responseTaps(flight: Flight, response: UsageResponse, foreign: boolean): ResponseTap[] {
    const others = flight.forward.taps ?? [];
    try {
      const reader = this.runtimes.get(flight.forward.provider.id)!.usage(response);
      flight.usage = foreign ? guardedReader(reader, (err) => this.usageFailed(flight, err)) : reader;
    } catch (err) {
      this.usageFailed(flight, err);
      return others;
    }
    return others.length === 0 ? [flight.usage] : [flight.usage, ...others];
  }

  private onError(err: NodeJS.ErrnoException, flight: Flight): void {
    const { ctx, res } = flight.forward;
    if (flight.overflow || res.destroyed || res.writableEnded) return;
    if (res.headersSent) {
      // Mid-stream: the caller's stream ends with an error (no clean chunked terminator), after the head if it
      // had not gone out yet (flushIdleHead), so the caller sees the status, then the cut.
      this.log.warn({ request_id: ctx.requestId, code: err.code }, 'upstream failed mid-response');
      if (ctx.bytesOut === 0) res.flushHeaders();
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
