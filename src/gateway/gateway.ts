/**
 * One proxied request, one direction of travel: the auth plugin resolves the
 * token; the core checks the path against the provider's allow-list and the
 * token's scopes (a `models` scope reads the body's `model` by a streaming
 * scan that holds only the bytes before it, never by buffering the body), and
 * the body size; the other plugins run; the key is
 * unwrapped; quota reserves last (so anything that refuses does so before it
 * counts); then the upstream leg streams. After the last byte every plugin's
 * onDone runs; its errors are logged, never sent.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { ApiError, Errors, toApiError } from '../errors.js';
import type { ProxyHandler } from '../http/server.js';
import { sendError } from '../http/reply.js';
import type { Logger } from '../log.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import type { ProxyContext } from './contracts.js';
import { matchRoute, normaliseProviderPath } from '../catalog/path.js';
import type { MiddlewareChain } from './plugin-loader.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import { UpstreamProxy } from './upstream.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { QuotaLedger } from '../accounting/quota-ledger.js';
import { RateLimiter } from '../accounting/rate-limiter.js';
import { accountRouteAllowed, modelAllowed, pathAllowed } from '../catalog/scopes.js';
import { AbuseGuard } from '../controls/abuse-guard.js';
import { AuditLog } from '../controls/audit-log.js';
import { Metrics } from '../metrics.js';
import { clientAddress } from '../controls/client-address.js';
import { BodyScan } from './body-scan.js';
import { BufferBudget } from './buffer-budget.js';

const PREFIX = '/v1/proxy/';
/** Core's own key in ProxyContext.state: when the request was handed upstream. */
const FORWARDED_AT = 'core:forwardedAt';
/** Refused requests with a body larger than this are answered with `connection: close` instead of drained. */
const DRAIN_LIMIT = 64 * 1024;
/** What a `models` scope reads from a body (a spend budget will add the output caps). */
const MODEL_FIELDS = ['model'] as const;

@injectable()
export class Gateway implements ProxyHandler {
  /** Body bytes held by all requests while a scan decides them (KEYWARD_BUFFER_BUDGET). */
  private readonly budget: BufferBudget;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
    @inject(Symbols.MiddlewareChain) private readonly chain: MiddlewareChain,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(UpstreamProxy) private readonly upstream: UpstreamProxy,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(QuotaLedger) private readonly ledger: QuotaLedger,
    @inject(RateLimiter) private readonly rateLimiter: RateLimiter,
    @inject(AbuseGuard) private readonly guard: AbuseGuard,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(Metrics) private readonly metrics: Metrics,
  ) {
    this.budget = new BufferBudget(config.bufferBudget);
  }

  handle(req: IncomingMessage, res: ServerResponse, requestId: string): void {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const rawPath = url.slice(PREFIX.length, q === -1 ? undefined : q);
    const ctx: ProxyContext = {
      requestId,
      req,
      res,
      method: req.method ?? 'GET',
      path: normaliseProviderPath(rawPath) ?? '',
      query: q === -1 ? '' : url.slice(q + 1),
      ip: clientAddress(req, this.config.trustedProxies),
      startedAt: process.hrtime.bigint(),
      forwarded: false,
      bytesOut: 0,
      usage: { inputTokens: 0, outputTokens: 0 },
      state: new Map(),
    };
    res.setHeader('x-keyward-request-id', requestId);
    void this.run(ctx);
  }

  private async run(ctx: ProxyContext): Promise<void> {
    const { req, res } = ctx;
    /** The token bucket taken from, handed back if the request is refused after all (nothing forwarded). */
    let rateTaken: { key: string; perMinute: number } | undefined;
    let body: BodyScan | undefined;
    try {
      // Authentication first: a valid token is never refused by the address's cool-down.
      try {
        await this.chain.auth.onRequest?.(ctx);
        if (!ctx.auth) throw Errors.invalidToken();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) throw this.guard.authFailed(ctx.ip, ctx.requestId, `/v1/proxy/${ctx.path}`, err);
        throw err;
      }
      const auth = ctx.auth;

      const provider = this.providers.get(auth.credential.provider);
      if (!provider) throw Errors.pathNotAllowed(`The provider ${JSON.stringify(auth.credential.provider)} is not loaded on this gateway.`);
      ctx.provider = provider;
      if (ctx.path === '') throw Errors.pathNotAllowed();
      const match = matchRoute(provider.routes, ctx.method, ctx.path);
      if (!match) throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} is not on the ${provider.id} allow-list.`);
      ctx.params = match.params;

      const scopes = auth.token.scopes;
      if (scopes.paths && !pathAllowed(scopes.paths, ctx.path, match.route.pattern)) {
        throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} is outside this token's paths.`);
      }
      if (match.route.account && !accountRouteAllowed(scopes.paths, ctx.path, match.route.pattern)) {
        throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} reaches what the whole ${provider.id} account shares: the token's \`paths\` must name ${match.route.pattern} exactly.`);
      }

      const declared = req.headers['content-length'];
      if (declared !== undefined && Number(declared) > this.config.maxBody) throw Errors.payloadTooLarge(this.config.maxBody);

      // A bodiless read (GET v1/models, GET v1/responses/{id}) names no model unless its path does.
      if (scopes.models && (match.params.model !== undefined || ctx.method === 'POST')) {
        if (match.params.model !== undefined) {
          ctx.model = match.params.model;
        } else {
          // Only a scope that reads the body scans it; every other request streams straight through.
          body = new BodyScan(req, { fields: MODEL_FIELDS, maxBody: this.config.maxBody, budget: this.budget });
          const scan = body;
          res.once('close', () => scan.discard());
          const model = (await body.decided).get('model');
          ctx.model = model?.kind === 'string' ? model.value : undefined;
        }
        if (ctx.model === undefined || !modelAllowed(scopes.models, ctx.model)) throw Errors.modelNotAllowed(ctx.model ?? '(none)');
      }

      for (const plugin of this.chain.middle) await plugin.onRequest?.(ctx);

      if (scopes.rateLimit) {
        this.rateLimiter.take(`tok:${auth.token.id}`, scopes.rateLimit);
        rateTaken = { key: `tok:${auth.token.id}`, perMinute: scopes.rateLimit };
      }

      // Every secret and plain field of the credential: the provider's signer decides what goes upstream.
      const credential = await this.credentials.secretsFor(auth.credential);

      if (scopes.maxRequests) await this.ledger.reserveToken(auth.token.id, scopes.maxRequests, auth.token.expiresAt);
      try {
        await this.chain.quota?.onRequest?.(ctx);
      } catch (err) {
        if (scopes.maxRequests) this.ledger.refundToken(auth.token.id);
        if (err instanceof ApiError && err.code === 'quota_exceeded') {
          this.audit.record({ requestId: ctx.requestId, org: auth.credential.orgId, actor: auth.token.id, action: 'quota.refused', target: auth.credential.id, outcome: 'denied', ip: ctx.ip });
        }
        throw err;
      }

      if (res.destroyed) {
        // The caller left while we checked: nothing is forwarded, so nothing counts.
        if (this.chain.quota) this.ledger.refund(auth.credential.orgId);
        if (scopes.maxRequests) this.ledger.refundToken(auth.token.id);
        if (rateTaken) this.rateLimiter.refund(rateTaken.key, rateTaken.perMinute);
        ctx.status = 499;
        void this.done(ctx);
        return;
      }
      ctx.forwarded = true;
      ctx.state.set(FORWARDED_AT, process.hrtime.bigint());
      const extraHeaders: Record<string, string> = { 'x-keyward-request-id': ctx.requestId };
      if (ctx.quotaRemaining !== undefined) extraHeaders['x-keyward-quota-remaining'] = String(ctx.quotaRemaining);
      this.upstream.forward({
        ctx, provider, credential, body, budget: this.budget, extraHeaders,
        onCutOff: () => this.unforward(ctx, rateTaken),
        onFinish: () => void this.done(ctx),
      });
    } catch (err) {
      if (rateTaken && !ctx.forwarded) this.rateLimiter.refund(rateTaken.key, rateTaken.perMinute);
      body?.discard();
      this.refuse(ctx, err);
    }
  }

  /**
   * The body's scan refused it after forwarding began, before any response: a scope refusal like any other (the
   * upstream never had a whole request), so it does not count.
   */
  private unforward(ctx: ProxyContext, rateTaken: { key: string; perMinute: number } | undefined): void {
    if (!ctx.forwarded || !ctx.auth) return;
    ctx.forwarded = false;
    if (rateTaken) this.rateLimiter.refund(rateTaken.key, rateTaken.perMinute);
    if (this.chain.quota) this.ledger.refund(ctx.auth.credential.orgId);
    if (ctx.auth.token.scopes.maxRequests) this.ledger.refundToken(ctx.auth.token.id);
  }

  private refuse(ctx: ProxyContext, err: unknown): void {
    const { req, res } = ctx;
    const apiError = toApiError(err);
    if (!(err instanceof ApiError)) this.log.error({ err, request_id: ctx.requestId }, 'proxy request failed');
    ctx.error = apiError;
    ctx.status = apiError.status;
    const headers: Record<string, string> = {};
    if (ctx.quotaRemaining !== undefined) headers['x-keyward-quota-remaining'] = String(ctx.quotaRemaining);
    const length = Number(req.headers['content-length'] ?? (req.headers['transfer-encoding'] ? Infinity : 0));
    if (!req.readableEnded && length > DRAIN_LIMIT) headers.connection = 'close';
    else req.resume();
    res.once('close', () => void this.done(ctx));
    sendError(res, apiError, headers);
  }

  private async done(ctx: ProxyContext): Promise<void> {
    const provider = ctx.provider?.id ?? 'unknown';
    if (ctx.forwarded) {
      const at = ctx.state.get(FORWARDED_AT) as bigint;
      this.metrics.proxied(provider, ctx.status ?? 499, Number(process.hrtime.bigint() - at) / 1e9, ctx.ttfbMs === undefined ? undefined : ctx.ttfbMs / 1000);
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
    for (const plugin of this.chain.all) {
      if (!plugin.onDone) continue;
      try {
        await plugin.onDone(ctx);
      } catch (err) {
        this.log.warn({ err, plugin: plugin.name, request_id: ctx.requestId }, 'plugin onDone failed');
      }
    }
  }
}
