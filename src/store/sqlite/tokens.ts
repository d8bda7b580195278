/**
 * The SQLite store's proxy tokens (known by hash; scopes as JSON). A token is
 * created only while its credential exists, checked and inserted under one
 * write lock (and the foreign key's ON DELETE CASCADE takes any token a
 * credential's deletion did not see). A revocation announces the token on the
 * change feed in its own transaction. `created_by` names who minted it (a minter lists only its own).
 */
import { BAD_CURSOR, type Page, type PageQuery, type TokenRecord, type TokenStore } from '../ports.js';
import { publishChange } from './changes.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

const toToken = (r: Row): TokenRecord => ({
  id: r.id as string, orgId: r.org_id as string, credentialId: r.credential_id as string, tokenHash: r.token_hash as string,
  scopes: JSON.parse(r.scopes as string), createdAt: r.created_at as number, expiresAt: r.expires_at as number,
  ...(r.created_by != null ? { createdBy: r.created_by as string } : {}),
});

export class SqliteTokens implements TokenStore {
  constructor(private readonly db: SqliteDb) {}

  createToken(t: TokenRecord): Promise<'created' | 'no_credential'> {
    return this.db.guard(() => this.db.tx(() => {
      if (!this.db.one('SELECT 1 AS ok FROM credentials WHERE org_id = ? AND id = ?', t.orgId, t.credentialId)) return 'no_credential' as const;
      this.db.run(
        'INSERT INTO tokens (id, org_id, credential_id, token_hash, scopes, created_at, expires_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
        t.id, t.orgId, t.credentialId, t.tokenHash, JSON.stringify(t.scopes), t.createdAt, t.expiresAt, t.createdBy ?? null,
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

  listTokens(orgId: string, q: PageQuery, createdBy?: string): Promise<Page<TokenRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'tokens', orgId, q, toToken, createdBy));
  }

  deleteToken(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('DELETE FROM tokens WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      publishChange(this.db, 'token', id);
      return true;
    }));
  }
}
