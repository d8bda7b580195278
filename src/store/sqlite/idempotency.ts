/**
 * The SQLite store's Idempotency-Key records: a claim is read and written under
 * one write lock, so of two first requests with one key exactly one runs. The
 * request hash is the caller's (an HMAC of the body, never the body). A claim
 * carries a random claimant: one whose commit was not acknowledged is read back
 * and is still this call's; one left running (its request failed without
 * releasing it) is taken over after IDEMPOTENCY_CLAIM_STALE_MS.
 */
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_CLAIM_STALE_MS, type IdempotencyRecord, type IdempotencyStore } from '../ports.js';
import type { SqliteDb } from './db.js';

export class SqliteIdempotency implements IdempotencyStore {
  constructor(private readonly db: SqliteDb) {}

  async claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    const claimant = randomUUID();
    try {
      return await this.claim(record, expireBefore, claimant);
    } catch (err) {
      const mine = await this.db.guard(() => this.db.one('SELECT claimant FROM idempotency WHERE scope = ?', record.scope)?.claimant === claimant).catch(() => false);
      if (mine) return 'claimed';
      throw err;
    }
  }

  private claim(record: IdempotencyRecord, expireBefore: number, claimant: string): Promise<'claimed' | IdempotencyRecord> {
    return this.db.guard(() => this.db.tx('idempotency', () => {
      const r = this.db.one('SELECT * FROM idempotency WHERE scope = ?', record.scope);
      const abandoned = r !== undefined && r.response === null && (r.created_at as number) < record.createdAt - IDEMPOTENCY_CLAIM_STALE_MS;
      if (r && (r.created_at as number) >= expireBefore && !abandoned) {
        const existing: IdempotencyRecord = { scope: record.scope, requestHash: r.request_hash as string, createdAt: r.created_at as number };
        if (r.response !== null) existing.response = JSON.parse(r.response as string);
        return existing;
      }
      this.db.run('INSERT OR REPLACE INTO idempotency (scope, request_hash, created_at, response, claimant) VALUES (?, ?, ?, NULL, ?)', record.scope, record.requestHash, record.createdAt, claimant);
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
