/**
 * One proxied request, one direction of travel: build the context and its
 * Exchange (exchange.ts, the one exit), run the gate (the pipeline's stages
 * in priority order: auth, the core's route, scope and body checks, the
 * operator plugins, the rate limit, max_requests, budget and quota, then the
 * admission's last check that every body a stage must read was read; a
 * refusal is answered before anything is sent, and every stage that ran
 * gives back what it took), then hand the admitted exchange to the upstream
 * leg, once (upstream-router.ts: the key, each attempt, a pool's retries; it
 * never calls back here). Every answer the caller gets, and the end
 * (settlement, counters, log hooks), goes through the exchange.
 *
 * A WebSocket upgrade is another transport of this same entry (`handleUpgrade`):
 * its context and exchange are built here by the same code, with a response
 * written on the upgrade's socket (http/upgrade-response.ts), and it passes the
 * same gate (the route stage matches websocket routes only; the model a
 * `models` scope checks is the one `?model=` names). A refusal is the same
 * local reply with the same headers as over HTTP/1.1 or h2c, and nothing is
 * dialled. Only an admitted upgrade goes on, to its relay (src/gateway/realtime/:
 * the key, the provider's handshake, the caller's 101, the session), which
 * tells the same exchange how it ends.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../../settings/config.js';
import type { ProxyHandler, UpgradeHandler } from '../../http/server.js';
import { sendError } from '../../http/reply.js';
import { upgradeResponse } from '../../http/upgrade-response.js';
import type { ApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { Symbols } from '../../symbols.js';
import { CredentialService } from '../../vault/credential-service.js';
import { RequestContext, type McpRoute } from './context.js';
import { normaliseProviderPath, normaliseResourcePath } from '../../catalog/path.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import { UpstreamProxy } from '../upstream/upstream.js';
import { BufferBudget } from './buffer-budget.js';
import { UsageRecorder } from '../../accounting/usage-recorder.js';
import { Metrics } from '../../telemetry/metrics.js';
import { clientAddress } from '../../controls/client-address.js';
import { PriceBook } from '../../pricing/prices.js';
import { UnpricedModels } from '../../pricing/unpriced-models.js';
import type { Tracing } from '../../telemetry/tracing.js';
import { bodyFollows } from './admission.js';
import { requestBody } from '../../http/h2c.js';
import { Exchange, type ExitServices } from '../exit/exchange.js';
import { ToolCallKeys } from '../wire/mcp/tool-calls.js';
import { UpstreamRouter } from '../upstream/upstream-router.js';
import { PoolService } from '../../vault/pool-service.js';
import type { Clock } from '../../clock.js';

const PREFIX = '/v1/proxy/';

/** What an admitted WebSocket upgrade goes on to (src/gateway/realtime/), as an admitted request goes upstream. */
export interface UpgradeRelay {
  /**
   * Why this handshake is not taken at all, before any context is built (sessions draining: 503; not a WebSocket
   * handshake: 400), or undefined to take it.
   */
  handshakeRefusal(req: IncomingMessage): ApiError | undefined;
  /** An admitted upgrade, from its key to its session's end: every answer, and the end, through the exchange. */
  relay(exchange: Exchange, socket: Duplex, head: Buffer): void;
  /** Refuses new sessions, lets open ones go on up to `ms`, then closes them. */
  drain(ms: number): Promise<void>;
  readonly openSessions: number;
}

@injectable()
export class Gateway implements ProxyHandler, UpgradeHandler {
  private readonly exit: ExitServices;
  /** The upstream leg's entry: an admitted exchange goes there once, and everything after is the leg's. */
  private readonly upstream: UpstreamRouter;
  /** Where an admitted HTTP request goes (made once: no closure per request). */
  private readonly toUpstream: (exchange: Exchange) => void;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Logger) log: Logger,
    @inject(Symbols.Pipeline) private readonly pipeline: Pipeline,
    @inject(CredentialService) credentials: CredentialService,
    @inject(UpstreamProxy) proxy: UpstreamProxy,
    @inject(UsageRecorder) usage: UsageRecorder,
    @inject(Metrics) metrics: Metrics,
    @inject(BufferBudget) budget: BufferBudget,
    @inject(PriceBook) prices: PriceBook,
    @inject(UnpricedModels) unpriced: UnpricedModels,
    @inject(Symbols.Tracing) private readonly tracing: Tracing,
    @inject(PoolService) pools: PoolService,
    @inject(Symbols.Clock) clock: Clock,
    @inject(Symbols.UpgradeRelay) private readonly relay: UpgradeRelay,
  ) {
    this.exit = { log, pipeline, usage, metrics, prices, unpriced, toolKeys: new ToolCallKeys() };
    this.upstream = new UpstreamRouter(proxy, credentials, budget, config, pools, metrics, () => clock.now());
    this.toUpstream = (exchange) => this.upstream.route(exchange);
  }

  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    // No res.setHeader here: a header set before writeHead sends every upstream header down Node's slow path
    // (removeHeader + appendHeader each). Every response the gateway writes names the request id itself.
    this.enter(this.exchangeFor(req, res, requestId, false), this.toUpstream);
  }

  /**
   * Keyward's own MCP route, /v1/mcp/<credential id>: the proxy's path with the credential fixed (the auth stage
   * holds the token to it, the route stage sends the request to its provider's MCP endpoint).
   */
  handleMcp(req: IncomingMessage, res: ServerResponse, requestId: string, route: McpRoute): void {
    this.enter(this.exchangeFor(req, res, requestId, false, route), this.toUpstream);
  }

  /**
   * An HTTP/1.1 upgrade of a proxy path (`Upgrade: websocket`): the same entry, its answers written on the socket
   * until the relay accepts it. A handshake the relay cannot take at all is answered before any context is built.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, requestId: string): void {
    socket.on('error', () => {});
    // Gone before anything could be answered: there is no caller to admit.
    if (socket.destroyed) return;
    const res = upgradeResponse(req, socket);
    const refusal = this.relay.handshakeRefusal(req);
    if (refusal) return sendError(res, refusal, { 'x-keyward-request-id': requestId });
    this.enter(this.exchangeFor(req, res, requestId, true), (exchange) => this.relay.relay(exchange, socket, head));
  }

  drain(ms: number): Promise<void> {
    return this.relay.drain(ms);
  }

  get openSessions(): number {
    return this.relay.openSessions;
  }

  /**
   * A request's context (path normalised once, client address, body presence from the stream) and its exit, for
   * every transport. An upgrade has no body (what follows its head is the WebSocket's) and matches websocket routes.
   */
  exchangeFor(req: IncomingMessage, res: ServerResponse, requestId: string, upgrade: boolean, mcp?: McpRoute): Exchange {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const rawPath = mcp ? '' : url.slice(PREFIX.length, q === -1 ? undefined : q);
    const ctx = new RequestContext(req, res, requestId, mcp ? '' : normaliseProviderPath(rawPath) ?? normaliseResourcePath(rawPath) ?? '',
      q === -1 ? '' : url.slice(q + 1), clientAddress(req, this.config.trustedProxies), !upgrade && bodyFollows(req));
    if (upgrade) ctx.upgrade = true;
    if (mcp) ctx.mcpRoute = mcp;
    ctx.span = this.tracing.startRequest(req.headers);
    if (ctx.bodyFollows) ctx.body = requestBody(req);
    return new Exchange(this.exit, ctx, req, res);
  }

  /** Tracing off: no span, nothing else to do. On: the stages, the key and the forwarding run inside the span. */
  private enter(exchange: Exchange, onward: (exchange: Exchange) => void): void {
    const span = exchange.ctx.span;
    if (span) span.run(() => this.run(exchange, onward));
    else this.run(exchange, onward);
  }

  /**
   * The gate: every stage's access in priority order, admission's last check included. Synchronous while every
   * stage answers at once (cached token and key, no body to read: the usual request); a promise only where one
   * must wait. A refusal has been given back by the stages before it is thrown.
   */
  admit(exchange: Exchange): void | Promise<void> {
    return this.pipeline.access(exchange.ctx);
  }

  /** The gate, then onward (the upstream leg, or an upgrade's relay); a refusal anywhere leaves through the exchange. */
  private run(exchange: Exchange, onward: (exchange: Exchange) => void): void {
    let passed: void | Promise<void>;
    try {
      passed = this.admit(exchange);
    } catch (err) {
      exchange.refuse(err);
      return;
    }
    if (passed) passed.then(() => onward(exchange), (err: unknown) => exchange.refuse(err));
    else onward(exchange);
  }
}
