/**
 * The Firestore store's usage counters: usage/{scope:id}/periods/{YYYY-MM},
 * updated with FieldValue.increment, so concurrent instances add exactly. A
 * flush's deltas for one counter are summed first (one write per counter per
 * flush) and written in batches; a read is one period or the sum of all.
 */
import firestorePkg from '@google-cloud/firestore';
import type { CollectionReference } from '@google-cloud/firestore';
import type { UsageCounts, UsageDelta, UsageScope, UsageStore } from '../ports.js';
import { BATCH_WRITES, type FirestoreDb } from './db.js';

const { FieldValue } = firestorePkg;

export class FirestoreUsage implements UsageStore {
  constructor(private readonly db: FirestoreDb) {}

  private periods(scope: UsageScope, id: string): CollectionReference {
    return this.db.usage.doc(`${scope}:${id.replace(/\//g, '%2F')}`).collection('periods');
  }

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    // One write per counter: deltas for the same counter are summed first.
    const merged = new Map<string, UsageDelta>();
    for (const d of deltas) {
      const k = `${d.scope}\0${d.id}\0${d.period}`;
      const m = merged.get(k);
      if (m) {
        m.requests += d.requests;
        m.inputTokens += d.inputTokens;
        m.outputTokens += d.outputTokens;
      } else {
        merged.set(k, { ...d });
      }
    }
    return this.db.guard(async () => {
      const all = [...merged.values()];
      for (let i = 0; i < all.length; i += BATCH_WRITES) {
        const batch = this.db.client.batch();
        for (const d of all.slice(i, i + BATCH_WRITES)) {
          batch.set(this.periods(d.scope, d.id).doc(d.period), {
            period: d.period,
            requests: FieldValue.increment(d.requests),
            inputTokens: FieldValue.increment(d.inputTokens),
            outputTokens: FieldValue.increment(d.outputTokens),
          }, { merge: true });
        }
        await batch.commit();
      }
    });
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.db.guard(async () => {
      const periods = this.periods(scope, id);
      const docs = period === undefined ? (await periods.get()).docs : [await periods.doc(period).get()].filter((d) => d.exists);
      const out: UsageCounts = { requests: 0, inputTokens: 0, outputTokens: 0 };
      for (const d of docs) {
        out.requests += d.get('requests') ?? 0;
        out.inputTokens += d.get('inputTokens') ?? 0;
        out.outputTokens += d.get('outputTokens') ?? 0;
      }
      return out;
    });
  }
}
