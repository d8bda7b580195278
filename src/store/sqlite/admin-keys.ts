/**
 * The SQLite store's admin keys (`admin_keys`): looked up by the SHA-256 of
 * the key, listed newest first per organisation, deleted once. Nothing caches
 * an admin key (each admin request reads it), so no change is published.
 */
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, type AdminKeyRecord, type AdminKeyStore, type NamedPageQuery, type Page } from '../ports.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

const toAdminKey = (r: Row): AdminKeyRecord => ({
  id: r.id as string,
  orgId: r.org_id as string,
  // '' is no name: the column was NOT NULL while names were required.
  ...(r.name ? { name: r.name as string } : {}),
  role: r.role as AdminKeyRecord['role'],
  ...(r.credential_ids != null ? { credentialIds: JSON.parse(r.credential_ids as string) as string[] } : {}),
  tokenHash: r.token_hash as string,
  createdAt: r.created_at as number,
  expiresAt: (r.expires_at as number | null) ?? null,
  createdBy: r.created_by as string,
});

export class SqliteAdminKeys implements AdminKeyStore {
  constructor(private readonly db: SqliteDb) {}

  createAdminKey(k: AdminKeyRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        'INSERT INTO admin_keys (id, org_id, name, name_key, role, credential_ids, token_hash, created_at, expires_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        k.id, k.orgId, k.name ?? '', k.name === undefined ? null : nameKey(k.name), k.role, k.credentialIds ? JSON.stringify(k.credentialIds) : null,
        k.tokenHash, k.createdAt, k.expiresAt, k.createdBy,
      );
    });
  }

  findAdminKeyByHash(tokenHash: string): Promise<AdminKeyRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM admin_keys WHERE token_hash = ?', tokenHash);
      return r && toAdminKey(r);
    });
  }

  getAdminKey(orgId: string, id: string): Promise<AdminKeyRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM admin_keys WHERE org_id = ? AND id = ?', orgId, id);
      return r && toAdminKey(r);
    });
  }

  listAdminKeys(orgId: string, q: NamedPageQuery): Promise<Page<AdminKeyRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'admin_keys', orgId, q, toAdminKey));
  }

  setAdminKeyName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(() => this.db.run(
      'UPDATE admin_keys SET name = ?, name_key = ? WHERE org_id = ? AND id = ?', name ?? '', name === null ? null : nameKey(name), orgId, id,
    ) > 0);
  }

  deleteAdminKey(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(() => this.db.run('DELETE FROM admin_keys WHERE org_id = ? AND id = ?', orgId, id) > 0);
  }
}
