/**
 * The SQLite store's audit table: append (a retried record is kept as it is),
 * aggregated counts (the record inserted once; each flush's count for it a row
 * of `audit_counts` keyed by the flush's batch id, inserted once, so a retry
 * never counts twice and several processes on one file stay exact; a listed
 * record's count is the record's own, for rows from before, plus its batches'), newest-first pages
 * that leave expired records out, and the bounded delete of expired ones.
 * (schema.ts migrates an older table.)
 */
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../ports.js';
import type { Row, SqliteDb } from './db.js';

const INSERT = `INSERT INTO audit (id, time, request_id, org, actor, action, target, outcome, ip, count, expire_at, target_name)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

const params = (r: AuditRecord) => [r.id, r.time, r.requestId, r.org, r.actor, r.action, r.target, r.outcome, r.ip, r.count, r.expireAt, r.targetName ?? null] as const;

/** A record's columns, its count summed over the writers' shards. */
const COLUMNS = 'a.id, a.time, a.request_id, a.org, a.actor, a.action, a.target, a.outcome, a.ip, a.expire_at, a.target_name, a.count + COALESCE((SELECT SUM(c.count) FROM audit_counts c WHERE c.id = a.id), 0) AS count';

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

  addAuditCounts(batch: string, records: AuditRecord[]): Promise<void> {
    return this.db.guard(() => {
      if (records.length === 0) return;
      this.db.tx('audit', () => {
        for (const r of records) {
          this.db.run(`${INSERT} ON CONFLICT(id) DO NOTHING`, ...params({ ...r, count: 0 }));
          this.db.run('INSERT INTO audit_counts (id, batch, count) VALUES (?, ?, ?) ON CONFLICT(id, batch) DO NOTHING', r.id, batch, r.count);
        }
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
          `SELECT ${COLUMNS} FROM audit a WHERE a.org = ? AND (a.time < ? OR (a.time = ? AND a.id < ?)) AND a.expire_at > ? ORDER BY a.time DESC, a.id DESC LIMIT ?`,
          orgId, cursor.time!, cursor.time!, cursor.id!, now, q.limit + 1,
        );
      } else {
        rows = this.db.all(`SELECT ${COLUMNS} FROM audit a WHERE a.org = ? AND a.expire_at > ? ORDER BY a.time DESC, a.id DESC LIMIT ?`, orgId, now, q.limit + 1);
      }
      return { data: rows.slice(0, q.limit).map(toAudit), hasMore: rows.length > q.limit };
    });
  }

  /** One bounded statement: the write lock is held for `limit` rows at most. */
  deleteExpiredAudit(now: number, limit: number): Promise<number> {
    return this.db.guard(() => this.db.tx(() => {
      const n = this.db.run('DELETE FROM audit WHERE rowid IN (SELECT rowid FROM audit WHERE expire_at <= ? LIMIT ?)', now, limit);
      if (n > 0) this.db.run('DELETE FROM audit_counts WHERE id NOT IN (SELECT id FROM audit)');
      return n;
    }));
  }
}
