/**
 * One proxied request, one direction of travel: build the context, run the
 * pipeline's stages (pipeline.ts: auth, the core's route, scope and body
 * checks, the operator plugins, the rate limit, max_requests and quota, in
 * priority order; a refusal is answered before anything is sent, and every
 * stage that ran gives back what it took), unwrap the key, forward, and relay
 * the response. The stages add their response headers before the first byte
 * (responseHead) and their log hooks run after the last; a failing hook is
 * logged, never sent.
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
  ) {}

  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const rawPath = url.slice(PREFIX.length, q === -1 ? undefined : q);
    const ctx = new RequestContext(req, res, requestId, normaliseProviderPath(rawPath) ?? normaliseResourcePath(rawPath) ?? '', q === -1 ? '' : url.slice(q + 1), clientAddress(req, this.config.trustedProxies));
    // No res.setHeader here: a header set before writeHead sends every upstream header down Node's slow path
    // (removeHeader + appendHeader each). Every response the gateway writes names the request id itself.
    void this.run(ctx, req, res);
  }

  private async run(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.pipeline.access(ctx);
      await this.forward(ctx, req, res);
    } catch (err) {
      // A stage's refusal was unwound by the pipeline already; this is for what failed after it (the key).
      if (!ctx.forwarded) this.pipeline.undo(ctx);
      this.refuse(ctx, req, res, err);
    }
  }

  /** Unwraps the credential's key and hands the request to the upstream leg. */
  private async forward(ctx: RequestContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Every secret and plain field of the credential: the provider's signer decides what goes upstream.
    const credential = await this.credentials.secretsFor(ctx.auth!.credential);
    if (res.destroyed) {
      // The caller left while we checked: nothing is forwarded, so nothing counts.
      this.pipeline.undo(ctx);
      ctx.status = 499;
      void this.done(ctx);
      return;
    }
    ctx.forwarded = true;
    ctx.forwardedAt = process.hrtime.bigint();
    this.upstream.forward({
      ctx, req, res, provider: ctx.provider!, credential, body: ctx.bodyScan, budget: this.budget, responseHeaders: this.responseHeaders,
      onCutOff: () => this.unforward(ctx),
      onFinish: () => void this.done(ctx),
    });
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

  private async done(ctx: RequestContext): Promise<void> {
    const provider = ctx.provider?.id ?? 'unknown';
    if (ctx.forwarded) {
      this.metrics.proxied(provider, ctx.status ?? 499, Number(process.hrtime.bigint() - ctx.forwardedAt) / 1e9, ctx.ttfbMs === undefined ? undefined : ctx.ttfbMs / 1000);
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
      });
    }
    await this.pipeline.logAll(ctx);
  }
}
