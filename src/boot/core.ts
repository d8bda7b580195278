/**
 * The vault's core, with no HTTP: the store and key wrapper the config names, the providers and their price
 * book, the vault, accounting and identity services, all registered in a child container. The server's
 * composition root (container.ts) adds the admin API, the gateway and the listener on top; the CLI (vault.ts)
 * uses it as it is. Kept apart so that a CLI command loads what it runs and not the gateway, the admin routes
 * or their schemas.
 */
import 'reflect-metadata';
import { container as rootContainer, type DependencyContainer } from 'tsyringe';
import { createKeyWrapper, createStore } from './adapters.js';
import { systemClock, systemTimers, type Clock, type Timers } from '../clock.js';
import type { Config } from '../settings/config.js';
import type { Logger } from '../log.js';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import { Symbols } from '../symbols.js';
import type { Metrics } from '../telemetry/metrics.js';
import { noTracing, type Tracing } from '../telemetry/tracing.js';
import { ProviderRegistry } from '../catalog/registry.js';
import { PriceBook, type PriceTables } from '../pricing/prices.js';
import { UnpricedModels } from '../pricing/unpriced-models.js';
import { priceOverrides } from '../pricing/price-file.js';
import { QuotaLedger } from '../accounting/quota-ledger.js';
import { Instance } from '../accounting/instance.js';
import { LeaseKeeper } from '../accounting/lease-keeper.js';
import { SpendLedger } from '../accounting/spend-ledger.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { UsageSummaries } from '../accounting/usage-summary.js';
import { TokenLimits } from '../accounting/token-limits.js';
import { TokenCaps } from '../accounting/token-caps.js';
import { RateLimiter } from '../accounting/rate-limiter.js';
import { AuditLog } from '../controls/audit-log.js';
import { AbuseGuard } from '../controls/abuse-guard.js';
import { SsoClient } from '../identity/sso-client.js';
import { OidcVerifier } from '../identity/oidc-verifier.js';
import { TokenExchange } from '../identity/token-exchange.js';
import { TrustPolicyService } from '../identity/trust-policy-service.js';
import { Issuer } from '../identity/issuer.js';
import { accessRevoker, endPrincipalGrants } from '../identity/mcp-auth/grant-ends.js';
import { lazyKmsSigning, SigningKeyRing } from '../identity/signing-keys.js';
import { CredentialService } from '../vault/credential-service.js';
import { DeploymentSecrets } from '../vault/deployment-secrets.js';
import { Envelope } from '../vault/envelope.js';
import { OAuthConnections } from '../vault/oauth-connections.js';
import { OrgLimits } from '../vault/org-limits.js';
import { OrgService } from '../vault/org-service.js';
import { PoolService } from '../vault/pool-service.js';
import { PrincipalRemovals } from '../vault/principal-removals.js';
import { TeamLimits } from '../vault/team-limits.js';
import { TeamService } from '../vault/team-service.js';
import { TokenService } from '../vault/token-service.js';

export interface AppOptions {
  /** Tests pass a clock they control. */
  clock?: Clock;
  /** And timers (flushes, polls, cache ages) they move instead of waiting (test/support/clocks.ts). */
  timers?: Timers;
}

/** Vault and store only: what the CLI needs (no HTTP, no plugins). */
export async function buildCore(config: Config, log: Logger, options: AppOptions = {}, metrics?: Metrics, tracing: Tracing = noTracing): Promise<DependencyContainer> {
  const c = rootContainer.createChildContainer();
  // Traced: every port the services inject is the same traced instance (spans around its calls).
  const timers = options.timers ?? systemTimers;
  const store = tracing.traceCalls(await createStore(config, timers), 'store', config.store);
  let wrapper: KeyWrapper;
  try {
    wrapper = await createKeyWrapper(config, log, timers);
    if (metrics) wrapper = metrics.meter(wrapper);
    wrapper = tracing.traceCalls(wrapper, 'kms', wrapper.kind);
  } catch (err) {
    await store.close();
    throw err;
  }
  c.register(Symbols.Config, { useValue: config });
  c.register(Symbols.Logger, { useValue: log });
  c.register(Symbols.Clock, { useValue: options.clock ?? systemClock });
  c.register(Symbols.Timers, { useValue: timers });
  c.register(Symbols.Store, { useValue: store });
  for (const port of [Symbols.OrgStore, Symbols.AdminKeyStore, Symbols.CredentialStore, Symbols.TokenStore, Symbols.LeaseStore, Symbols.UsageStore, Symbols.ChangeFeed, Symbols.AuditStore, Symbols.IdempotencyStore, Symbols.SecretStore, Symbols.TrustPolicyStore, Symbols.PoolStore, Symbols.PeopleStore, Symbols.OAuthConnectionStore, Symbols.TeamStore]) {
    c.register(port, { useValue: store });
  }
  c.register(Symbols.KeyWrapper, { useValue: wrapper });
  c.register(Symbols.SsoClient, { useValue: new SsoClient(config.oidcAllowHttpLoopback, () => timers.elapsed()) });
  const registry = await ProviderRegistry.load(config.builtinProvidersDir, config.upstreamOverrides, { ...(config.providersDir !== undefined ? { extraDir: config.providersDir } : {}), log });
  c.register(Symbols.ProviderRegistry, { useValue: registry });
  let prices: PriceBook;
  try {
    prices = priceBookOf(registry, config.priceOverrides, config.unpriced);
  } catch (err) {
    await store.close(); // a bad KEYWARD_PRICES stops start-up (ConfigError): nothing left open
    throw err;
  }
  c.register(PriceBook, { useValue: prices });
  const clock = options.clock ?? systemClock;
  c.register(UnpricedModels, { useValue: new UnpricedModels(prices, () => clock.now()) });
  // Services are singletons within this container (tests run several servers in one process).
  const services = [Envelope, CredentialService, TokenService, OrgService, QuotaLedger, UsageRecorder, AuditLog, AbuseGuard, DeploymentSecrets, UsageSummaries, SpendLedger, OrgLimits, TeamLimits, TeamService, OidcVerifier, TrustPolicyService, TokenExchange, Instance, LeaseKeeper, PoolService, TokenLimits, TokenCaps, OAuthConnections, PrincipalRemovals];
  for (const cls of services) c.registerSingleton(cls as never);
  c.register(RateLimiter, { useValue: new RateLimiter(() => timers.elapsed()) });
  // Keyward's own OIDC identity: the signing keys always (the CLI rotates them), the issuer when KEYWARD_ISSUER_URL is set.
  const ring = new SigningKeyRing(store, wrapper, clock, log, config.kms === 'gcp' ? lazyKmsSigning(config.kmsSigningKey, config.kmsEndpoint) : undefined);
  c.register(SigningKeyRing, { useValue: ring });
  // A member removed or an admin key deleted, by the server or the CLI: every MCP grant it consented to ends, with
  // its access and refresh tokens (whether or not MCP authorization is on now: grants outlive a restart without it).
  const tokens = c.resolve(TokenService);
  c.resolve(PrincipalRemovals).subscribe((id, by) => endPrincipalGrants(store, accessRevoker(tokens), id, by));
  if (config.issuerUrl !== undefined) c.register(Issuer, { useValue: new Issuer(config.issuerUrl, ring, clock) });
  return c;
}

/** Every provider's price table, then KEYWARD_PRICES on top (checked against the loaded providers: a ConfigError names a bad entry). */
function priceBookOf(registry: ProviderRegistry, overrides: Config['priceOverrides'], unpriced: Config['unpriced']): PriceBook {
  const tables: Record<string, PriceTables[string]> = {};
  for (const [id, table] of registry.prices) tables[id] = Object.fromEntries([...table].map(([name, r]) => [name, r.price]));
  return new PriceBook([
    { tables, source: (id, name) => registry.prices.get(id)!.get(name)!.source },
    { tables: priceOverrides(overrides, registry.ids()), source: () => 'KEYWARD_PRICES' },
  ], unpriced);
}
