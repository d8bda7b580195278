/**
 * The SQLite store's Idempotency-Key records: a claim is read and written under
 * one write lock, so of two first requests with one key exactly one runs. The
 * request hash is the caller's (an HMAC of the body, never the body).
 */
import type { IdempotencyRecord } from '../ports.js';
import type { Sql } from './sqlite-sql.js';

export class SqliteIdempotency {
  constructor(private readonly sql: Sql) {}

  claim(record: IdempotencyRecord, expireBefore: number): 'claimed' | IdempotencyRecord {
    return this.sql.tx(() => {
      const r = this.sql.one('SELECT * FROM idempotency WHERE scope = ?', record.scope);
      if (r && (r.created_at as number) >= expireBefore) {
        const existing: IdempotencyRecord = { scope: record.scope, requestHash: r.request_hash as string, createdAt: r.created_at as number };
        if (r.response !== null) existing.response = JSON.parse(r.response as string);
        return existing;
      }
      this.sql.run('INSERT OR REPLACE INTO idempotency (scope, request_hash, created_at, response) VALUES (?, ?, ?, NULL)', record.scope, record.requestHash, record.createdAt);
      this.sql.run('DELETE FROM idempotency WHERE created_at < ?', expireBefore);
      return 'claimed' as const;
    });
  }

  complete(scope: string, response: { status: number; body: unknown }): void {
    this.sql.run('UPDATE idempotency SET response = ? WHERE scope = ?', JSON.stringify(response), scope);
  }

  release(scope: string): void {
    this.sql.run('DELETE FROM idempotency WHERE scope = ? AND response IS NULL', scope);
  }
}
