/**
 * The vault services without HTTP: what the `keyward` CLI works with, straight on the store. The same core as the
 * server's (container.ts builds it), with no listener, gateway or admin routes.
 */
import 'reflect-metadata';
import type { Config } from '../settings/config.js';
import type { Logger } from '../log.js';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import type { Store } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import { TokenCaps } from '../accounting/token-caps.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { UsageSummaries } from '../accounting/usage-summary.js';
import { AuditLog } from '../controls/audit-log.js';
import { Issuer } from '../identity/issuer.js';
import { SigningKeyRing } from '../identity/signing-keys.js';
import { TrustPolicyService } from '../identity/trust-policy-service.js';
import { AdminKeyService } from '../vault/admin-key-service.js';
import { CredentialService } from '../vault/credential-service.js';
import { DeploymentSecrets } from '../vault/deployment-secrets.js';
import { Envelope } from '../vault/envelope.js';
import { OrgService } from '../vault/org-service.js';
import { PoolService } from '../vault/pool-service.js';
import { TokenService } from '../vault/token-service.js';
import { buildCore, type AppOptions } from './core.js';

export interface Vault {
  config: Config;
  orgs: OrgService;
  adminKeys: AdminKeyService;
  credentials: CredentialService;
  tokens: TokenService;
  trustPolicies: TrustPolicyService;
  pools: PoolService;
  usage: UsageRecorder;
  /** The month against the free tier, as GET /v1/usage answers it. */
  usageSummaries: UsageSummaries;
  /** A token's caps from their ledgers, as GET /v1/tokens/:id answers them. */
  tokenCaps: TokenCaps;
  /** The loaded providers (the same registry the services use). */
  providers: ProviderRegistry;
  audit: AuditLog;
  secrets: DeploymentSecrets;
  /** Keyward's OIDC signing keys (`keyward keys rotate-signing`); `issuer` when KEYWARD_ISSUER_URL is set. */
  signingKeys: SigningKeyRing;
  issuer: Issuer | undefined;
  envelope: Envelope;
  store: Store;
  keyWrapper: KeyWrapper;
  close(): Promise<void>;
}

export async function openVault(config: Config, log: Logger, options: AppOptions = {}): Promise<Vault> {
  const c = await buildCore(config, log, options);
  const store = c.resolve<Store>(Symbols.Store);
  const keyWrapper = c.resolve<KeyWrapper>(Symbols.KeyWrapper);
  const usage = c.resolve(UsageRecorder);
  const audit = c.resolve(AuditLog);
  return {
    config,
    audit,
    orgs: c.resolve(OrgService),
    adminKeys: c.resolve(AdminKeyService),
    credentials: c.resolve(CredentialService),
    tokens: c.resolve(TokenService),
    trustPolicies: c.resolve(TrustPolicyService),
    pools: c.resolve(PoolService),
    usage,
    usageSummaries: c.resolve(UsageSummaries),
    tokenCaps: c.resolve(TokenCaps),
    providers: c.resolve<ProviderRegistry>(Symbols.ProviderRegistry),
    secrets: c.resolve(DeploymentSecrets),
    signingKeys: c.resolve(SigningKeyRing),
    issuer: c.isRegistered(Issuer) ? c.resolve(Issuer) : undefined,
    envelope: c.resolve(Envelope),
    store,
    keyWrapper,
    close: async () => {
      await usage.close();
      await audit.close();
      await c.resolve(SigningKeyRing).close();
      await keyWrapper.close();
      await store.close();
    },
  };
}
