/**
 * Injection tokens, one per port, in one file (as credo-ts does): the
 * composition root binds each to an implementation; constructors name them
 * with an explicit @inject, which survives tsx/esbuild (no decorator metadata).
 */
export const Symbols = {
  Config: Symbol('Config'),
  Logger: Symbol('Logger'),
  Clock: Symbol('Clock'),
  /** clock.ts: monotonic time and timers (periodic flushes, polls, cache ages). */
  Timers: Symbol('Timers'),
  /** The whole adapter (lifecycle: ping, close); services inject the narrow ports below. */
  Store: Symbol('Store'),
  OrgStore: Symbol('OrgStore'),
  AdminKeyStore: Symbol('AdminKeyStore'),
  CredentialStore: Symbol('CredentialStore'),
  TokenStore: Symbol('TokenStore'),
  LeaseStore: Symbol('LeaseStore'),
  UsageStore: Symbol('UsageStore'),
  ChangeFeed: Symbol('ChangeFeed'),
  AuditStore: Symbol('AuditStore'),
  IdempotencyStore: Symbol('IdempotencyStore'),
  SecretStore: Symbol('SecretStore'),
  TrustPolicyStore: Symbol('TrustPolicyStore'),
  PoolStore: Symbol('PoolStore'),
  /** store/people-port.ts: single sign-on configurations, members, sessions. */
  PeopleStore: Symbol('PeopleStore'),
  OAuthConnectionStore: Symbol('OAuthConnectionStore'),
  TeamStore: Symbol('TeamStore'),
  KeyWrapper: Symbol('KeyWrapper'),
  /** identity/sso-client.ts: the organisations' OpenID providers, under the SSRF rules. */
  SsoClient: Symbol('SsoClient'),
  ProviderRegistry: Symbol('ProviderRegistry'),
  Pipeline: Symbol('Pipeline'),
  /** gateway/entry/gateway.ts UpgradeRelay: where an admitted WebSocket upgrade goes (src/gateway/realtime/). */
  UpgradeRelay: Symbol('UpgradeRelay'),
  /** telemetry/tracing.ts: OpenTelemetry spans, or the no-op default. */
  Tracing: Symbol('Tracing'),
} as const;
