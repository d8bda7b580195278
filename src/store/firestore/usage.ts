/**
 * The Firestore store's usage counters, sharded by writer: usage/{scope:id}/shards/{period}~{writer}
 * holds one instance's absolute totals for one period (`YYYY-MM`, or `YYYY-MM-DD` for an organisation's
 * days), written with set() once per flush at most (so no document is written more than once a second,
 * whatever the number of instances) and summed on read. A retry writes the same totals, so a write that
 * landed but timed out never counts twice. Writes of one writer go out one after another: the next waits
 * until the previous call has settled in the client (even one that timed out here), so an older total can
 * never land after a newer one. Reads: one period (its shards by the `period` field), all periods, or a
 * range (the same field's single-field index); usage/{scope:id}/periods/{period} documents written before
 * shards existed (FieldValue.increment) are still summed in.
 *
 * An organisation's breakdown counters (token, credential, model per day) are usage/{scope:org}/{day}/
 * k_{key}~{writer}: one collection per day holding that day's keys' shards (each with its `key`), so a range
 * is one plain read per day (no composite index), and each shard is still one writer's document.
 */
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import { isBreakdown, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageScope, type UsageShard, type UsageStore } from '../ports.js';
import { BATCH_WRITES, type FirestoreDb } from './db.js';

const countsOf = (d: DocumentSnapshot): UsageCounts => ({
  requests: d.get('requests') ?? 0,
  inputTokens: d.get('inputTokens') ?? 0,
  outputTokens: d.get('outputTokens') ?? 0,
  // Counters written before spend was counted have no field: they spent 0.
  spendMicros: d.get('spendMicros') ?? 0,
});

const zero = (): UsageCounts => ({ requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 });

function addTo(sum: UsageCounts, c: UsageCounts): void {
  sum.requests += c.requests;
  sum.inputTokens += c.inputTokens;
  sum.outputTokens += c.outputTokens;
  sum.spendMicros += c.spendMicros;
}

export class FirestoreUsage implements UsageStore {
  /** The previous flush's write, still running in the client or not: the next waits for it. */
  private lastWrite: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: FirestoreDb) {}

  private counter(scope: UsageScope, id: string) {
    return this.db.usage.doc(`${scope}:${id.replace(/\//g, '%2F')}`);
  }

  private shards(scope: UsageScope, id: string): CollectionReference {
    return this.counter(scope, id).collection('shards');
  }

  /** Written before shards: one document per period, incremented by every instance. Read only. */
  private legacy(scope: UsageScope, id: string): CollectionReference {
    return this.counter(scope, id).collection('periods');
  }

  /** One writer's shard of a counter: the breakdown's in its day's collection, the others under the counter. */
  private shardDoc(c: Pick<UsageShard, 'scope' | 'id' | 'period'>, writer: string) {
    if (!isBreakdown(c.scope)) return this.shards(c.scope, c.id).doc(`${c.period}~${writer}`);
    const { orgId, key } = splitBreakdownId(c.id);
    return this.db.usage.doc(`${c.scope}:${orgId}`).collection(c.period).doc(`k_${encodeURIComponent(key)}~${writer}`);
  }

  putUsageShards(writer: string, seq: number, shards: UsageShard[]): Promise<void> {
    if (shards.length === 0) return Promise.resolve();
    const previous = this.lastWrite;
    const write = (async () => {
      await previous.catch(() => undefined);
      for (let i = 0; i < shards.length; i += BATCH_WRITES) {
        const batch = this.db.client.batch();
        for (const d of shards.slice(i, i + BATCH_WRITES)) {
          batch.set(this.shardDoc(d, writer), {
            period: d.period, writer, seq, ...(isBreakdown(d.scope) ? { key: splitBreakdownId(d.id).key } : {}),
            requests: d.requests, inputTokens: d.inputTokens, outputTokens: d.outputTokens, spendMicros: d.spendMicros,
          });
        }
        await this.db.commit(batch, 'usage');
      }
    })();
    this.lastWrite = this.db.track(write);
    return this.db.guard(() => write);
  }

  getUsageShards(writer: string, counters: Array<Pick<UsageShard, 'scope' | 'id' | 'period'>>): Promise<UsageCounts[]> {
    if (counters.length === 0) return Promise.resolve([]);
    return this.db.guard(async () => {
      const docs = await this.db.client.getAll(...counters.map((c) => this.shardDoc(c, writer)));
      return docs.map((d) => (d.exists ? countsOf(d) : zero()));
    });
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.db.guard(async () => {
      const [shards, legacy] = period === undefined
        ? await Promise.all([this.shards(scope, id).get(), this.legacy(scope, id).get()])
        : await Promise.all([this.shards(scope, id).where('period', '==', period).get(), this.legacy(scope, id).where('period', '==', period).get()]);
      const out = zero();
      for (const d of [...shards.docs, ...legacy.docs]) addTo(out, countsOf(d));
      return out;
    });
  }

  listUsage(scope: UsageScope, id: string, from: string, to: string): Promise<PeriodUsage[]> {
    return this.db.guard(async () => {
      const range = (c: CollectionReference) => c.where('period', '>=', from).where('period', '<=', to).get();
      const [shards, legacy] = await Promise.all([range(this.shards(scope, id)), range(this.legacy(scope, id))]);
      const byPeriod = new Map<string, PeriodUsage>();
      for (const d of [...shards.docs, ...legacy.docs]) {
        const period = d.get('period') as string;
        let p = byPeriod.get(period);
        if (!p) byPeriod.set(period, (p = { period, ...zero() }));
        addTo(p, countsOf(d));
      }
      return [...byPeriod.values()].sort((a, b) => (a.period < b.period ? -1 : a.period > b.period ? 1 : 0));
    });
  }

  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    return this.db.guard(async () => {
      const parent = this.db.usage.doc(`${scope}:${orgId}`);
      const days = await Promise.all(daysFrom(from, to).map((day) => parent.collection(day).get()));
      const byKey = new Map<string, KeyUsage>();
      for (const d of days.flatMap((snap) => snap.docs)) {
        const key = d.get('key') as string;
        let sum = byKey.get(key);
        if (!sum) byKey.set(key, (sum = { key, ...zero() }));
        addTo(sum, countsOf(d));
      }
      return [...byKey.values()];
    });
  }
}

/** The days `YYYY-MM-DD` from `from` to `to`, inclusive (none when either is not a day or `from` is after `to`; at most a year). */
function daysFrom(from: string, to: string): string[] {
  const days: string[] = [];
  const end = Date.parse(`${to}T00:00:00Z`);
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= end && days.length < 366; t += 86_400_000) days.push(new Date(t).toISOString().slice(0, 10));
  return days;
}
