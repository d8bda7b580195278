/**
 * The SQLite store's audit table: append (a retried record is kept as it is),
 * aggregated counts (an upsert that adds to `count`, so several processes on
 * one file stay exact), newest-first pages that leave expired records out, and
 * the bounded delete of expired ones. (schema.ts migrates an older table.)
 */
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../ports.js';
import type { Row, SqliteDb } from './db.js';

const INSERT = `INSERT INTO audit (id, time, request_id, org, actor, action, target, outcome, ip, count, expire_at, target_name)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const params = (r: AuditRecord) => [r.id, r.time, r.requestId, r.org, r.actor, r.action, r.target, r.outcome, r.ip, r.count, r.expireAt, r.targetName ?? null] as const;

const toAudit = (r: Row): AuditRecord => ({
  id: r.id as string, time: r.time as number, requestId: r.request_id as string, org: r.org as string, actor: r.actor as string,
  action: r.action as string, target: r.target as string, outcome: r.outcome as AuditRecord['outcome'], ip: r.ip as string,
  count: r.count as number, expireAt: r.expire_at as number, ...(r.target_name != null ? { targetName: r.target_name as string } : {}),
});

export class SqliteAudit implements AuditStore {
  constructor(private readonly db: SqliteDb) {}

  /** A record already there (a retry of a write that did land) is left as it is. */
  appendAudit(records: AuditRecord[]): Promise<void> {
    return this.db.guard(() => {
      if (records.length === 0) return;
      this.db.tx(() => {
        for (const r of records) this.db.run(`${INSERT} ON CONFLICT(id) DO NOTHING`, ...params(r));
      });
    });
  }

  addAuditCounts(records: AuditRecord[]): Promise<void> {
    return this.db.guard(() => {
      if (records.length === 0) return;
      this.db.tx(() => {
        for (const r of records) this.db.run(`${INSERT} ON CONFLICT(id) DO UPDATE SET count = count + excluded.count`, ...params(r));
      });
    });
  }

  listAudit(orgId: string, q: PageQuery, now = Date.now()): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => {
      let rows: Row[];
      if (q.startingAfter !== undefined) {
        // The cursor may have expired since its page was read: paging goes on from where it was.
        const cursor = this.db.one('SELECT time, id FROM audit WHERE org = ? AND id = ?', orgId, q.startingAfter);
        if (!cursor) return BAD_CURSOR;
        rows = this.db.all(
          'SELECT * FROM audit WHERE org = ? AND (time < ? OR (time = ? AND id < ?)) AND expire_at > ? ORDER BY time DESC, id DESC LIMIT ?',
          orgId, cursor.time!, cursor.time!, cursor.id!, now, q.limit + 1,
        );
      } else {
        rows = this.db.all('SELECT * FROM audit WHERE org = ? AND expire_at > ? ORDER BY time DESC, id DESC LIMIT ?', orgId, now, q.limit + 1);
      }
      return { data: rows.slice(0, q.limit).map(toAudit), hasMore: rows.length > q.limit };
    });
  }

  /** One bounded statement: the write lock is held for `limit` rows at most. */
  deleteExpiredAudit(now: number, limit: number): Promise<number> {
    return this.db.guard(() => this.db.run('DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit WHERE expire_at <= ? LIMIT ?)', now, limit));
  }
}
