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
 * Plugins' body hooks (pipeline/body-hooks.ts) change the request body before
 * all of this (it then goes chunked, or with the length read whole) and the
 * response before masking (hookedRelay: its head waits for the hooks' first
 * bytes and carries no content-length). Redirects are passed back, never followed. Connect and idle timeouts come
 * from the config; neither caps a stream's length. A caller who disconnects
 * aborts the upstream request.
 *
 * Each call makes one attempt (upstream-router.ts decides the attempts and
 * their credentials; a pooled request's failed attempt goes to pool-router.ts
 * through its Failover, before anything of it reaches the caller). It answers
 * the caller only through the request's Exchange (exchange.ts, the one exit):
 * its response head (respond), its refusals (unforward), its faults (fail) and
 * its cuts all go there, and the exchange asks the leg, at the end, how the
 * response ended and what usage it reported (UpstreamLeg, flight.ts).
 */
import type { Agent, ClientRequest, IncomingMessage } from 'node:http';
import http from '../../node-http.js';
import https from 'node:https';
import { Readable } from 'node:stream';
import { ProxyServer } from 'http-proxy-3';
import type { Config } from '../../settings/config.js';
import { ApiError, Errors } from '../../errors.js';
import type { Logger } from '../../log.js';
import { downstreamHeaders, rawHeader, stripKeyParams, upstreamHeaders } from './headers.js';
import { StreamMasker, maskString } from '../wire/masking.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { CredentialSecrets, OutgoingRequest, Signer, UsageResponse } from '../../catalog/provider.js';
import { credentialWire, outgoingRequest, readWhole, requestTarget, signOverBody, wholeBody, withSignerMasks, type WholeBody } from './outgoing.js';
import { signerFor, type SignerSettings } from './signers/index.js';
import { guardedReader, usageReaderFactory, type ResponseUsage } from '../wire/usage-scanner.js';
import { BodyLimiter, decoderFor, flushIdleHead, hookedRelay, relay, type ResponseTap } from './relay.js';
import { HookedBody } from '../pipeline/body-hooks.js';
import { listFiltered } from '../wire/mcp/tools-list-filter.js';
import type { Exchange } from '../exit/exchange.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import { EVENT_STREAM, Flight } from './flight.js';
import { replayStream, type Failover } from './pool-router.js';

export type { ResponseTap };

/** What the upstream leg runs for one provider, worked out once at start. */
interface ProviderRuntime {
  signer: Signer;
  usage: ResponseUsage;
}

const UPSTREAM_ERRORS_502 = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EPROTO', 'HPE_INVALID_CONSTANT']);

class IdleTimeout extends Error { readonly code = 'EIDLE_TIMEOUT'; }

export class UpstreamProxy {
  private readonly agents: { http: Agent; https: https.Agent };
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
    this.proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => {
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

  /**
   * One attempt: the request built for `credential` and signed, then sent; `failover` and `replay` for a pooled
   * request's member (its router, and the body kept from the first attempt). `budget`: what a body read whole
   * for a signer is charged to.
   */
  forward(exchange: Exchange, credential: CredentialSecrets, budget: BufferBudget, failover: Failover | undefined, replay: Buffer | undefined): void {
    const { ctx, req } = exchange;
    const provider = ctx.provider!;
    const runtime = this.runtimes.get(provider.id)!;
    const flight = new Flight(exchange, credential, budget, failover, replay);
    this.flights.set(req, flight);
    exchange.forwarded(flight);

    // Cut off: the upstream request is destroyed before its body completes; the exit answers the caller with the
    // refusal (a scan's: nothing counts) or the fault (counted) if no response has started, else cuts its stream.
    const cutOff = (err: ApiError, stopReading: () => void, refused: boolean): void => {
      if (flight.overflow) return;
      flight.overflow = true;
      flight.proxyReq?.destroy();
      flight.whole?.abort();
      stopReading();
      if (refused) exchange.unforward(err);
      else exchange.fail(err, true);
    };
    // A declared content-length was held to the limit already, and the transport holds the body to it (Node's
    // HTTP/1.1 parser, nghttp2's HTTP/2 checks): only a body without one is counted on its way upstream (a scanned
    // body counts itself; a body read whole for the signer is counted as it is read).
    let body: Readable | undefined;
    // A body through plugins' requestBody hooks: its content-length is the caller's, not what is sent.
    const hooked = ctx.body instanceof HookedBody;
    if (replay) {
      // A pooled request's next attempt: the bytes the first one read whole (pool-router.ts).
      body = replayStream(replay);
    } else if (ctx.bodyScan) {
      const scan = ctx.bodyScan;
      // Read whole already (most scanned bodies): written as they are. Not for a signer that reads the body or a
      // pooled request keeping it for another member: those read it as a stream.
      const whole = runtime.signer.needsBody || failover ? undefined : scan.takeWhole();
      if (whole) {
        body = wholeBody(whole);
      } else {
        // A body a scope reads is refused by its scan (a scope refusal); a body only counted is cut off after forwarding.
        scan.onViolation((err) => cutOff(err, () => {
          scan.discard();
          ctx.body?.resume();
        }, true));
        body = scan.stream();
      }
    } else if (ctx.body && (hooked || req.headers['content-length'] === undefined) && !runtime.signer.needsBody) {
      const source = ctx.body;
      const stop = (): void => {
        source.unpipe(limiter);
        source.resume();
      };
      const limiter = new BodyLimiter(this.config.maxBody, () => cutOff(Errors.payloadTooLarge(this.config.maxBody), stop, false));
      // A hook's refusal: the provider never has the whole body, so nothing counts (as a scan's refusal).
      if (hooked) source.on('error', (err) => err instanceof ApiError && cutOff(err, stop, true));
      // A body that breaks (an HTTP/2 stream reset) never ends the limiter: the upstream request is aborted, never ended.
      source.pipe(limiter);
      body = limiter;
    } else if (ctx.body && ctx.body !== req) {
      // HTTP/2 with a content-length: its guarded body, so a reset never passes for an end.
      body = ctx.body;
    }
    // The scan broke before the upstream leg began: refused above, nothing is sent.
    if (flight.overflow) return;

    let request: OutgoingRequest;
    try {
      flight.wire = credentialWire(provider, credential);
      // The query with every key-carrying parameter removed; the headers after hygiene, without a credential.
      request = outgoingRequest(ctx.method, flight.wire, ctx.path, stripKeyParams(ctx.query, this.providers.keyQueryParams),
        upstreamHeaders(req.headers, provider, this.providers, credential.plain));
      if (hooked) delete request.headers['content-length'];
    } catch (err) {
      this.refuseUnsent(flight, err);
      return;
    }
    if (runtime.signer.needsBody) {
      void this.signWithBody(flight, runtime.signer, request, body ?? ctx.body ?? req);
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
    const { ctx, req } = flight.exchange;
    const declared = req.headers['content-length'] === undefined || source instanceof HookedBody ? undefined : Number(req.headers['content-length']);
    const replay = flight.replay;
    const whole: WholeBody = replay ? { done: Promise.resolve(replay), abort: () => {}, release: () => {} } : readWhole(source, declared, this.config.maxBody, flight.budget, ctx.bufferHolder);
    flight.whole = whole;
    let bytes: Buffer;
    try {
      bytes = await signOverBody(signer, request, flight.credential, whole, ctx.bodyFollows);
    } catch (err) {
      this.refuseUnsent(flight, err);
      return;
    }
    const sent = replayStream(bytes);
    // Kept for another member (released when the pooled request is done with it), or released once sent.
    if (replay === undefined && !flight.failover?.keep(bytes, () => whole.release())) sent.once('end', () => whole.release());
    this.send(flight, request, sent);
  }

  /** Nothing reached the upstream: the exit refuses it (a signer's ApiError as it is, anything else a 502), and it does not count. */
  private refuseUnsent(flight: Flight, err: unknown): void {
    if (flight.overflow || flight.sent) return;
    flight.overflow = true;
    flight.whole?.abort();
    flight.exchange.ctx.bodyScan?.discard();
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else {
      // A signer is provider code: its message may hold a secret, so only its masked first line is logged.
      const message = maskString(String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 200), flight.wire?.maskStrings ?? []);
      this.log.warn({ request_id: flight.exchange.ctx.requestId, provider: flight.provider.id, err: message }, 'provider signer failed');
      apiError = Errors.upstreamUnreachable();
    }
    flight.exchange.unforward(apiError);
  }

  private send(flight: Flight, request: OutgoingRequest, body: Readable | undefined): void {
    const { req, res } = flight.exchange;
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
      // A pooled request's body is kept as it passes (a second reader, after the pipe began), for another member.
      const failover = flight.failover;
      if (failover?.captureBody && !flight.replay && !flight.whole) failover.record(body ?? req);
    } finally {
      req.url = original.url;
      if (h2) delete (req as { headers?: unknown }).headers;
      else req.headers = original.headers;
    }
  }

  private watch(proxyReq: ClientRequest, flight: Flight): void {
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
    proxyReq.once('close', () => flight.response !== undefined || setImmediate(() => {
      if (flight.response === undefined) this.onError(Object.assign(new Error('upstream closed without a response'), { code: 'ECONNRESET' }), flight);
    }));
  }

  private onProxyRes(proxyRes: IncomingMessage, flight: Flight): void {
    const { exchange, provider } = flight;
    const { ctx, res } = exchange;
    if (flight.overflow) {
      proxyRes.resume();
      return;
    }
    flight.response = proxyRes;
    const status = proxyRes.statusCode ?? 0;
    // A pooled request whose member failed goes to the next member: nothing of this answer reaches the caller.
    if (flight.failover?.retry(status, status === 429 || status === 529 ? rawHeader(proxyRes.rawHeaders, 'retry-after') : undefined, false, flight.proxyReq?.writableFinished === true)) {
      flight.overflow = true;
      proxyRes.resume();
      return;
    }
    const masks = withSignerMasks(flight.wire!, this.runtimes.get(provider.id)?.signer.masks?.(flight.credential));
    ctx.ttfbMs = Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    // From the raw lines: Node's headers object is built only if a usage reader asks for it.
    const encoding = rawHeader(proxyRes.rawHeaders, 'content-encoding');
    const decoder = decoderFor(encoding);
    if (decoder === null) {
      // An encoding we cannot undo (stacked, or unknown) would hide the key from the scan: refused.
      proxyRes.destroy();
      this.onError(Object.assign(new Error(`upstream content-encoding ${String(encoding).slice(0, 32)}`), { code: 'EPROTO' }), flight);
      return;
    }
    // A decoded body, or a tools/list answer the filter rewrites, has no true content-length left.
    const hooks = ctx.bodyHooks?.filter('response', ctx);
    // A body the hooks may change has no true content-length left either.
    const headers = downstreamHeaders(proxyRes.rawHeaders, (v) => maskString(v, masks.maskStrings), decoder !== undefined || ctx.toolsListFilter !== undefined || hooks !== undefined);
    // The reason phrase is upstream text too: masked like headers and body.
    const reason = maskString(proxyRes.statusMessage ?? '', masks.maskStrings);
    // Through the exit, with its headers: now, or (hooks) once the first bytes passed them.
    const head = (): boolean => {
      try {
        // The parser lets through statuses writeHead refuses (`HTTP/1.1 099`): a bad gateway, not a throw
        // out of an event handler that would leave the caller waiting forever.
        if (status < 100 || status > 999) throw Object.assign(new Error(`upstream status ${status}`), { code: 'EPROTO' });
        exchange.respond(status, reason, headers);
        return true;
      } catch (err) {
        proxyRes.destroy();
        this.onError(err as NodeJS.ErrnoException, flight);
        return false;
      }
    };
    if (!hooks) {
      if (!head()) return;
      setImmediate(flushIdleHead, res, ctx); // the head goes out with the first body bytes, or alone next turn
    }
    flight.eventStream = EVENT_STREAM.test(rawHeader(proxyRes.rawHeaders, 'content-type') ?? '');
    const masker = listFiltered(new StreamMasker(masks.maskBytes), ctx.toolsListFilter, flight.eventStream);
    const taps = this.responseTaps(flight, { status, get headers() { return proxyRes.headers; }, path: ctx.path, eventStream: flight.eventStream, settles: ctx.reservedMicros !== undefined }, typeof provider.usage === 'function');
    if (decoder) {
      proxyRes.on('error', () => {});
      proxyRes.on('close', () => {
        if (!proxyRes.complete) decoder.destroy();
      });
      proxyRes.pipe(decoder);
      flight.complete = () => decoder.readableEnded;
    } else {
      flight.complete = () => proxyRes.complete;
    }
    const source = decoder ?? proxyRes;
    if (!hooks) return relay(source, flight.complete, res, masker, taps, ctx, exchange);
    hookedRelay(source, flight.complete, res, masker, taps, ctx, exchange, {
      filter: hooks, head,
      stop: () => {
        proxyRes.destroy();
        decoder?.destroy();
      },
      broken: () => Errors.upstreamUnreachable('The provider\'s answer broke off before any of it passed the plugins\' body hooks.'),
    });
  }

  /** The provider's usage reader for this response (a provider file's own one guarded: it can never break the relay), then any others. */
  private responseTaps(flight: Flight, response: UsageResponse, foreign: boolean): ResponseTap[] {
    const answered = flight.exchange.answered;
    try {
      const reader = this.runtimes.get(flight.provider.id)!.usage(response);
      flight.usage = foreign ? guardedReader(reader, flight) : reader;
    } catch (err) {
      flight.usageFailed(err);
      return answered ? [answered] : [];
    }
    return answered ? [flight.usage, answered] : [flight.usage];
  }

  private onError(err: NodeJS.ErrnoException, flight: Flight): void {
    const { exchange } = flight;
    const { ctx, res } = exchange;
    if (flight.overflow || res.destroyed || res.writableEnded) return;
    if (res.headersSent) {
      // Mid-stream: the caller's stream ends with an error (no clean chunked terminator), after the head if it
      // had not gone out yet, so the caller sees the status, then the cut.
      this.log.warn({ request_id: ctx.requestId, code: err.code }, 'upstream failed mid-response');
      exchange.cut();
      return;
    }
    const timeout = err instanceof IdleTimeout || err.code === 'ECONNECT_TIMEOUT' || err.code === 'ETIMEDOUT';
    // Whether the provider had the whole request (the last body byte handed to the connection): then it may bill it.
    if (flight.failover?.retry(undefined, undefined, timeout, flight.proxyReq?.writableFinished === true)) {
      flight.overflow = true;
      flight.proxyReq?.destroy();
      return;
    }
    const apiError: ApiError = timeout ? Errors.upstreamTimeout() : Errors.upstreamUnreachable();
    if (!UPSTREAM_ERRORS_502.has(err.code ?? '') && apiError.status === 502) {
      this.log.warn({ request_id: ctx.requestId, code: err.code, err }, 'unexpected upstream error');
    }
    exchange.fail(apiError);
  }

  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
