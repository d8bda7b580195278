/**
 * The SQLite store's upstream OAuth connections: one row per (credential, member), the tokens as a
 * sealed blob (wrapped DEK, nonce, ciphertext) like a credential's key. Its table is created here
 * (createSchema calls `createOAuthConnectionTable`). A refresh's write and a refusal's mark are
 * compare-and-swaps on the ciphertext read before the SaaS was asked.
 */
import { publishChange } from './changes.js';
import type { OAuthConnectionRecord, OAuthConnectionState, OAuthConnectionStore } from '../oauth-port.js';
import type { SealedKey } from '../sealed-key.js';
import type { Row, SqliteDb } from './db.js';

export function createOAuthConnectionTable(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS oauth_connections (
  org_id TEXT NOT NULL, credential_id TEXT NOT NULL, member_id TEXT NOT NULL, state TEXT NOT NULL,
  wrapped_dek BLOB NOT NULL, kek_id TEXT NOT NULL, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL,
  connected_by TEXT NOT NULL, connected_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  PRIMARY KEY (org_id, credential_id, member_id)
) STRICT;
`);
}

const buf = (v: unknown): Buffer => Buffer.from(v as Uint8Array);

const toConnection = (r: Row): OAuthConnectionRecord => ({
  orgId: r.org_id as string, credentialId: r.credential_id as string, memberId: r.member_id as string, state: r.state as OAuthConnectionState,
  wrappedDek: buf(r.wrapped_dek), kekId: r.kek_id as string, nonce: buf(r.nonce), ciphertext: buf(r.ciphertext),
  connectedBy: r.connected_by as string, connectedAt: r.connected_at as number, updatedAt: r.updated_at as number,
});

export class SqliteOAuthConnections implements OAuthConnectionStore {
  constructor(private readonly db: SqliteDb) {}

  putOAuthConnection(c: OAuthConnectionRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        `INSERT OR REPLACE INTO oauth_connections (org_id, credential_id, member_id, state, wrapped_dek, kek_id, nonce, ciphertext, connected_by, connected_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.orgId, c.credentialId, c.memberId, c.state, c.wrappedDek, c.kekId, c.nonce, c.ciphertext, c.connectedBy, c.connectedAt, c.updatedAt,
      );
    });
  }

  getOAuthConnection(orgId: string, credentialId: string, memberId: string): Promise<OAuthConnectionRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM oauth_connections WHERE org_id = ? AND credential_id = ? AND member_id = ?', orgId, credentialId, memberId);
      return r && toConnection(r);
    });
  }

  replaceOAuthTokens(orgId: string, credentialId: string, memberId: string, expected: Buffer, s: SealedKey, updatedAt: number): Promise<boolean> {
    return this.db.guard(() => this.db.run(
      `UPDATE oauth_connections SET wrapped_dek = ?, kek_id = ?, nonce = ?, ciphertext = ?, updated_at = ?
       WHERE org_id = ? AND credential_id = ? AND member_id = ? AND ciphertext = ? AND state = 'connected'`,
      s.wrappedDek, s.kekId, s.nonce, s.ciphertext, updatedAt, orgId, credentialId, memberId, expected,
    ) > 0);
  }

  markOAuthReconnect(orgId: string, credentialId: string, memberId: string, expected: Buffer, updatedAt: number): Promise<boolean> {
    return this.db.guard(() => this.db.run(
      `UPDATE oauth_connections SET state = 'reconnect', updated_at = ? WHERE org_id = ? AND credential_id = ? AND member_id = ? AND ciphertext = ?`,
      updatedAt, orgId, credentialId, memberId, expected,
    ) > 0);
  }

  countOAuthConnections(orgId: string, credentialId: string): Promise<Record<OAuthConnectionState, number>> {
    return this.db.guard(() => {
      const counts: Record<OAuthConnectionState, number> = { connected: 0, reconnect: 0 };
      for (const r of this.db.all('SELECT state, COUNT(*) AS n FROM oauth_connections WHERE org_id = ? AND credential_id = ? GROUP BY state', orgId, credentialId)) {
        if (r.state === 'connected' || r.state === 'reconnect') counts[r.state] = r.n as number;
      }
      return counts;
    });
  }

  deleteOAuthConnections(orgId: string, credentialId: string, memberId?: string): Promise<number> {
    return this.db.guard(() => this.db.tx(() => {
      const n = memberId === undefined
        ? this.db.run('DELETE FROM oauth_connections WHERE org_id = ? AND credential_id = ?', orgId, credentialId)
        : this.db.run('DELETE FROM oauth_connections WHERE org_id = ? AND credential_id = ? AND member_id = ?', orgId, credentialId, memberId);
      // Every instance drops the access tokens it holds for the credential (vault/oauth-connections.ts).
      if (n > 0) publishChange(this.db, 'credential', credentialId);
      return n;
    }));
  }
}
