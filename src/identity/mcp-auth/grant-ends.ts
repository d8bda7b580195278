/**
 * How an MCP grant ends, wherever it is ended from: its state becomes `revoked` (compare-and-set on its version,
 * retried on a race), so no refresh token of its family works again, and every access token it issued is revoked.
 * `endPrincipalGrants` ends every grant a principal consented to; the vault's core (boot/core.ts) runs it on each
 * removal of a member or an admin key (PrincipalRemovals), by the server or the CLI alike, whether or not MCP
 * authorization is on at that moment: grants given while it was on outlive a restart without it.
 */
import type { McpGrantRecord, McpGrantStore } from '../../store/ports.js';

/** Revokes one access token (a proxy token bound to the grant's route); one already gone is nothing to do. */
export type RevokeAccess = (orgId: string, tokenId: string, by: string) => Promise<void>;

/** RevokeAccess through the token service: a token already revoked or gone is nothing to do. */
export const accessRevoker = (tokens: { revoke(orgId: string, tokenId: string, by: string): Promise<unknown> }): RevokeAccess =>
  (orgId, tokenId, by) => tokens.revoke(orgId, tokenId, by).then(() => undefined, () => undefined);

export async function endGrant(store: McpGrantStore, revokeAccess: RevokeAccess, grant: McpGrantRecord, by: string): Promise<void> {
  let current: McpGrantRecord | undefined = grant;
  for (let round = 0; current && current.state !== 'revoked' && round < 5; round++) {
    if (await store.updateMcpGrant({ ...current, state: 'revoked', refreshHash: null, version: current.version + 1 }, current.version)) break;
    current = await store.getMcpGrant(grant.id);
  }
  const issued = current?.issued ?? grant.issued;
  await Promise.all(issued.map((t) => revokeAccess(grant.orgId, t.id, by)));
}

/** Ends every live grant `principalId` (`usr_…`, `akey_…`) consented to; how many were live. */
export async function endPrincipalGrants(store: McpGrantStore, revokeAccess: RevokeAccess, principalId: string, by: string): Promise<number> {
  const live = (await store.listMcpGrantsByPrincipal(principalId)).filter((g) => g.state !== 'revoked');
  await Promise.all(live.map((g) => endGrant(store, revokeAccess, g, by)));
  return live.length;
}
