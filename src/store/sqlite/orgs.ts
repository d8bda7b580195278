/**
 * The SQLite store's organisations and their bearer tokens (`orgs`,
 * `org_tokens`). An org is created with its first token in one transaction. A
 * rotation checks the caller's token inside its transaction (a token already
 * retiring, or gone, rotates nothing), retires every other token of the org,
 * drops those expired over a day, and announces the org on the change feed,
 * as a change of its spend limit does.
 */
import { BAD_CURSOR, type OrgRecord, type OrgStore, type OrgTokenRecord, type Page, type PageQuery } from '../ports.js';
import { publishChange } from './changes.js';
import type { Row, SqliteDb } from './db.js';

/** Retired org tokens are deleted once they have been expired this long. */
const DROP_EXPIRED_AFTER_MS = 86_400_000;

const toOrgToken = (r: Row): OrgTokenRecord => ({
  id: r.id as string, orgId: r.org_id as string, tokenHash: r.token_hash as string, createdAt: r.created_at as number, expiresAt: (r.expires_at as number | null) ?? null,
});

const toOrg = (r: Row): OrgRecord => {
  const limit = r.spend_limit_micros as number | null;
  // Absent when unset: records of orgs without a cap look as they always did.
  return { id: r.id as string, name: r.name as string, createdAt: r.created_at as number, ...(limit !== null ? { spendLimitMicros: limit } : {}) };
};

const INSERT_TOKEN = 'INSERT INTO org_tokens (id, org_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)';

export class SqliteOrgs implements OrgStore {
  constructor(private readonly db: SqliteDb) {}

  createOrg(org: OrgRecord, token: OrgTokenRecord): Promise<void> {
    return this.db.guard(() => this.db.tx(() => {
      this.db.run('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)', org.id, org.name, org.createdAt);
      this.db.run(INSERT_TOKEN, token.id, token.orgId, token.tokenHash, token.createdAt, token.expiresAt);
    }));
  }

  getOrg(id: string): Promise<OrgRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM orgs WHERE id = ?', id);
      return r && toOrg(r);
    });
  }

  /** Newest first; an operator's list (a deployment holds few organisations, so no index on created_at). */
  listOrgs(q: PageQuery): Promise<Page<OrgRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => {
      let rows: Row[];
      if (q.startingAfter !== undefined) {
        const cursor = this.db.one('SELECT created_at AS t, id FROM orgs WHERE id = ?', q.startingAfter);
        if (!cursor) return BAD_CURSOR;
        rows = this.db.all('SELECT * FROM orgs WHERE created_at < ? OR (created_at = ? AND id < ?) ORDER BY created_at DESC, id DESC LIMIT ?',
          cursor.t!, cursor.t!, cursor.id!, q.limit + 1);
      } else {
        rows = this.db.all('SELECT * FROM orgs ORDER BY created_at DESC, id DESC LIMIT ?', q.limit + 1);
      }
      return { data: rows.slice(0, q.limit).map(toOrg), hasMore: rows.length > q.limit };
    });
  }

  setOrgSpendLimit(id: string, micros: number | null): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('UPDATE orgs SET spend_limit_micros = ? WHERE id = ?', micros, id) === 0) return false;
      publishChange(this.db, 'org', id);
      return true;
    }));
  }

  findOrgToken(tokenHash: string): Promise<OrgTokenRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM org_tokens WHERE token_hash = ?', tokenHash);
      return r && toOrgToken(r);
    });
  }

  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string): Promise<'rotated' | 'retiring'> {
    return this.db.guard(() => this.db.tx(() => {
      const caller = this.db.one('SELECT expires_at FROM org_tokens WHERE id = ? AND org_id = ?', callerId, token.orgId);
      if (!caller || caller.expires_at !== null) return 'retiring' as const;
      this.db.run('UPDATE org_tokens SET expires_at = ? WHERE org_id = ? AND (expires_at IS NULL OR expires_at > ?)', retireAt, token.orgId, retireAt);
      this.db.run(INSERT_TOKEN, token.id, token.orgId, token.tokenHash, token.createdAt, token.expiresAt);
      this.db.run('DELETE FROM org_tokens WHERE org_id = ? AND expires_at IS NOT NULL AND expires_at < ?', token.orgId, token.createdAt - DROP_EXPIRED_AFTER_MS);
      publishChange(this.db, 'org', token.orgId);
      return 'rotated' as const;
    }));
  }
}
