/**
 * The SQLite store's proxy tokens (known by hash; scopes as JSON). A token is
 * created only while its credential (or, pooled, its pool) exists, checked and
 * inserted under one write lock; the deletion of either removes its tokens in
 * the same lock as the record itself, so none outlives it. A revocation deletes the token (its hash
 * leaves the lookup path), keeps its record in `revoked_tokens` and announces
 * it on the change feed, in one transaction. `created_by` names who minted it
 * (a minter lists only its own); `name_key` is the folded name prefixes match.
 */
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, isPoolId, type NamedPageQuery, type Page, type RevokedTokenRecord, type TokenRecord, type TokenStore } from '../ports.js';
import { publishChange } from './changes.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

/** The fields a live token and its revocation record share. */
const common = (r: Row): Omit<TokenRecord, 'tokenHash'> => ({
  id: r.id as string, orgId: r.org_id as string, credentialId: r.credential_id as string,
  scopes: JSON.parse(r.scopes as string), createdAt: r.created_at as number, expiresAt: r.expires_at as number,
  ...(r.created_by != null ? { createdBy: r.created_by as string } : {}),
  ...(r.name != null ? { name: r.name as string } : {}),
  ...(r.team_id != null ? { teamId: r.team_id as string } : {}),
  ...(r.member_id != null ? { memberId: r.member_id as string } : {}),
});

const toToken = (r: Row): TokenRecord => ({ ...common(r), tokenHash: r.token_hash as string });
const toRevoked = (r: Row): RevokedTokenRecord => ({ ...common(r), revokedAt: r.revoked_at as number, revokedBy: r.revoked_by as string });

export class SqliteTokens implements TokenStore {
  constructor(private readonly db: SqliteDb) {}

  createToken(t: TokenRecord): Promise<'created' | 'no_credential'> {
    return this.db.guard(() => this.db.tx(() => {
      const bound = isPoolId(t.credentialId) ? 'SELECT 1 AS ok FROM pools WHERE org_id = ? AND id = ?' : 'SELECT 1 AS ok FROM credentials WHERE org_id = ? AND id = ?';
      if (!this.db.one(bound, t.orgId, t.credentialId)) return 'no_credential' as const;
      this.db.run(
        'INSERT INTO tokens (id, org_id, credential_id, token_hash, scopes, created_at, expires_at, created_by, name, name_key, team_id, member_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        t.id, t.orgId, t.credentialId, t.tokenHash, JSON.stringify(t.scopes), t.createdAt, t.expiresAt, t.createdBy ?? null,
        t.name ?? null, t.name === undefined ? null : nameKey(t.name), t.teamId ?? null, t.memberId ?? null,
      );
      return 'created' as const;
    }));
  }

  findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM tokens WHERE token_hash = ?', tokenHash);
      return r && toToken(r);
    });
  }

  getToken(orgId: string, id: string): Promise<TokenRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM tokens WHERE org_id = ? AND id = ?', orgId, id);
      return r && toToken(r);
    });
  }

  getRevokedToken(orgId: string, id: string): Promise<RevokedTokenRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM revoked_tokens WHERE org_id = ? AND id = ?', orgId, id);
      return r && toRevoked(r);
    });
  }

  listTokens(orgId: string, q: NamedPageQuery, createdBy?: string): Promise<Page<TokenRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'tokens', orgId, q, toToken, { ...(createdBy !== undefined ? { createdBy } : {}) }));
  }

  revokeToken(orgId: string, id: string, revokedAt: number, revokedBy: string): Promise<RevokedTokenRecord | undefined> {
    return this.db.guard(() => this.db.tx(() => {
      const r = this.db.one('SELECT * FROM tokens WHERE org_id = ? AND id = ?', orgId, id);
      if (!r) return undefined;
      this.db.run('DELETE FROM tokens WHERE id = ?', id);
      this.db.run(
        `INSERT INTO revoked_tokens (id, org_id, credential_id, scopes, created_at, expires_at, created_by, name, name_key, revoked_at, revoked_by, team_id, member_id)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        id, orgId, r.credential_id!, r.scopes!, r.created_at!, r.expires_at!, r.created_by ?? null, r.name ?? null, r.name_key ?? null, revokedAt, revokedBy,
        r.team_id ?? null, r.member_id ?? null,
      );
      publishChange(this.db, 'token', id);
      return toRevoked({ ...r, revoked_at: revokedAt, revoked_by: revokedBy });
    }));
  }

  listRevokedTokens(orgId: string, q: NamedPageQuery, createdBy?: string): Promise<Page<RevokedTokenRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'revoked_tokens', orgId, q, toRevoked, { orderBy: 'revoked_at', ...(createdBy !== undefined ? { createdBy } : {}) }));
  }

  setTokenName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(() => this.db.run(
      'UPDATE tokens SET name = ?, name_key = ? WHERE org_id = ? AND id = ?', name, name === null ? null : nameKey(name), orgId, id,
    ) > 0);
  }
}
