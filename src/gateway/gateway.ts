/**
 * One proxied request, one direction of travel: build the context, run the
 * pipeline's stages (pipeline.ts: auth, the core's route, scope and body
 * checks, the operator plugins, the rate limit, max_requests and quota, in
 * priority order; a refusal is answered before anything is sent, and every
 * stage that ran gives back what it took), unwrap the key, forward, and relay
 * the response. The stages add their response headers before the first byte
 * (responseHead) and their log hooks run after the last; a failing hook is
 * logged, never sent. Before the log hooks, a forwarded request's reported
 * usage is priced (ctx.costMicros) and counted.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { ApiError, toApiError } from '../errors.js';
import type { ProxyHandler } from '../http/server.js';
import { sendError } from '../http/reply.js';
import type { Logger } from '../log.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import type { ProxyContext } from './contracts.js';
import { RequestContext } from './context.js';
import { normaliseProviderPath, normaliseResourcePath } from '../catalog/path.js';
import type { Pipeline } from './pipeline.js';
import { UpstreamProxy } from './upstream.js';
import { BufferBudget } from './buffer-budget.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { Metrics } from '../metrics.js';
import { clientAddress } from '../controls/client-address.js';
import { PriceBook, usageCost } from '../catalog/prices.js';
import { ResponseModelTap } from './response-model.js';
import { settledSpend } from './settlement.js';
import { bodyFollows } from './admission.js';
import type { Tracing } from '../telemetry/tracing.js';
import type { CredentialSecrets } from '../catalog/provider.js';

const PREFIX = '/v1/proxy/';
/** Refused requests with a body larger than this are answered with `connection: close` instead of drained. */
const DRAIN_LIMIT = 64 * 1024;

@injectable()
export class Gateway implements ProxyHandler {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.Pipeline) private readonly pipeline: Pipeline,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(UpstreamProxy) private readonly upstream: UpstreamProxy,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(Metrics) private readonly metrics: Metrics,
    @inject(BufferBudget) private readonly budget: BufferBudget,
    @inject(PriceBook) private readonly prices: PriceBook,
    @inject(Symbols.Tracing) private readonly tracing: Tracing,
  ) {}

  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const rawPath = url.slice(PREFIX.length, q === -1 ? undefined : q);
    const ctx = new RequestContext(req, res, requestId, normaliseProviderPath(rawPath) ?? normaliseResourcePath(rawPath) ?? '', q === -1 ? '' : url.slice(q + 1), clientAddress(req, this.config.trustedProxies), bodyFollows(req));
    // No res.setHeader here: a header set before writeHead sends every upstream header down Node's slow path
    // (removeHeader + appendHeader each). Every response the gateway writes names the request id itself.
    // Tracing off: no span, nothing else to do. On: the stages, the key and the forwarding run inside the span.
    const span = (ctx.span = this.tracing.startRequest(req.headers));
    if (span) span.run(() => this.run(ctx, req, res));
    else this.run(ctx, req, res);
  }

  /**
   * The stages, then the key, then the upstream leg. Each step that answers at once (cached token, cached
   * key, no body to read: the usual request) goes on in the same turn; a promise only where one must wait.
   */
  private run(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): void {
    let passed: void | Promise<void>;
    try {
      passed = this.pipeline.access(ctx);
    } catch (err) {
      this.failed(ctx, req, res, err);
      return;
    }
    if (passed) passed.then(() => this.unwrapKey(ctx, req, res), (err: unknown) => this.failed(ctx, req, res, err));
    else this.unwrapKey(ctx, req, res);
  }

  /** Every secret and plain field of the credential (the provider's signer decides what goes upstream), then forwards. */
  private unwrapKey(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): void {
    let credential: CredentialSecrets | Promise<CredentialSecrets>;
    try {
      credential = this.credentials.secretsFor(ctx.auth!.credential);
    } catch (err) {
      this.failed(ctx, req, res, err);
      return;
    }
    if (credential instanceof Promise) credential.then((c) => this.forward(ctx, req, res, c), (err: unknown) => this.failed(ctx, req, res, err));
    else this.forward(ctx, req, res, credential);
  }

  /** A stage's refusal (unwound by the pipeline already), or what failed after the stages (the key, forwarding). */
  private failed(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, err: unknown): void {
    if (!ctx.forwarded) this.pipeline.undo(ctx);
    this.refuse(ctx, req, res, err);
  }

  /** Hands the request to the upstream leg. */
  private forward(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, credential: CredentialSecrets): void {
    if (res.destroyed) {
      // The caller left while we checked: nothing is forwarded, so nothing counts.
      this.pipeline.undo(ctx);
      ctx.status = 499;
      void this.done(ctx);
      return;
    }
    ctx.forwarded = true;
    ctx.forwardedAt = process.hrtime.bigint();
    // No stage read the request's model: it is read from the answer instead, when that prices the request
    // (the provider has prices) or names the model on its span.
    const answered = ctx.model === undefined && (this.prices.prices(ctx.provider!.id) || ctx.span !== undefined) ? new ResponseModelTap() : undefined;
    try {
      this.upstream.forward({
        ctx, req, res, provider: ctx.provider!, credential, body: ctx.bodyScan, budget: this.budget, responseHeaders: this.responseHeaders,
        ...(answered ? { taps: [answered] } : {}),
        onCutOff: () => this.unforward(ctx),
        onFinish: () => void this.done(ctx, answered),
      });
    } catch (err) {
      this.failed(ctx, req, res, err);
    }
  }

  /** The gateway's own response headers and the stages' (responseHead), for a head about to go out. */
  private readonly responseHeaders = (ctx: ProxyContext, status: number): Record<string, string> => {
    const headers: Record<string, string> = { 'x-keyward-request-id': ctx.requestId };
    // The upstream leg hands back the context the gateway gave it.
    this.pipeline.responseHead(ctx as RequestContext, status, headers);
    return headers;
  };

  /**
   * The body's scan refused it after forwarding began, before any response: a scope refusal like any other (the
   * upstream never had a whole request), so it does not count.
   */
  private unforward(ctx: RequestContext): void {
    if (!ctx.forwarded) return;
    ctx.forwarded = false;
    this.pipeline.undo(ctx);
  }

  private refuse(ctx: RequestContext, req: IncomingMessage, res: ServerResponse, err: unknown): void {
    const apiError = toApiError(err);
    if (!(err instanceof ApiError)) this.log.error({ err, request_id: ctx.requestId }, 'proxy request failed');
    ctx.error = apiError;
    ctx.status = apiError.status;
    const headers = this.responseHeaders(ctx, apiError.status);
    const length = Number(req.headers['content-length'] ?? (req.headers['transfer-encoding'] ? Infinity : 0));
    if (!req.readableEnded && length > DRAIN_LIMIT) headers.connection = 'close';
    else req.resume();
    res.once('close', () => void this.done(ctx));
    sendError(res, apiError, headers);
  }

  /**
   * The cost of what the provider reported (ctx.costMicros, µ$): undefined when it reported nothing or the
   * model has no price. Counted in the metrics under the price table's name for the model (or `unpriced`).
   */
  private price(ctx: RequestContext, answered: ResponseModelTap | undefined): void {
    const provider = ctx.provider!.id;
    ctx.responseModel = answered?.model;
    const model = ctx.model ?? answered?.model;
    const match = model === undefined ? undefined : this.prices.match(provider, model);
    const reported = ctx.usage.inputTokens > 0 || ctx.usage.outputTokens > 0;
    ctx.costMicros = match && reported ? usageCost(match.price, ctx.usage) : undefined;
    ctx.spentMicros = settledSpend(ctx);
    this.metrics.spent(provider, match?.name ?? 'unpriced', ctx.spentMicros ?? 0);
  }

  private async done(ctx: RequestContext, answered?: ResponseModelTap): Promise<void> {
    const provider = ctx.provider?.id ?? 'unknown';
    if (ctx.forwarded) {
      this.metrics.proxied(provider, ctx.status ?? 499, Number(process.hrtime.bigint() - ctx.forwardedAt) / 1e9, ctx.ttfbMs === undefined ? undefined : ctx.ttfbMs / 1000);
      this.price(ctx, answered);
    } else if (ctx.error) {
      this.metrics.refused(ctx.error.code, ctx.provider?.id, ctx.error.status);
    }
    if (ctx.forwarded && ctx.auth) {
      this.usage.record({
        orgId: ctx.auth.credential.orgId,
        credentialId: ctx.auth.credential.id,
        tokenId: ctx.auth.token.id,
        requests: 1,
        inputTokens: ctx.usage.inputTokens,
        outputTokens: ctx.usage.outputTokens,
        spendMicros: ctx.spentMicros ?? 0,
      });
    }
    ctx.span?.end(ctx);
    await this.pipeline.logAll(ctx);
  }
}
