/**
 * Store ports. Adapters (sqlite/, firestore/) implement every one with the same
 * behaviour, checked by one shared contract suite. Multi-instance correctness
 * rests on what each adapter makes atomic: credential creation within the
 * limit, token creation only for a live credential, and lease grants.
 * Times are epoch milliseconds; secrets never arrive here, only their hashes
 * and ciphertexts.
 */

export interface OrgRecord {
  id: string;
  name: string;
  createdAt: number;
  /** The monthly spend cap (UTC calendar month) in micro-dollars; absent (or null): none. */
  spendLimitMicros?: number | null;
}

/** An organisation's bearer token (`otok_`), known by its id (`otk_`) and hash. */
export interface OrgTokenRecord {
  id: string;
  orgId: string;
  tokenHash: string;
  createdAt: number;
  /** null: valid until rotated; set when a rotation gives it a grace period. */
  expiresAt: number | null;
}

export type { SealedKey } from './sealed-key.js';
import type { SealedKey } from './sealed-key.js';

export interface CredentialRecord extends SealedKey {
  id: string;
  orgId: string;
  provider: string;
  keyHint: string;
  /** Plain (non-secret) fields the provider declares, e.g. OpenAI's `organization`; stored in clear. */
  fields?: Record<string, string>;
  /** What the organisation calls it (vault/names.ts); absent: unnamed. */
  name?: string;
  createdAt: number;
  updatedAt: number;
}

export interface TokenScopes {
  models?: string[];
  paths?: string[];
  maxRequests?: number;
  rateLimit?: number;
  /** `budget_usd`: the token's lifetime spend cap in micro-dollars. */
  budgetMicros?: number;
  /** An MCP server's tools the token may call: exact names or `prefix*` (catalog/scopes.ts toolAllowed). */
  tools?: string[];
  /** `tokens_per_minute`: input + output tokens per rolling minute. */
  tokensPerMinute?: number;
  /** `max_concurrent`: requests and streams open at once. */
  maxConcurrent?: number;
  /** An OAuth access token for one of Keyward's MCP routes: that route's URL (its audience), where alone it is accepted. */
  resource?: string;
}

export interface TokenRecord {
  id: string;
  orgId: string;
  /** The credential whose key it uses, or for a pooled token its pool's id (`pool_…`, isPoolId): what it is bound to. */
  credentialId: string;
  tokenHash: string;
  scopes: TokenScopes;
  createdAt: number;
  expiresAt: number;
  /** Who minted it: an `otk_`/`akey_` id, or `cli`; absent on tokens minted before it was recorded. A minter lists only its own. */
  createdBy?: string;
  /** What the organisation calls it; absent: unnamed. */
  name?: string;
  /** The team (`team_…`) it belongs to: its spend counts against the team's budget too (team-port.ts). */
  teamId?: string;
  /** A personal token's member (`usr_…`, people-port.ts): revoked with it, and the audit names it. */
  memberId?: string;
}

/**
 * What is kept of a revoked token: its record without the hash (which left the lookup path in the same
 * write, so the token can never authenticate again), when and by whom it was revoked. Listed on request
 * (`GET /v1/tokens?status=revoked`), never found by id or hash.
 */
export interface RevokedTokenRecord extends Omit<TokenRecord, 'tokenHash'> {
  revokedAt: number;
  /** Who revoked it: an `otk_`/`akey_` id, or `cli`. */
  revokedBy: string;
}

/** The roles an admin key may hold (the org token itself is `owner`; src/vault/roles.ts orders them). */
export type AdminKeyRole = 'admin' | 'minter' | 'viewer';

/** A scoped admin key (`otok_…` on the wire, known by its id `akey_` and hash). */
export interface AdminKeyRecord {
  id: string;
  orgId: string;
  /** What the key is for; absent: unnamed (keys made before names were optional always have one). */
  name?: string;
  role: AdminKeyRole;
  /** A minter limited to these credentials; absent: every credential. */
  credentialIds?: string[];
  tokenHash: string;
  createdAt: number;
  /** null: until deleted. */
  expiresAt: number | null;
  /** The creator's id (`otk_`, `akey_`) or `cli`. */
  createdBy: string;
}

export { BAD_CURSOR, type NamedPageQuery, type Page, type PageQuery } from './paging.js';
import type { BAD_CURSOR, NamedPageQuery, Page, PageQuery } from './paging.js';

export interface OrgStore {
  createOrg(org: OrgRecord, token: OrgTokenRecord): Promise<void>;
  getOrg(id: string): Promise<OrgRecord | undefined>;
  /** Every organisation, newest first (`keyward org list`, and the start-up's "no organisation yet" notice). */
  listOrgs(page: PageQuery): Promise<Page<OrgRecord> | typeof BAD_CURSOR>;
  findOrgToken(tokenHash: string): Promise<OrgTokenRecord | undefined>;
  /**
   * Atomic: adds `token`; every other token of the org is set to expire at `retireAt` (or kept if sooner).
   * Only while the caller's token `callerId` has no expiry: a retiring (or gone) one changes nothing → 'retiring'.
   */
  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string): Promise<'rotated' | 'retiring'>;
  /** Sets (or, with null, clears) the org's monthly spend cap and announces the org on the change feed; false: no such org. */
  setOrgSpendLimit(id: string, micros: number | null): Promise<boolean>;
}

export interface CredentialStore {
  /** Atomic: stores the credential only while the org holds fewer than `limit`. */
  createCredential(record: CredentialRecord, limit: number): Promise<'created' | 'limit'>;
  getCredential(orgId: string, id: string): Promise<CredentialRecord | undefined>;
  listCredentials(orgId: string, page: NamedPageQuery): Promise<Page<CredentialRecord> | typeof BAD_CURSOR>;
  /** Sets (a string) or clears (null) its name; false: no such credential of this org. Nothing cached holds a name, so no change is published. */
  setCredentialName(orgId: string, id: string, name: string | null): Promise<boolean>;
  countCredentials(orgId: string): Promise<number>;
  /** Deletes the credential and every token bound to it; frees its slot. */
  deleteCredential(orgId: string, id: string): Promise<boolean>;
  /** Rotation: a new key sealed for the same record. */
  replaceCredentialKey(orgId: string, id: string, sealed: SealedKey, keyHint: string, updatedAt: number): Promise<boolean>;
  /** Every credential of every organisation, for `keyward keys rewrap`. */
  allCredentials(): AsyncIterable<CredentialRecord>;
  /** Re-wrap: swaps the wrapped DEK only if it is still `expectedWrappedDek`; ciphertext untouched. */
  rewrapCredential(id: string, expectedWrappedDek: Buffer, wrappedDek: Buffer, kekId: string): Promise<boolean>;
}

export interface TokenStore {
  /** Atomic: stores the token only while its credential exists. */
  createToken(record: TokenRecord): Promise<'created' | 'no_credential'>;
  findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined>;
  getToken(orgId: string, id: string): Promise<TokenRecord | undefined>;
  /** `createdBy`: only the tokens that caller minted (a minter's view); a cursor outside them is BAD_CURSOR. */
  listTokens(orgId: string, page: NamedPageQuery, createdBy?: string): Promise<Page<TokenRecord> | typeof BAD_CURSOR>;
  /**
   * Atomic: removes the token (its hash leaves the lookup path), keeps its revocation record and
   * announces the token on the change feed. The record kept, or undefined (no such live token of this org) once revoked.
   */
  revokeToken(orgId: string, id: string, revokedAt: number, revokedBy: string): Promise<RevokedTokenRecord | undefined>;
  /** Revoked tokens, most recently revoked first (`createdBy`, `namePrefix` as listTokens); a cursor is a revoked token's id. */
  listRevokedTokens(orgId: string, page: NamedPageQuery, createdBy?: string): Promise<Page<RevokedTokenRecord> | typeof BAD_CURSOR>;
  /** One revocation record of this organisation by the token's id (the usage breakdown names revoked tokens). */
  getRevokedToken(orgId: string, id: string): Promise<RevokedTokenRecord | undefined>;
  /** Sets or clears a live token's name; false: no such live token of this org. */
  setTokenName(orgId: string, id: string, name: string | null): Promise<boolean>;
}

/**
 * Admin keys: stored by hash only. Nothing caches them (every admin request reads its key), so a
 * deletion is refused at once on every instance; no change feed event is needed.
 */
export interface AdminKeyStore {
  createAdminKey(record: AdminKeyRecord): Promise<void>;
  findAdminKeyByHash(tokenHash: string): Promise<AdminKeyRecord | undefined>;
  getAdminKey(orgId: string, id: string): Promise<AdminKeyRecord | undefined>;
  listAdminKeys(orgId: string, page: NamedPageQuery): Promise<Page<AdminKeyRecord> | typeof BAD_CURSOR>;
  /** Sets or clears its name; false: no such key of this org. */
  setAdminKeyName(orgId: string, id: string, name: string | null): Promise<boolean>;
  /** True once; a second delete (or another org's id) is false. */
  deleteAdminKey(orgId: string, id: string): Promise<boolean>;
}

export { isPoolId, type PoolMember, type PoolRecord, type PoolStore, type PoolStrategy, type PoolUpdate } from './pool-port.js';
import type { PoolStore } from './pool-port.js';

export type { MemberBudget, TeamRecord, TeamStore, TeamUpdate } from './team-port.js';
import type { TeamStore } from './team-port.js';
export { isRollingPool, ROLLING_WINDOW_MS, type HolderOutcome, type HolderState, type HolderWrite, type LeaseLedger, type LeaseStore } from './lease-port.js';
import type { LeaseStore } from './lease-port.js';

export type { McpClientRecord, McpGrantRecord, McpGrantState, McpGrantStore, McpIssuedToken } from './mcp-grant-port.js';
import type { McpGrantStore } from './mcp-grant-port.js';
/**
 * Monthly counters per organisation, credential and token; `org-day`: an organisation's daily counters (the
 * console's charts); the breakdown scopes (`tok-day`, `cred-day`, `model-day`): an organisation's days per
 * token, credential or priced model, whose id is breakdownId(org, key).
 */
export type UsageScope = 'org' | 'cred' | 'tok' | 'org-day' | BreakdownScope;
export type BreakdownScope = 'tok-day' | 'cred-day' | 'model-day';
export const BREAKDOWN_SCOPES: readonly BreakdownScope[] = ['tok-day', 'cred-day', 'model-day'];
export const isBreakdown = (scope: UsageScope): scope is BreakdownScope => (BREAKDOWN_SCOPES as readonly string[]).includes(scope);

/** A breakdown counter's id: the organisation's id (never holding a `/`), a `/`, then the token or credential id or the model. */
export const breakdownId = (orgId: string, key: string): string => `${orgId}/${key}`;
/** breakdownId's inverse. */
export const splitBreakdownId = (id: string): { orgId: string; key: string } => ({ orgId: id.slice(0, id.indexOf('/')), key: id.slice(id.indexOf('/') + 1) });


export interface UsageCounts {
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Spend in integer micro-dollars (pricing/money.ts): the priced cost of what the providers reported. */
  spendMicros: number;
}


/** One period's counters, as listUsage returns them. */
export interface PeriodUsage extends UsageCounts {
  period: string;
}

/** One key's counters summed over a range of days, as listBreakdown returns them. */
export interface KeyUsage extends UsageCounts {
  /** The token or credential id, or the model. */
  key: string;
}

/** One writer's absolute totals for one counter (scope, id, period). */
export interface UsageShard extends UsageCounts {
  scope: UsageScope;
  id: string;
  period: string;
}

/**
 * Usage counters, sharded by writer (each instance writes only its own shard, with absolute totals, at most
 * once a flush) and summed on read. A write is idempotent: a retry writes the same totals; an older write
 * (lower `seq`) never replaces a newer one. Adding a scope costs nothing here: scopes are opaque names.
 */
export interface UsageStore {
  /** Writes `writer`'s absolute totals for each counter given (one write per counter per flush, never per request). */
  putUsageShards(writer: string, seq: number, shards: UsageShard[]): Promise<void>;
  /** `writer`'s stored totals for these counters (a counter it had let go of and counts again), in order; absent ones are zeros. */
  getUsageShards(writer: string, counters: Array<Pick<UsageShard, 'scope' | 'id' | 'period'>>): Promise<UsageCounts[]>;
  /** One period's counts (every writer's summed), or the sum over all periods when `period` is omitted. */
  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts>;
  /** The periods from `from` to `to` (inclusive, compared as strings) that have counters, in order; absent ones are left out. */
  listUsage(scope: UsageScope, id: string, from: string, to: string): Promise<PeriodUsage[]>;
  /** An organisation's keys in a breakdown scope with counters on days `from` to `to` (inclusive), every writer's summed over those days; in no set order. */
  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]>;
}

/** `pool`: a pool changed or a member's cooling was set (every instance reloads it); `team`: a team changed; `member`: a member's budget. */
export type ChangeKind = 'token' | 'credential' | 'org' | 'pool' | 'team' | 'member';

export interface Change {
  kind: ChangeKind;
  id: string;
}

/**
 * Mutations that must reach every instance's caches (revocation, deletion,
 * rotation) are published by the adapter in the same write; every process
 * watching sees them within a second, the CLI's included.
 */
export interface ChangeFeed {
  watch(listener: (change: Change) => void): () => void;
  /**
   * Whether changes are arriving now (the feed is watched and healthy). While
   * it is not, caches trust what they hold one second at most, so revocation
   * still lands within a second.
   */
  isLive(): boolean;
}

/** One append-only audit record. Never a secret: ids, actions and outcomes only. */
export interface AuditRecord {
  id: string;
  time: number;
  requestId: string;
  /** '' when the organisation is unknown (a failed authentication with an unknown token). */
  org: string;
  /** A token id (`tok_`, `otk_`), `admin`, `cli`, or `anonymous`. */
  actor: string;
  action: string;
  /** An id (or a path, a `<provider>:<tool>`): what the action was done to. */
  target: string;
  /** The target's name when it has one (never a secret: a name the organisation chose). */
  targetName?: string;
  outcome: 'success' | 'failure' | 'denied';
  ip: string;
  /** How many events the record stands for: 1, or more for an aggregated refusal (one per org, action, address and minute). */
  count: number;
  /** When the record stops being listed and may be deleted (time + KEYWARD_AUDIT_RETENTION_DAYS). */
  expireAt: number;
}

export interface AuditStore {
  appendAudit(records: AuditRecord[]): Promise<void>;
  /**
   * Aggregated refusals: a record whose id is new is stored as given (the first writer's fields stay), and
   * each record's `count` is added once for `batch` (an id unique to one flush of one instance): a retry of
   * the same batch adds nothing, so a write that landed but timed out never counts twice. A listed record's
   * count is the sum of its batches'. Exact across instances: ids are derived from (org, action, address,
   * minute), and no document is written twice.
   */
  addAuditCounts(batch: string, records: AuditRecord[]): Promise<void>;
  /** Newest first, records expired at `now` left out; `orgId` '' lists the records with no organisation. */
  listAudit(orgId: string, page: PageQuery, now?: number): Promise<Page<AuditRecord> | typeof BAD_CURSOR>;
  /** Deletes up to `limit` records expired at `now`; how many it deleted (0 where the backend expires them itself, Firestore's TTL). */
  deleteExpiredAudit(now: number, limit: number): Promise<number>;
}

/** A stored first response to an `Idempotency-Key`, kept 24 h. */
export interface IdempotencyRecord {
  /** Who may replay it (an org id, or `admin`) + the endpoint + the key. */
  scope: string;
  requestHash: string;
  createdAt: number;
  /** undefined while the first request is still running. */
  response?: { status: number; body: unknown };
}

/** A claim still running after this long was abandoned (its request failed without releasing it): a new one may take it over. */
export const IDEMPOTENCY_CLAIM_STALE_MS = 5 * 60_000;

export interface IdempotencyStore {
  /**
   * Atomically claims `scope` for a new request, or returns the live record that holds it (one older than `expireBefore`,
   * or still running after IDEMPOTENCY_CLAIM_STALE_MS, is replaced). A claim whose write landed but was not acknowledged
   * is read back: it is still this call's.
   */
  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord>;
  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void>;
  /** Frees a claim whose request failed, so the key can be retried. */
  releaseIdempotency(scope: string): Promise<void>;
}

/** A deployment secret, wrapped by the KeyWrapper: the same on every instance, never stored in plaintext. */
export interface StoredSecret {
  name: string;
  wrapped: Buffer;
  kekId: string;
  createdAt: number;
}

export interface SecretStore {
  /** Stores `secret` unless one of that name exists; returns the one stored (the first writer's, on every instance). */
  createSecretIfAbsent(secret: StoredSecret): Promise<StoredSecret>;
  getSecret(name: string): Promise<StoredSecret | undefined>;
  /** `keys rewrap`: swaps the wrapped value only if it is still `expectedWrapped`. */
  rewrapSecret(name: string, expectedWrapped: Buffer, wrapped: Buffer, kekId: string): Promise<boolean>;
}

/**
 * A trust policy: which workload identities (OIDC tokens of `issuer` for `audience` whose `sub`
 * matches `subject`, exact or `prefix*`, and whose `claims` hold every listed value) may exchange
 * their token for a proxy token of `credentialId`, with `ttl` and the token scopes as the API takes
 * them (checked by parseScopes at creation and again at every exchange).
 */
export interface TrustPolicyRecord {
  id: string;
  orgId: string;
  issuer: string;
  audience: string;
  subject: string;
  claims: Record<string, string | number | boolean>;
  credentialId: string;
  ttl: string;
  scopes: Record<string, unknown>;
  createdAt: number;
  /** When the policy ends (its creator's own expiry: authority never outlives its source); null: not before deletion. */
  expiresAt: number | null;
}

export interface TrustPolicyStore {
  createTrustPolicy(record: TrustPolicyRecord): Promise<void>;
  getTrustPolicy(orgId: string, id: string): Promise<TrustPolicyRecord | undefined>;
  listTrustPolicies(orgId: string, page: PageQuery): Promise<Page<TrustPolicyRecord> | typeof BAD_CURSOR>;
  deleteTrustPolicy(orgId: string, id: string): Promise<boolean>;
  /** A policy by id alone, whatever its organisation (an exchange naming `policy_id`). */
  findTrustPolicy(id: string): Promise<TrustPolicyRecord | undefined>;
  /** Every organisation's policies for this issuer and audience, oldest first (created_at, then id): what an exchange matches. */
  findTrustPolicies(issuer: string, audience: string): Promise<TrustPolicyRecord[]>;
}

export interface StoreLifecycle {
  readonly kind: string;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export { MEMBER_ROLES, type MemberRecord, type MemberRole, type PeopleStore, type SessionKind, type SessionRecord, type SsoConfigRecord } from './people-port.js';
import type { PeopleStore } from './people-port.js';
export type { OAuthConnectionRecord, OAuthConnectionState, OAuthConnectionStore } from './oauth-port.js';
import type { OAuthConnectionStore } from './oauth-port.js';

export type Store = OrgStore & AdminKeyStore & CredentialStore & TokenStore & LeaseStore & UsageStore & ChangeFeed & AuditStore & IdempotencyStore & SecretStore & StoreLifecycle
  & TrustPolicyStore & PoolStore & PeopleStore & McpGrantStore & OAuthConnectionStore & TeamStore;
