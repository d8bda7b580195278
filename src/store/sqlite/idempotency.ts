/**
 * The SQLite store's Idempotency-Key records: a claim is read and written under
 * one write lock, so of two first requests with one key exactly one runs. The
 * request hash is the caller's (an HMAC of the body, never the body).
 */
import type { IdempotencyRecord, IdempotencyStore } from '../ports.js';
import type { SqliteDb } from './db.js';

export class SqliteIdempotency implements IdempotencyStore {
  constructor(private readonly db: SqliteDb) {}

  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    return this.db.guard(() => this.db.tx(() => {
      const r = this.db.one('SELECT * FROM idempotency WHERE scope = ?', record.scope);
      if (r && (r.created_at as number) >= expireBefore) {
        const existing: IdempotencyRecord = { scope: record.scope, requestHash: r.request_hash as string, createdAt: r.created_at as number };
        if (r.response !== null) existing.response = JSON.parse(r.response as string);
        return existing;
      }
      this.db.run('INSERT OR REPLACE INTO idempotency (scope, request_hash, created_at, response) VALUES (?, ?, ?, NULL)', record.scope, record.requestHash, record.createdAt);
      this.db.run('DELETE FROM idempotency WHERE created_at < ?', expireBefore);
      return 'claimed' as const;
    }));
  }

  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void> {
    return this.db.guard(() => {
      this.db.run('UPDATE idempotency SET response = ? WHERE scope = ?', JSON.stringify(response), scope);
    });
  }

  releaseIdempotency(scope: string): Promise<void> {
    return this.db.guard(() => {
      this.db.run('DELETE FROM idempotency WHERE scope = ? AND response IS NULL', scope);
    });
  }
}
