/**
 * The Firestore store's Idempotency-Key records: idempotency/{sha256(scope)},
 * claimed with create(), so of two concurrent first requests exactly one runs;
 * an expired record, or a claim left running past IDEMPOTENCY_CLAIM_STALE_MS,
 * is deleted under an updateTime precondition before the claim is retried. A
 * claim carries a random claimant: one whose create() landed but was not
 * acknowledged is read back and is still this call's. The request hash is the
 * caller's (an HMAC of the body).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { DocumentReference } from '@google-cloud/firestore';
import { BackendUnavailable } from '../../errors.js';
import { IDEMPOTENCY_CLAIM_STALE_MS, type IdempotencyRecord, type IdempotencyStore } from '../ports.js';
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
    const claimant = randomUUID();
    for (let round = 0; round < MAX_ROUNDS; round++) {
      try {
        await this.db.create(ref, { scope: record.scope, requestHash: record.requestHash, createdAt: record.createdAt, response: null, claimant }, 'idempotency');
        return 'claimed' as const;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) {
          // Unacknowledged: it may have landed. Ours if the stored claim names us.
          if ((await ref.get().catch(() => undefined))?.get('claimant') === claimant) return 'claimed' as const;
          throw err;
        }
      }
      const d = await ref.get();
      if (!d.exists) continue;
      if (d.get('claimant') === claimant) return 'claimed' as const;
      const abandoned = !d.get('response') && (d.get('createdAt') as number) < record.createdAt - IDEMPOTENCY_CLAIM_STALE_MS;
      if ((d.get('createdAt') as number) >= expireBefore && !abandoned) {
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
