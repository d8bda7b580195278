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
 * Another transport enters through `admit` the same way (a WebSocket upgrade:
 * its context and exchange, then the same stages and the same last check).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../../settings/config.js';
import type { ProxyHandler } from '../../http/server.js';
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

@injectable()
export class Gateway implements ProxyHandler {
  private readonly exit: ExitServices;
  /** The upstream leg's entry: an admitted exchange goes there once, and everything after is the leg's. */
  private readonly upstream: UpstreamRouter;

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
  ) {
    this.exit = { log, pipeline, usage, metrics, prices, unpriced, toolKeys: new ToolCallKeys() };
    this.upstream = new UpstreamRouter(proxy, credentials, budget, config, pools, metrics, () => clock.now());
  }

  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    const exchange = this.exchangeFor(req, res, requestId);
    // No res.setHeader here: a header set before writeHead sends every upstream header down Node's slow path
    // (removeHeader + appendHeader each). Every response the gateway writes names the request id itself.
    // Tracing off: no span, nothing else to do. On: the stages, the key and the forwarding run inside the span.
    const span = exchange.ctx.span;
    if (span) span.run(() => this.run(exchange));
    else this.run(exchange);
  }

  /**
   * Keyward's own MCP route, /v1/mcp/<credential id>: the proxy's path with the credential fixed (the auth stage
   * holds the token to it, the route stage sends the request to its provider's MCP endpoint).
   */
  handleMcp(req: IncomingMessage, res: ServerResponse, requestId: string, route: McpRoute): void {
    const exchange = this.exchangeFor(req, res, requestId, route);
    const span = exchange.ctx.span;
    if (span) span.run(() => this.run(exchange));
    else this.run(exchange);
  }

  /** A request's context (path normalised once, client address, body presence from the stream) and its exit. */
  exchangeFor(req: IncomingMessage, res: ServerResponse, requestId: string, mcp?: McpRoute): Exchange {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const rawPath = mcp ? '' : url.slice(PREFIX.length, q === -1 ? undefined : q);
    const ctx = new RequestContext(req, res, requestId, mcp ? '' : normaliseProviderPath(rawPath) ?? normaliseResourcePath(rawPath) ?? '',
      q === -1 ? '' : url.slice(q + 1), clientAddress(req, this.config.trustedProxies), bodyFollows(req));
    if (mcp) ctx.mcpRoute = mcp;
    ctx.span = this.tracing.startRequest(req.headers);
    if (ctx.bodyFollows) ctx.body = requestBody(req);
    return new Exchange(this.exit, ctx, req, res);
  }

  /**
   * The gate: every stage's access in priority order, admission's last check included. Synchronous while every
   * stage answers at once (cached token and key, no body to read: the usual request); a promise only where one
   * must wait. A refusal has been given back by the stages before it is thrown.
   */
  admit(exchange: Exchange): void | Promise<void> {
    return this.pipeline.access(exchange.ctx);
  }

  /** The gate, then the upstream leg; a refusal anywhere leaves through the exchange. */
  private run(exchange: Exchange): void {
    let passed: void | Promise<void>;
    try {
      passed = this.admit(exchange);
    } catch (err) {
      exchange.refuse(err);
      return;
    }
    if (passed) passed.then(() => this.upstream.route(exchange), (err: unknown) => exchange.refuse(err));
    else this.upstream.route(exchange);
  }
}
