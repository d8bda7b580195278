/**
 * The Firestore store's usage counters: usage/{scope:id}/periods/{period}
 * (`YYYY-MM`, or `YYYY-MM-DD` for an organisation's days), updated with
 * FieldValue.increment, so concurrent instances add exactly. A flush's deltas
 * for one counter are summed first (one write per counter per flush) and
 * written in batches; a read is one period, the sum of all, or a range of
 * periods (by the `period` field, whose single-field index Firestore keeps).
 */
import firestorePkg from '@google-cloud/firestore';
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import type { PeriodUsage, UsageCounts, UsageDelta, UsageScope, UsageStore } from '../ports.js';
import { BATCH_WRITES, type FirestoreDb } from './db.js';

const { FieldValue } = firestorePkg;

const countsOf = (d: DocumentSnapshot): UsageCounts => ({
  requests: d.get('requests') ?? 0,
  inputTokens: d.get('inputTokens') ?? 0,
  outputTokens: d.get('outputTokens') ?? 0,
  // Counters written before spend was counted have no field: they spent 0.
  spendMicros: d.get('spendMicros') ?? 0,
});

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
        m.spendMicros += d.spendMicros;
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
            spendMicros: FieldValue.increment(d.spendMicros),
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
      const out: UsageCounts = { requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 };
      for (const d of docs) {
        const c = countsOf(d);
        out.requests += c.requests;
        out.inputTokens += c.inputTokens;
        out.outputTokens += c.outputTokens;
        out.spendMicros += c.spendMicros;
      }
      return out;
    });
  }

  listUsage(scope: UsageScope, id: string, from: string, to: string): Promise<PeriodUsage[]> {
    return this.db.guard(async () => {
      const snap = await this.periods(scope, id).where('period', '>=', from).where('period', '<=', to).orderBy('period').get();
      return snap.docs.map((d) => ({ period: d.get('period') as string, ...countsOf(d) }));
    });
  }
}
