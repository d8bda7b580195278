/**
 * The composition root: with the vault's core (core.ts: store, key wrapper, providers, services), the only
 * place that registers or resolves anything. Here the server's parts go on top: the admin API, the gateway and
 * its pipeline, realtime, MCP authorization, the listener.
 */
import 'reflect-metadata';
import { buildCore, type AppOptions } from './core.js';
import type { DependencyContainer } from 'tsyringe';
import { CredentialsApi } from '../api/credentials.js';
import { OAuthConnectApi } from '../api/oauth-connect.js';
import { OrgsApi } from '../api/orgs.js';
import { TokensApi } from '../api/tokens.js';
import { UsageApi } from '../api/usage.js';
import { TrustPoliciesApi } from '../api/trust-policies.js';
import { PoolsApi } from '../api/pools.js';
import { SsoApi } from '../api/sso.js';
import { MembersApi } from '../api/members.js';
import { TeamLimits } from '../vault/team-limits.js';
import { TeamsApi } from '../api/teams.js';
import { TokenLimits } from '../accounting/token-limits.js';
import { TokenExchangeApi } from '../api/token-exchange.js';
import { AdminKeysApi } from '../api/admin-keys.js';
import { openApiDocument } from '../api/openapi/document.js';
import { providerSchema } from '../api/schemas/credentials.js';
import { AdminPipeline } from '../api/admin-pipeline.js';
import { AuditLog } from '../controls/audit-log.js';
import { AbuseGuard } from '../controls/abuse-guard.js';
import type { Clock, Timers } from '../clock.js';
import { pluginConfig, type Config } from '../settings/config.js';
import { ProviderRegistry } from '../catalog/registry.js';
import { PriceBook } from '../pricing/prices.js';
import { UnpricedModels } from '../pricing/unpriced-models.js';
import { QuotaLedger } from '../accounting/quota-ledger.js';
import { LeaseKeeper } from '../accounting/lease-keeper.js';
import { SpendLedger } from '../accounting/spend-ledger.js';
import { OrgLimits } from '../vault/org-limits.js';
import { spendHost } from '../gateway/exit/spend-host.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { Router } from '../http/router.js';
import { HttpServer } from '../http/server.js';
import { LoopbackMetricsListener } from '../http/metrics-listener.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import type { Logger } from '../log.js';
import { buildMcpAuthorization } from './mcp-auth.js';
import type { McpAuthorization } from '../identity/mcp-auth/authorization.js';
import type { Store } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Metrics, type CacheStats } from '../telemetry/metrics.js';
import { CredentialService } from '../vault/credential-service.js';
import { OAuthConnections } from '../vault/oauth-connections.js';
import { TokenService, type ResolvedToken } from '../vault/token-service.js';
import { ApiError, Errors } from '../errors.js';
import { formatUsd } from '../pricing/money.js';
import { traceFields } from '../telemetry/trace.js';
import type { Host, RequestView } from '../../sdk/src/index.js';
import { Gateway } from '../gateway/entry/gateway.js';
import { loadPlugins } from '../gateway/pipeline/plugin-loader.js';
import { Pipeline } from '../gateway/pipeline/pipeline.js';
import { pipelineStages } from '../gateway/stages/index.js'; import type { TokenResolver } from '../gateway/stages/auth.js'; import { toolCallSink } from '../gateway/wire/mcp/tool-calls.js';
import { BufferBudget } from '../gateway/entry/buffer-budget.js';
import { UpstreamProxy } from '../gateway/upstream/upstream.js';
import { RateLimiter } from '../accounting/rate-limiter.js';
import { bearer } from '../vault/org-service.js';
import { secretEquals } from '../ids.js';
import { sendError } from '../http/reply.js';
import { noTracing, type Tracing } from '../telemetry/tracing.js';
import { consoleRoutes } from '../http/console-assets.js';
import { ProvidersApi } from '../api/providers.js';
import { RealtimeRelay } from '../gateway/realtime/realtime-relay.js';
import { spendLimit, teamTokensPerMinuteLimit, tokensPerMinuteLimit } from '../gateway/realtime/limits.js';
import type { ChangeFeed } from '../store/ports.js';
import { Issuer, type AssertionRequest } from '../identity/issuer.js';
import { SigningKeyRing } from '../identity/signing-keys.js';
import { discoveryRoutes } from '../http/discovery-routes.js';

export interface Server {
  http: HttpServer;
  container: DependencyContainer;
  /** The admin API's routes (the OpenAPI test checks each is documented). */
  router: Router;
  /** Graceful shutdown: drain, hand quota back, flush usage, close the store. */
  shutdown(): Promise<void>;
  /** MCP authorization when it is on: revokePrincipal ends a removed member's grants and tokens (also in the container). */
  mcpAuthorization?: McpAuthorization;
}

export async function buildServer(config: Config, log: Logger, options: AppOptions = {}): Promise<Server> {
  let http: HttpServer | undefined;
  let c: DependencyContainer | undefined;
  const metrics = new Metrics(
    (): Record<string, CacheStats> => (c ? { token: c.resolve(TokenService).cache, key: c.resolve(CredentialService).keys } : {}),
    () => http?.inflightRequests ?? 0,
    () => c?.resolve(UnpricedModels).counts(),
  );
  // The OpenTelemetry SDK is loaded only when an OTLP endpoint is configured: otherwise not even imported.
  const tracing: Tracing = config.traces ? new (await import('../telemetry/otel.js')).OtelTracing(config.traces, log) : noTracing;
  try {
    c = await buildCore(config, log, options, metrics, tracing);
  } catch (err) {
    await tracing.shutdown();
    throw err;
  }
  c.register(Metrics, { useValue: metrics });
  c.register(Symbols.Tracing, { useValue: tracing });
  // One instance: who a request acts for (its `memberOf`) is set once, for the credential views and the connect routes alike.
  c.registerSingleton(OAuthConnectApi);
  const apis = [OrgsApi, CredentialsApi, TokensApi, UsageApi, AdminKeysApi, TrustPoliciesApi, TokenExchangeApi, PoolsApi, SsoApi, MembersApi, TeamsApi];
  for (const cls of [...apis, AdminPipeline]) c.registerSingleton(cls as never);
  // Each API registers its routes once; a second registration of a route throws (router.ts) and stops start-up.
  const router = new Router();
  try {
    for (const api of apis) c.resolve<{ register(r: Router): void }>(api as never).register(router);
  } catch (err) {
    await closeCore(c, tracing);
    throw err;
  }

  const store = c.resolve<Store>(Symbols.Store);
  const wrapper = c.resolve<KeyWrapper>(Symbols.KeyWrapper);
  const ledger = c.resolve(QuotaLedger);
  const usage = c.resolve(UsageRecorder);
  const audit = c.resolve(AuditLog);
  const tokens = c.resolve(TokenService);
  const providers = c.resolve<ProviderRegistry>(Symbols.ProviderRegistry);
  const spend = c.resolve(SpendLedger);
  const orgLimits = c.resolve(OrgLimits);

  const teamLimits = c.resolve(TeamLimits);
  /**
   * The token, once its org's limit (and its team's limits and member's budget, for a token bound to them) is cached
   * (loaded first when it is not; a failed load is retried later).
   */
  const withOrgLimit = (resolved: ResolvedToken | undefined): ResolvedToken | undefined | Promise<ResolvedToken | undefined> => {
    if (!resolved) return resolved;
    const orgId = resolved.credential.orgId;
    const { teamId, memberId } = resolved.token;
    const loads: Array<Promise<unknown>> = [];
    if (orgLimits.peek(orgId) === undefined) loads.push(orgLimits.get(orgId));
    if (teamId !== undefined && teamLimits.peekTeam(teamId) === undefined) loads.push(teamLimits.team(orgId, teamId));
    if (memberId !== undefined && teamLimits.peekMember(orgId, memberId) === undefined) loads.push(teamLimits.member(orgId, memberId));
    return loads.length === 0 ? resolved : Promise.all(loads).then(() => resolved, () => resolved);
  };

  // One SpendHost for the budget stage and the realtime sessions' per-response holds: the same ledger and caps.
  const spending = spendHost(spend, orgLimits, c.resolve(PriceBook), teamLimits);
  // The org's spend cap is known before the body stage decides to read a body whole; at once when cached, else a promise.
  const resolveToken: TokenResolver = (presented) => {
    const resolved = tokens.resolve(presented);
    return resolved instanceof Promise ? resolved.then(withOrgLimit) : withOrgLimit(resolved);
  };
  const auditRefusal = (ctx: Pick<RequestView<unknown>, 'requestId' | 'orgId' | 'tokenId' | 'credentialId' | 'ip'>, action: string): void => {
    void audit.record({ requestId: ctx.requestId, org: ctx.orgId ?? '', actor: ctx.tokenId ?? 'anonymous', action, target: ctx.credentialId ?? '', outcome: 'denied', ip: ctx.ip });
  };
  // What a plugin gets at run time (the SDK's Host): typed against the SDK, so the core's errors, logger and
  // settings are checked to be what the SDK promises plugin authors.
  const host: Host = {
    errors: Errors,
    GatewayError: ApiError,
    // A copy without secrets: a plugin is someone else's code.
    config: pluginConfig(config),
    logger: log,
    clock: c.resolve<Clock>(Symbols.Clock),
    timers: c.resolve<Timers>(Symbols.Timers),
    providers: { keyQueryParams: providers.keyQueryParams },
    audit: { refused: auditRefusal },
    usd: formatUsd,
    traceFields: (headers) => traceFields(headers, config.gcpProject),
  };
  const plugins = await loadPlugins(config, host, log);
  const budget = new BufferBudget(config.bufferBudget, config.bufferPerToken, config.bufferPerOrg);
  c.register(BufferBudget, { useValue: budget });
  const pipeline = new Pipeline(pipelineStages({
    config, providers, tokens: resolveToken, guard: c.resolve(AbuseGuard), limiter: c.resolve(RateLimiter), ledger, spend: spending, auditRefusal,
    budget, limits: c.resolve(TokenLimits), prices: c.resolve(PriceBook), log, toolCalls: toolCallSink(c.resolve(Metrics), config.auditToolCalls ? audit : undefined),
  }, plugins), log);
  if (!pipeline.has('quota')) log.warn({ quota: config.quota }, 'KEYWARD_QUOTA=off: the quota stage is off, proxy requests are not limited per month');
  c.register(Symbols.Pipeline, { useValue: pipeline });
  const issuer = c.isRegistered(Issuer) ? c.resolve(Issuer) : undefined;
  const ring = c.resolve(SigningKeyRing);
  const clock = c.resolve<Clock>(Symbols.Clock);
  // One set of signer settings for the proxy and the realtime relay: the same signers, the same minted tokens.
  const signers = {
    clock,
    oauth: { connections: c.resolve(OAuthConnections), allowHttpLoopback: config.oidcAllowHttpLoopback, timers: c.resolve<Timers>(Symbols.Timers) },
    federation: {
      assertion: issuer && ((request: AssertionRequest) => issuer.assertion(request)), clock, log, awsStsEndpoint: config.awsStsEndpoint,
      azureAuthorityHost: config.azureAuthorityHost, googleStsUri: config.googleStsUri, googleIamCredentialsUri: config.googleIamCredentialsUri,
    },
  };
  const upstream = new UpstreamProxy(config, log, providers, signers);
  c.register(UpstreamProxy, { useValue: upstream });
  c.registerSingleton(Gateway);
  // WebSocket upgrades of proxy paths enter the gateway like any request; an admitted one goes on to its relay (src/gateway/realtime/).
  c.register(Symbols.UpgradeRelay, { useValue: new RealtimeRelay({
    config, log, clock, timers: c.resolve<Timers>(Symbols.Timers), credentials: c.resolve(CredentialService), providers, prices: c.resolve(PriceBook), unpriced: c.resolve(UnpricedModels),
    feed: c.resolve<ChangeFeed>(Symbols.ChangeFeed), tokens, limits: [spendLimit(spending), tokensPerMinuteLimit(c.resolve(TokenLimits)), teamTokensPerMinuteLimit(c.resolve(TokenLimits), spending)],
    refused: auditRefusal, signers,
  }) });

  // GET /v1/providers: what the console's credential forms are built from (registered before the document is made).
  c.resolve(ProvidersApi).register(router);

  const sendMetrics = async (res: ServerResponse): Promise<void> => {
    const body = await metrics.registry.metrics();
    res.writeHead(200, { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' });
    res.end(body);
  };
  // MCP authorization (KEYWARD_ISSUER_URL without a path): its token endpoints join the route table before the document is made.
  const mcpAuth = buildMcpAuthorization(c, config, log, router);
  // Generated once from the route table (each route's schemas and docs) and the loaded providers.
  const openapi = JSON.stringify(openApiDocument({ routes: router.all(), keyQueryParams: providers.keyQueryParams, schemas: [providerSchema(providers)], mcp: mcpAuth !== undefined }));
  http = new HttpServer(config, log, router, c.resolve(AdminPipeline), c.resolve(Gateway), {
    ready: async () => {
      await Promise.all([store.ping(), wrapper.ping()]);
    },
    timers: c.resolve<Timers>(Symbols.Timers),
  }, {
    // With KEYWARD_METRICS_PORT, the main (public) listener serves /metrics only behind KEYWARD_METRICS_TOKEN.
    ...(config.metricsPort === undefined || config.metricsToken !== undefined ? {
      '/metrics': async (req: IncomingMessage, res: ServerResponse) => {
        // KEYWARD_METRICS_TOKEN set: only `Authorization: Bearer <it>` (one header), compared in constant time.
        const authorization = (req.headersDistinct.authorization?.length ?? 0) > 1 ? undefined : bearer(req.headers.authorization);
        if (config.metricsToken !== undefined && !secretEquals(authorization ?? '', config.metricsToken)) {
          sendError(res, Errors.metricsUnauthenticated());
          return;
        }
        await sendMetrics(res);
      },
    } : {}),
    '/v1/openapi.json': (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(openapi) });
      res.end(openapi);
    },
    // The operators' console: the built page and its assets, GET only (src/http/console-assets.ts).
    ...consoleRoutes(log),
    // Keyward as its organisations' OIDC issuer: discovery and JWKS, when KEYWARD_ISSUER_URL is set.
    ...discoveryRoutes(issuer, log),
  }, c.resolve(Gateway), config.metricsPort === undefined ? undefined : new LoopbackMetricsListener(config.metricsPort, (_req, res) => sendMetrics(res), config.headersTimeoutMs), c.resolve<Clock>(Symbols.Clock), mcpAuth?.frontDoor);
  const server = http;

  let closing: Promise<void> | undefined;
  return {
    http: server,
    container: c,
    router,
    ...(mcpAuth ? { mcpAuthorization: mcpAuth.authorization } : {}),
    shutdown: () => (closing ??= (async () => {
      // Leased quota goes back first (the quota stage's close): another instance may need it while we drain.
      await pipeline.close();
      mcpAuth?.sweep.close();
      await server.drain(config.drainS * 1000);
      await ledger.releaseAll();
      // Requests settled while draining left amounts here: they go back too; then every lease holder ends.
      await spend.releaseAll();
      await c!.resolve(LeaseKeeper).close();
      upstream.close();
      await usage.close();
      await audit.close();
      await ring.close();
      await wrapper.close();
      await store.close();
      // Last: the spans of the final flushes above are exported too.
      await tracing.shutdown();
    })()),
  };
}

/** What buildCore opened, closed again when start-up stops after it (a duplicate route). */
async function closeCore(c: DependencyContainer, tracing: Tracing): Promise<void> {
  await c.resolve(UsageRecorder).close();
  await c.resolve(AuditLog).close();
  await c.resolve<KeyWrapper>(Symbols.KeyWrapper).close();
  await c.resolve<Store>(Symbols.Store).close();
  await tracing.shutdown();
}
