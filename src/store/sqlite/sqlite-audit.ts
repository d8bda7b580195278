/**
 * The SQLite store's audit table: append, aggregated counts (an upsert that adds
 * to `count`, so several processes on one file stay exact), newest-first pages
 * that leave expired records out, and the bounded delete of expired ones.
 */
import { BAD_CURSOR, type AuditRecord, type Page, type PageQuery } from '../ports.js';
import type { Row, Sql } from './sqlite-sql.js';

/** Records written before retention existed are kept this long (the default KEYWARD_AUDIT_RETENTION_DAYS). */
const LEGACY_RETENTION_MS = 400 * 86_400_000;

const INSERT = `INSERT INTO audit (id, time, request_id, org, actor, action, target, outcome, ip, count, expire_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const params = (r: AuditRecord) => [r.id, r.time, r.requestId, r.org, r.actor, r.action, r.target, r.outcome, r.ip, r.count, r.expireAt] as const;

const toAudit = (r: Row): AuditRecord => ({
  id: r.id as string, time: r.time as number, requestId: r.request_id as string, org: r.org as string, actor: r.actor as string,
  action: r.action as string, target: r.target as string, outcome: r.outcome as AuditRecord['outcome'], ip: r.ip as string,
  count: r.count as number, expireAt: r.expire_at as number,
});

export class SqliteAudit {
  constructor(private readonly sql: Sql) {}

  /** Adds `count` and `expire_at` to a table made before they existed (once, under the write lock, so two processes never both alter it). */
  migrate(): void {
    this.sql.tx(() => {
      const columns = new Set(this.sql.all('PRAGMA table_info(audit)').map((c) => c.name as string));
      if (!columns.has('count')) this.sql.run('ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1');
      if (!columns.has('expire_at')) {
        this.sql.run('ALTER TABLE audit ADD COLUMN expire_at INTEGER NOT NULL DEFAULT 0');
        this.sql.run('UPDATE audit SET expire_at = time + ?', LEGACY_RETENTION_MS);
      }
      this.sql.run('CREATE INDEX IF NOT EXISTS audit_expire ON audit(expire_at)');
    });
  }

  /** A record already there (a retry of a write that did land) is left as it is. */
  append(records: AuditRecord[]): void {
    if (records.length === 0) return;
    this.sql.tx(() => {
      for (const r of records) this.sql.run(`${INSERT} ON CONFLICT(id) DO NOTHING`, ...params(r));
    });
  }

  addCounts(records: AuditRecord[]): void {
    if (records.length === 0) return;
    this.sql.tx(() => {
      for (const r of records) this.sql.run(`${INSERT} ON CONFLICT(id) DO UPDATE SET count = count + excluded.count`, ...params(r));
    });
  }

  list(orgId: string, q: PageQuery, now: number): Page<AuditRecord> | typeof BAD_CURSOR {
    let rows: Row[];
    if (q.startingAfter !== undefined) {
      // The cursor may have expired since its page was read: paging goes on from where it was.
      const cursor = this.sql.one('SELECT time, id FROM audit WHERE org = ? AND id = ?', orgId, q.startingAfter);
      if (!cursor) return BAD_CURSOR;
      rows = this.sql.all(
        'SELECT * FROM audit WHERE org = ? AND (time < ? OR (time = ? AND id < ?)) AND expire_at > ? ORDER BY time DESC, id DESC LIMIT ?',
        orgId, cursor.time!, cursor.time!, cursor.id!, now, q.limit + 1,
      );
    } else {
      rows = this.sql.all('SELECT * FROM audit WHERE org = ? AND expire_at > ? ORDER BY time DESC, id DESC LIMIT ?', orgId, now, q.limit + 1);
    }
    return { data: rows.slice(0, q.limit).map(toAudit), hasMore: rows.length > q.limit };
  }

  /** One bounded statement: the write lock is held for `limit` rows at most. */
  deleteExpired(now: number, limit: number): number {
    return this.sql.run('DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit WHERE expire_at <= ? LIMIT ?)', now, limit);
  }
}
