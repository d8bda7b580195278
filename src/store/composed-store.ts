/**
 * One adapter as the whole `Store`: a thin composer over one object per port.
 * Each adapter (sqlite-store.ts, firestore-store.ts) builds its port objects
 * over one shared connection and hands them here; every port method is passed
 * through unchanged, so the port objects alone define what the store does.
 * The composer is what the container registers for `Store` and for every port
 * symbol (tests replace a method on it to simulate an outage, so services must
 * reach the ports through it), and what tests and the CLI construct.
 */
import type {
  AdminKeyRecord, AdminKeyStore, BreakdownScope, AuditRecord, AuditStore, Change, ChangeFeed, CredentialRecord, CredentialStore, HolderState, HolderWrite, IdempotencyRecord,
  IdempotencyStore, LeaseStore, NamedPageQuery, OrgRecord, OrgStore, OrgTokenRecord, PageQuery, SealedKey, SecretStore, Store, StoredSecret, TokenRecord, TokenStore,
  UsageScope, UsageShard, UsageStore,
} from './ports.js';
import type { MemberRecord, PeopleStore, SessionRecord, SsoConfigRecord } from './people-port.js';
import type { McpClientRecord, McpGrantRecord, McpGrantStore, PoolRecord, PoolStore, PoolUpdate, TrustPolicyRecord, TrustPolicyStore } from './ports.js';
import type { OAuthConnectionRecord, OAuthConnectionStore } from './oauth-port.js';
import type { TeamRecord, TeamStore, TeamUpdate } from './team-port.js';

/** The port objects an adapter is made of. */
export interface StorePorts {
  orgs: OrgStore;
  adminKeys: AdminKeyStore;
  credentials: CredentialStore;
  tokens: TokenStore;
  leases: LeaseStore;
  usage: UsageStore;
  changes: ChangeFeed;
  audit: AuditStore;
  idempotency: IdempotencyStore;
  secrets: SecretStore;
  trustPolicies: TrustPolicyStore;
  pools: PoolStore;
  people: PeopleStore;
  mcpGrants: McpGrantStore;
  oauthConnections: OAuthConnectionStore;
  teams: TeamStore;
}

export abstract class ComposedStore<P extends StorePorts = StorePorts> implements Store {
  abstract readonly kind: string;

  protected constructor(protected readonly ports: P) {}

  abstract ping(): Promise<void>;
  abstract close(): Promise<void>;

  // ---- organisations (OrgStore) ---------------------------------------------
  createOrg(org: OrgRecord, token: OrgTokenRecord) { return this.ports.orgs.createOrg(org, token); }
  getOrg(id: string) { return this.ports.orgs.getOrg(id); }
  listOrgs(page: PageQuery) { return this.ports.orgs.listOrgs(page); }
  findOrgToken(tokenHash: string) { return this.ports.orgs.findOrgToken(tokenHash); }
  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string) { return this.ports.orgs.rotateOrgToken(token, retireAt, callerId); }
  setOrgSpendLimit(id: string, micros: number | null) { return this.ports.orgs.setOrgSpendLimit(id, micros); }

  // ---- admin keys (AdminKeyStore) -------------------------------------------
  createAdminKey(record: AdminKeyRecord) { return this.ports.adminKeys.createAdminKey(record); }
  findAdminKeyByHash(tokenHash: string) { return this.ports.adminKeys.findAdminKeyByHash(tokenHash); }
  getAdminKey(orgId: string, id: string) { return this.ports.adminKeys.getAdminKey(orgId, id); }
  listAdminKeys(orgId: string, page: NamedPageQuery) { return this.ports.adminKeys.listAdminKeys(orgId, page); }
  setAdminKeyName(orgId: string, id: string, name: string | null) { return this.ports.adminKeys.setAdminKeyName(orgId, id, name); }
  deleteAdminKey(orgId: string, id: string) { return this.ports.adminKeys.deleteAdminKey(orgId, id); }

  // ---- credentials (CredentialStore) ----------------------------------------
  createCredential(record: CredentialRecord, limit: number) { return this.ports.credentials.createCredential(record, limit); }
  getCredential(orgId: string, id: string) { return this.ports.credentials.getCredential(orgId, id); }
  listCredentials(orgId: string, page: NamedPageQuery) { return this.ports.credentials.listCredentials(orgId, page); }
  setCredentialName(orgId: string, id: string, name: string | null) { return this.ports.credentials.setCredentialName(orgId, id, name); }
  countCredentials(orgId: string) { return this.ports.credentials.countCredentials(orgId); }
  deleteCredential(orgId: string, id: string) { return this.ports.credentials.deleteCredential(orgId, id); }
  replaceCredentialKey(orgId: string, id: string, sealed: SealedKey, keyHint: string, updatedAt: number) {
    return this.ports.credentials.replaceCredentialKey(orgId, id, sealed, keyHint, updatedAt);
  }
  allCredentials() { return this.ports.credentials.allCredentials(); }
  rewrapCredential(id: string, expectedWrappedDek: Buffer, wrappedDek: Buffer, kekId: string) {
    return this.ports.credentials.rewrapCredential(id, expectedWrappedDek, wrappedDek, kekId);
  }

  // ---- proxy tokens (TokenStore) --------------------------------------------
  createToken(record: TokenRecord) { return this.ports.tokens.createToken(record); }
  findTokenByHash(tokenHash: string) { return this.ports.tokens.findTokenByHash(tokenHash); }
  getToken(orgId: string, id: string) { return this.ports.tokens.getToken(orgId, id); }
  listTokens(orgId: string, page: NamedPageQuery, createdBy?: string) { return this.ports.tokens.listTokens(orgId, page, createdBy); }
  revokeToken(orgId: string, id: string, revokedAt: number, revokedBy: string) { return this.ports.tokens.revokeToken(orgId, id, revokedAt, revokedBy); }
  listRevokedTokens(orgId: string, page: NamedPageQuery, createdBy?: string) { return this.ports.tokens.listRevokedTokens(orgId, page, createdBy); }
  getRevokedToken(orgId: string, id: string) { return this.ports.tokens.getRevokedToken(orgId, id); }
  setTokenName(orgId: string, id: string, name: string | null) { return this.ports.tokens.setTokenName(orgId, id, name); }

  // ---- leases (LeaseStore) and usage (UsageStore) ---------------------------
  writeHolder(key: string, state: HolderState, write: HolderWrite) { return this.ports.leases.writeHolder(key, state, write); }
  readHolder(key: string, holder: string) { return this.ports.leases.readHolder(key, holder); }
  reclaimExpired(key: string, now: number) { return this.ports.leases.reclaimExpired(key, now); }
  leaseLedger(key: string, now: number) { return this.ports.leases.leaseLedger(key, now); }
  chargeLease(key: string, units: number) { return this.ports.leases.chargeLease(key, units); }
  putUsageShards(writer: string, seq: number, shards: UsageShard[]) { return this.ports.usage.putUsageShards(writer, seq, shards); }
  getUsageShards(writer: string, counters: Array<Pick<UsageShard, 'scope' | 'id' | 'period'>>) { return this.ports.usage.getUsageShards(writer, counters); }
  getUsage(scope: UsageScope, id: string, period?: string) { return this.ports.usage.getUsage(scope, id, period); }
  listUsage(scope: UsageScope, id: string, from: string, to: string) { return this.ports.usage.listUsage(scope, id, from, to); }
  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string) { return this.ports.usage.listBreakdown(scope, orgId, from, to); }

  // ---- change feed (ChangeFeed) ---------------------------------------------
  watch(listener: (change: Change) => void) { return this.ports.changes.watch(listener); }
  isLive() { return this.ports.changes.isLive(); }

  // ---- audit (AuditStore) ---------------------------------------------------
  appendAudit(records: AuditRecord[]) { return this.ports.audit.appendAudit(records); }
  addAuditCounts(batch: string, records: AuditRecord[]) { return this.ports.audit.addAuditCounts(batch, records); }
  listAudit(orgId: string, page: PageQuery, now?: number) { return this.ports.audit.listAudit(orgId, page, now); }
  deleteExpiredAudit(now: number, limit: number) { return this.ports.audit.deleteExpiredAudit(now, limit); }

  // ---- Idempotency-Key records (IdempotencyStore) ---------------------------
  claimIdempotency(record: IdempotencyRecord, expireBefore: number) { return this.ports.idempotency.claimIdempotency(record, expireBefore); }
  completeIdempotency(scope: string, response: { status: number; body: unknown }) { return this.ports.idempotency.completeIdempotency(scope, response); }
  releaseIdempotency(scope: string) { return this.ports.idempotency.releaseIdempotency(scope); }

  // ---- deployment secrets (SecretStore) -------------------------------------
  createSecretIfAbsent(secret: StoredSecret) { return this.ports.secrets.createSecretIfAbsent(secret); }
  getSecret(name: string) { return this.ports.secrets.getSecret(name); }
  rewrapSecret(name: string, expectedWrapped: Buffer, wrapped: Buffer, kekId: string) { return this.ports.secrets.rewrapSecret(name, expectedWrapped, wrapped, kekId); }

  // ---- trust policies (TrustPolicyStore) ------------------------------------
  createTrustPolicy(record: TrustPolicyRecord) { return this.ports.trustPolicies.createTrustPolicy(record); }
  getTrustPolicy(orgId: string, id: string) { return this.ports.trustPolicies.getTrustPolicy(orgId, id); }
  listTrustPolicies(orgId: string, page: PageQuery) { return this.ports.trustPolicies.listTrustPolicies(orgId, page); }
  deleteTrustPolicy(orgId: string, id: string) { return this.ports.trustPolicies.deleteTrustPolicy(orgId, id); }
  findTrustPolicy(id: string) { return this.ports.trustPolicies.findTrustPolicy(id); }
  findTrustPolicies(issuer: string, audience: string) { return this.ports.trustPolicies.findTrustPolicies(issuer, audience); }

  // ---- pools (PoolStore) ----------------------------------------------------
  createPool(record: PoolRecord) { return this.ports.pools.createPool(record); }
  getPool(orgId: string, id: string) { return this.ports.pools.getPool(orgId, id); }
  listPools(orgId: string, page: NamedPageQuery) { return this.ports.pools.listPools(orgId, page); }
  updatePool(orgId: string, id: string, update: PoolUpdate) { return this.ports.pools.updatePool(orgId, id, update); }
  deletePool(orgId: string, id: string) { return this.ports.pools.deletePool(orgId, id); }
  coolPoolMember(orgId: string, id: string, credentialId: string, until: number) { return this.ports.pools.coolPoolMember(orgId, id, credentialId, until); }

  // ---- people (PeopleStore) -------------------------------------------------
  putSsoConfig(record: SsoConfigRecord) { return this.ports.people.putSsoConfig(record); }
  getSsoConfig(orgId: string) { return this.ports.people.getSsoConfig(orgId); }
  signInMember(member: MemberRecord) { return this.ports.people.signInMember(member); }
  getMember(orgId: string, id: string) { return this.ports.people.getMember(orgId, id); }
  listMembers(orgId: string, page: PageQuery) { return this.ports.people.listMembers(orgId, page); }
  setMemberBudget(orgId: string, id: string, micros: number | null) { return this.ports.people.setMemberBudget(orgId, id, micros); }
  deleteMember(orgId: string, id: string) { return this.ports.people.deleteMember(orgId, id); }
  createSession(record: SessionRecord) { return this.ports.people.createSession(record); }
  findSession(hash: string) { return this.ports.people.findSession(hash); }
  deleteSession(hash: string) { return this.ports.people.deleteSession(hash); }
  memberTokenIds(orgId: string, memberId: string) { return this.ports.people.memberTokenIds(orgId, memberId); }
  // ---- MCP authorization (McpGrantStore) ------------------------------------
  createMcpClient(record: McpClientRecord) { return this.ports.mcpGrants.createMcpClient(record); }
  getMcpClient(id: string) { return this.ports.mcpGrants.getMcpClient(id); }
  createMcpGrant(record: McpGrantRecord) { return this.ports.mcpGrants.createMcpGrant(record); }
  getMcpGrant(id: string) { return this.ports.mcpGrants.getMcpGrant(id); }
  updateMcpGrant(next: McpGrantRecord, expectedVersion: number) { return this.ports.mcpGrants.updateMcpGrant(next, expectedVersion); }
  listMcpGrantsByPrincipal(principal: string) { return this.ports.mcpGrants.listMcpGrantsByPrincipal(principal); }
  touchMcpClient(id: string, at: number) { return this.ports.mcpGrants.touchMcpClient(id, at); }
  purgeMcpGrants(now: number, limit: number) { return this.ports.mcpGrants.purgeMcpGrants(now, limit); }
  purgeMcpClients(unusedBefore: number, limit: number) { return this.ports.mcpGrants.purgeMcpClients(unusedBefore, limit); }
  // ---- upstream OAuth connections (OAuthConnectionStore) --------------------
  putOAuthConnection(record: OAuthConnectionRecord) { return this.ports.oauthConnections.putOAuthConnection(record); }
  getOAuthConnection(orgId: string, credentialId: string, memberId: string) { return this.ports.oauthConnections.getOAuthConnection(orgId, credentialId, memberId); }
  replaceOAuthTokens(orgId: string, credentialId: string, memberId: string, expected: Buffer, sealed: SealedKey, updatedAt: number) {
    return this.ports.oauthConnections.replaceOAuthTokens(orgId, credentialId, memberId, expected, sealed, updatedAt);
  }
  markOAuthReconnect(orgId: string, credentialId: string, memberId: string, expected: Buffer, updatedAt: number) {
    return this.ports.oauthConnections.markOAuthReconnect(orgId, credentialId, memberId, expected, updatedAt);
  }
  countOAuthConnections(orgId: string, credentialId: string) { return this.ports.oauthConnections.countOAuthConnections(orgId, credentialId); }
  deleteOAuthConnections(orgId: string, credentialId: string, memberId?: string) { return this.ports.oauthConnections.deleteOAuthConnections(orgId, credentialId, memberId); }
  // ---- teams and member budgets (TeamStore) ---------------------------------
  createTeam(record: TeamRecord) { return this.ports.teams.createTeam(record); }
  getTeam(orgId: string, id: string) { return this.ports.teams.getTeam(orgId, id); }
  listTeams(orgId: string, page: NamedPageQuery) { return this.ports.teams.listTeams(orgId, page); }
  updateTeam(orgId: string, id: string, update: TeamUpdate) { return this.ports.teams.updateTeam(orgId, id, update); }
  deleteTeam(orgId: string, id: string) { return this.ports.teams.deleteTeam(orgId, id); }
  putMemberBudget(orgId: string, memberId: string, micros: number | null) { return this.ports.teams.putMemberBudget(orgId, memberId, micros); }
  getMemberBudget(orgId: string, memberId: string) { return this.ports.teams.getMemberBudget(orgId, memberId); }
  listMemberBudgets(orgId: string) { return this.ports.teams.listMemberBudgets(orgId); }
}
