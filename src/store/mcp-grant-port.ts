/**
 * The MCP authorization port (re-exported by ports.ts): what Keyward as the OAuth authorization server of its MCP
 * routes keeps (src/identity/mcp-auth/). Adapters: sqlite/mcp-grants.ts, firestore/mcp-grants.ts; both pass
 * the store contract's part test/store/contract-mcp-grants.ts.
 *
 * A client registered dynamically (RFC 7591) is a record; a client known by its metadata document's URL is not
 * stored (its document is fetched). A grant is one authorization and everything issued from it: the code (until
 * it is redeemed), then the refresh token family and the access tokens minted from it. Only hashes of the code
 * and the refresh tokens are kept. A grant changes only by compare-and-set on its `version`: of two instances
 * redeeming one code or rotating one refresh token, one wins and the other sees the winner's record.
 *
 * Nothing here outlives its use: a grant is deleted once it can no longer be used (mcpGrantEnd), a registered
 * client once it has gone unused for a while with no grant naming it (the sweep, identity/mcp-auth/sweep.ts).
 */

/** A dynamically registered client (`mcpc_…`): a public client (no secret), known by its redirect URIs. */
export interface McpClientRecord {
  id: string;
  name: string;
  redirectUris: string[];
  createdAt: number;
  /** The last time a person was asked to consent to it (absent: never since it was registered). */
  lastUsedAt?: number;
}

/** `consent`: signed in, the consent page shown (its form's secret is `codeHash`); `code`: consented, the code issued; `active`: redeemed. */
export type McpGrantState = 'consent' | 'code' | 'active' | 'revoked';

/** An access token minted from a grant: the proxy token's id, and when it ends (an ended one needs no revocation). */
export interface McpIssuedToken {
  id: string;
  expiresAt: number;
}

export interface McpGrantRecord {
  /** `mcpg_…`: also inside the code and the refresh tokens, so they are found by id, then compared by hash. */
  id: string;
  orgId: string;
  /** The MCP credential the tokens are for, and its resource URL (the tokens' audience). */
  credentialId: string;
  resource: string;
  /** A registered client's id or a client metadata document's URL. */
  clientId: string;
  /** Who consented: a member's `usr_` id, else the org token's `otk_` or the admin key's `akey_` id. */
  principal: string;
  /** The consented tools (the access tokens' `tools` scope); while `consent`, the tools the page offered. */
  tools: string[];
  state: McpGrantState;
  codeHash: string;
  /** The code's redirect_uri and S256 challenge, checked when it is redeemed. */
  redirectUri: string;
  codeChallenge: string;
  codeExpiresAt: number;
  /** The live refresh token's hash (null before the code is redeemed and once revoked). */
  refreshHash: string | null;
  /** Earlier refresh tokens' hashes, newest first (bounded): presenting one again revokes the grant. */
  usedRefreshHashes: string[];
  /** Access tokens minted from it that may still be live. */
  issued: McpIssuedToken[];
  createdAt: number;
  /** When the grant (its refresh tokens) ends: never after the principal's own end. */
  expiresAt: number;
  version: number;
}

/**
 * When a grant can no longer be used, after which it is deleted: an unredeemed one when its code (or consent page)
 * expires, an active one when its refresh tokens end (its access tokens never outlive it), a revoked one when the
 * access tokens it issued would have ended anyway.
 */
export function mcpGrantEnd(g: McpGrantRecord): number {
  if (g.state === 'active') return g.expiresAt;
  if (g.state === 'revoked') return g.issued.reduce((end, t) => Math.max(end, t.expiresAt), 0);
  return Math.min(g.codeExpiresAt, g.expiresAt);
}

export interface McpGrantStore {
  createMcpClient(record: McpClientRecord): Promise<void>;
  getMcpClient(id: string): Promise<McpClientRecord | undefined>;
  createMcpGrant(record: McpGrantRecord): Promise<void>;
  getMcpGrant(id: string): Promise<McpGrantRecord | undefined>;
  /** Atomic: stores `next` (whose version is `expectedVersion + 1`) only while the stored version is `expectedVersion`. */
  updateMcpGrant(next: McpGrantRecord, expectedVersion: number): Promise<boolean>;
  /** Every grant a principal consented to (revoked ones included): what revoking the principal walks. */
  listMcpGrantsByPrincipal(principal: string): Promise<McpGrantRecord[]>;
  /** Records that a registered client was used at `at` (a consent asked for it); an unknown id changes nothing. */
  touchMcpClient(id: string, at: number): Promise<void>;
  /** Deletes up to `limit` grants whose end (mcpGrantEnd) is at or before `now`; how many. */
  purgeMcpGrants(now: number, limit: number): Promise<number>;
  /**
   * Deletes up to `limit` registered clients last used (else registered) before `unusedBefore` that no stored
   * grant names; how many.
   */
  purgeMcpClients(unusedBefore: number, limit: number): Promise<number>;
}
