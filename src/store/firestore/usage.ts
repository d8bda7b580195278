/**
 * The Firestore store's usage counters: usage/{scope:id}/periods/{period}
 * (`YYYY-MM`, or `YYYY-MM-DD` for an organisation's days), updated with
 * FieldValue.increment, so concurrent instances add exactly. A flush's deltas
 * for one counter are summed first (one write per counter per flush) and
 * written in batches; a read is one period, the sum of all, or a range of
 * periods (by the `period` field, whose single-field index Firestore keeps).
 * An organisation's breakdown counters (token, credential, model per day) are
 * usage/{scope:org}/{day}/k_{key}: one collection per day holding that day's
 * keys, so a range is one plain read per day (no composite index) and each
 * counter is still its own document, written once per flush.
 */
import firestorePkg from '@google-cloud/firestore';
import type { CollectionReference, DocumentReference, DocumentSnapshot } from '@google-cloud/firestore';
import { addCounts, BREAKDOWN_SCOPES, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageDelta, type UsageScope, type UsageStore } from '../ports.js';
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

  /** The document one counter lives in. */
  private counter(d: UsageDelta): DocumentReference {
    if (!(BREAKDOWN_SCOPES as readonly string[]).includes(d.scope)) return this.periods(d.scope, d.id).doc(d.period);
    const { orgId, key } = splitBreakdownId(d.id);
    return this.db.usage.doc(`${d.scope}:${orgId}`).collection(d.period).doc(`k_${encodeURIComponent(key)}`);
  }

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    // One write per counter: deltas for the same counter are summed first.
    const merged = new Map<string, UsageDelta>();
    for (const d of deltas) {
      const k = `${d.scope}\0${d.id}\0${d.period}`;
      const m = merged.get(k);
      if (m) addCounts(m, d);
      else merged.set(k, { ...d });
    }
    return this.db.guard(async () => {
      const all = [...merged.values()];
      for (let i = 0; i < all.length; i += BATCH_WRITES) {
        const batch = this.db.client.batch();
        for (const d of all.slice(i, i + BATCH_WRITES)) {
          batch.set(this.counter(d), {
            period: d.period,
            ...((BREAKDOWN_SCOPES as readonly string[]).includes(d.scope) ? { key: splitBreakdownId(d.id).key } : {}),
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
        addCounts(out, countsOf(d));
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

  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    return this.db.guard(async () => {
      const parent = this.db.usage.doc(`${scope}:${orgId}`);
      const days = await Promise.all(daysFrom(from, to).map((day) => parent.collection(day).get()));
      const byKey = new Map<string, KeyUsage>();
      for (const d of days.flatMap((snap) => snap.docs)) {
        const key = d.get('key') as string;
        const c = countsOf(d);
        const sum = byKey.get(key);
        if (sum) addCounts(sum, c);
        else byKey.set(key, { key, ...c });
      }
      return [...byKey.values()];
    });
  }
}

/** The days `YYYY-MM-DD` from `from` to `to`, inclusive (none when either is not a day or `from` is after `to`). */
function daysFrom(from: string, to: string): string[] {
  const days: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end && days.length < 366; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}
