/**
 * The SQLite store's trust policies: one row each, claims and scopes as JSON. Its table is created
 * here (createSchema calls `createTrustPolicyTable`), indexed for the two reads that matter: an
 * organisation's list, newest first, and an exchange's lookup by (issuer, audience), oldest first.
 * `expires_at` (NULL: none) is added to a table made before it. A policy names a credential but
 * does not hold it: a deleted credential leaves the policy in place and every exchange through it
 * is refused (the mint finds no credential).
 */
import { BAD_CURSOR, type Page, type PageQuery, type TrustPolicyRecord, type TrustPolicyStore } from '../ports.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

export function createTrustPolicyTable(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS trust_policies (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, issuer TEXT NOT NULL, audience TEXT NOT NULL, subject TEXT NOT NULL,
  claims TEXT NOT NULL, credential_id TEXT NOT NULL, ttl TEXT NOT NULL, scopes TEXT NOT NULL, created_at INTEGER NOT NULL,
  expires_at INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS trust_policies_org_created ON trust_policies(org_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS trust_policies_match ON trust_policies(issuer, audience, created_at, id);
`);
  // A table made before policies expired: its policies last until deleted (NULL), as they did.
  db.tx(() => {
    if (!db.all('PRAGMA table_info(trust_policies)').some((c) => c.name === 'expires_at')) db.run('ALTER TABLE trust_policies ADD COLUMN expires_at INTEGER');
  });
}

const toPolicy = (r: Row): TrustPolicyRecord => ({
  id: r.id as string, orgId: r.org_id as string, issuer: r.issuer as string, audience: r.audience as string, subject: r.subject as string,
  claims: JSON.parse(r.claims as string), credentialId: r.credential_id as string, ttl: r.ttl as string,
  scopes: JSON.parse(r.scopes as string), createdAt: r.created_at as number, expiresAt: (r.expires_at as number | null) ?? null,
});

export class SqliteTrustPolicies implements TrustPolicyStore {
  constructor(private readonly db: SqliteDb) {}

  createTrustPolicy(p: TrustPolicyRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        'INSERT INTO trust_policies (id, org_id, issuer, audience, subject, claims, credential_id, ttl, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        p.id, p.orgId, p.issuer, p.audience, p.subject, JSON.stringify(p.claims), p.credentialId, p.ttl, JSON.stringify(p.scopes), p.createdAt, p.expiresAt,
      );
    });
  }

  getTrustPolicy(orgId: string, id: string): Promise<TrustPolicyRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM trust_policies WHERE org_id = ? AND id = ?', orgId, id);
      return r && toPolicy(r);
    });
  }

  listTrustPolicies(orgId: string, q: PageQuery): Promise<Page<TrustPolicyRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'trust_policies', orgId, q, toPolicy));
  }

  deleteTrustPolicy(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(() => this.db.run('DELETE FROM trust_policies WHERE org_id = ? AND id = ?', orgId, id) > 0);
  }

  findTrustPolicy(id: string): Promise<TrustPolicyRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM trust_policies WHERE id = ?', id);
      return r && toPolicy(r);
    });
  }

  findTrustPolicies(issuer: string, audience: string): Promise<TrustPolicyRecord[]> {
    return this.db.guard(() => this.db.all('SELECT * FROM trust_policies WHERE issuer = ? AND audience = ? ORDER BY created_at, id', issuer, audience).map(toPolicy));
  }
}
