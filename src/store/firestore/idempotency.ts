/**
 * The Firestore store's Idempotency-Key records: idempotency/{sha256(scope)},
 * claimed with create(), so of two concurrent first requests exactly one runs;
 * an expired record is deleted under an updateTime precondition before the
 * claim is retried. The request hash is the caller's (an HMAC of the body).
 */
import { createHash } from 'node:crypto';
import type { DocumentReference } from '@google-cloud/firestore';
import { BackendUnavailable } from '../../errors.js';
import type { IdempotencyRecord, IdempotencyStore } from '../ports.js';
import { Code, errCode, MAX_ROUNDS, type FirestoreDb } from './db.js';

export class FirestoreIdempotency implements IdempotencyStore {
  constructor(private readonly db: FirestoreDb) {}

  private doc(scope: string): DocumentReference {
    return this.db.idempotency.doc(createHash('sha256').update(scope).digest('hex'));
  }

  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    return this.db.guard(() => this.claim(record, expireBefore));
  }

  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void> {
    return this.db.guard(async () => {
      await this.doc(scope).update({ response: JSON.stringify(response) });
    });
  }

  /** Frees a claim still running (no response): a completed one stays, to be replayed. */
  releaseIdempotency(scope: string): Promise<void> {
    return this.db.guard(async () => {
      const ref = this.doc(scope);
      const d = await ref.get();
      if (d.exists && !d.get('response')) await ref.delete({ lastUpdateTime: d.updateTime! }).catch(() => {});
    });
  }

  private async claim(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    const ref = this.doc(record.scope);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      try {
        await ref.create({ scope: record.scope, requestHash: record.requestHash, createdAt: record.createdAt, response: null });
        return 'claimed' as const;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
      }
      const d = await ref.get();
      if (!d.exists) continue;
      if ((d.get('createdAt') as number) >= expireBefore) {
        const existing: IdempotencyRecord = { scope: record.scope, requestHash: d.get('requestHash'), createdAt: d.get('createdAt') };
        const response = d.get('response');
        if (response) existing.response = JSON.parse(response as string);
        return existing;
      }
      try {
        await ref.delete({ lastUpdateTime: d.updateTime! });
      } catch (err) {
        if (errCode(err) !== Code.FAILED_PRECONDITION && errCode(err) !== Code.NOT_FOUND) throw err;
      }
    }
    throw new BackendUnavailable('firestore (idempotency contention)');
  }
}
