/**
 * The Firestore store's audit collection: audit/{evt_…}, one document per
 * record with `orgId`, `sortKey` (newest-first paging) and `expire_at` as a
 * Timestamp (the contract's name), which the collection's TTL policy deletes
 * (docs/operate/cloud-run.md);
 * records past it are left out of pages before that happens.
 *
 * Aggregated refusals are exact across instances and under retries without a
 * transaction: the id is derived from (org, action, address, minute); the
 * record is created once with create() (the first writer's time and fields
 * stay, count 0), and each flush's count for it is a document of its own,
 * audit_counts/{id}~{batch}, created once (a retry of the batch finds it there
 * and adds nothing; no document is written twice, whatever the number of
 * instances). A listed record's count is its own (records from before) plus its
 * batches'. Ids this instance has created are remembered, so a steady flood
 * costs one batched create per record per flush. Count documents carry the
 * record's `expire_at` for the same TTL policy.
 */
import firestorePkg from '@google-cloud/firestore';
import type { DocumentData, DocumentSnapshot, Timestamp as TimestampType } from '@google-cloud/firestore';
import { boundedLru } from '../../lru.js';
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../ports.js';
import { BATCH_WRITES, Code, errCode, sortKey, type FirestoreDb } from './db.js';

const { Timestamp } = firestorePkg;

/** First writes of new aggregated records run this many at a time. */
const CREATE_CONCURRENCY = 32;
/** A page is filled from reads of at least this many documents, so a run of expired ones is skipped in few round trips. */
const MIN_READ = 50;
/** Records written before retention existed are listed this long (the default KEYWARD_AUDIT_RETENTION_DAYS); the TTL policy ignores them. */
const LEGACY_RETENTION_MS = 400 * 86_400_000;

function toDoc({ expireAt, ...r }: AuditRecord): DocumentData {
  return { ...r, orgId: r.org, sortKey: sortKey(r.time, r.id), expire_at: Timestamp.fromMillis(expireAt) };
}

function toAudit(d: DocumentSnapshot): AuditRecord {
  const time = d.get('time') as number;
  const expireAt = d.get('expire_at') as TimestampType | undefined;
  return {
    id: d.get('id'), time, requestId: d.get('requestId'), org: d.get('org'), actor: d.get('actor'),
    action: d.get('action'), target: d.get('target'), outcome: d.get('outcome'), ip: d.get('ip'),
    count: (d.get('count') as number | undefined) ?? 1, expireAt: expireAt ? expireAt.toMillis() : time + LEGACY_RETENTION_MS,
    ...(typeof d.get('targetName') === 'string' ? { targetName: d.get('targetName') as string } : {}),
  };
}

export class FirestoreAudit implements AuditStore {
  /** Aggregated record ids known to exist: only their writers' counts are written again. */
  private readonly known = boundedLru<string, true>(20_000);

  constructor(private readonly db: FirestoreDb) {}

  appendAudit(records: AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.db.guard(() => this.append(records));
  }

  addAuditCounts(batch: string, records: AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.db.guard(() => this.addCounts(batch, records));
  }

  listAudit(orgId: string, q: PageQuery, now = Date.now()): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => this.list(orgId, q, now));
  }

  /** Firestore deletes expired records itself (a TTL policy on `expire_at`). */
  async deleteExpiredAudit(): Promise<number> {
    return 0;
  }

  /** set(), not create(): a retry of a write that did land (a timeout) rewrites the same record instead of failing for ever. */
  private async append(records: AuditRecord[]): Promise<void> {
    for (let i = 0; i < records.length; i += BATCH_WRITES) {
      const batch = this.db.client.batch();
      for (const r of records.slice(i, i + BATCH_WRITES)) batch.set(this.db.audit.doc(r.id), toDoc(r));
      await batch.commit();
    }
  }

  private async addCounts(batchId: string, records: AuditRecord[]): Promise<void> {
    const fresh = records.filter((r) => !this.known.has(r.id));
    for (let i = 0; i < fresh.length; i += CREATE_CONCURRENCY) {
      await Promise.all(fresh.slice(i, i + CREATE_CONCURRENCY).map(async (r) => {
        try {
          await this.db.audit.doc(r.id).create(toDoc({ ...r, count: 0 }));
        } catch (err) {
          if (errCode(err) !== Code.ALREADY_EXISTS) throw err; // another instance (or an earlier attempt) wrote it first
        }
        this.known.set(r.id, true);
      }));
    }
    for (let i = 0; i < records.length; i += BATCH_WRITES) {
      const batch = this.db.client.batch();
      for (const r of records.slice(i, i + BATCH_WRITES)) {
        batch.create(this.db.auditCounts.doc(`${r.id}~${batchId}`), { auditId: r.id, batch: batchId, count: r.count, expire_at: Timestamp.fromMillis(r.expireAt) });
      }
      try {
        await this.db.commit(batch, 'audit');
      } catch (err) {
        // Only this batch writes these ids: they exist because an earlier attempt of it landed.
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
      }
    }
  }

  /** Adds each aggregated record's writers' counts to its own (one query per such record on the page). */
  private async withCounts(records: AuditRecord[]): Promise<AuditRecord[]> {
    await Promise.all(records.filter((r) => r.outcome === 'denied').map(async (r) => {
      const shards = await this.db.auditCounts.where('auditId', '==', r.id).get();
      for (const d of shards.docs) r.count += d.get('count') as number;
    }));
    return records;
  }

  /** Newest first; expired records (not yet deleted by the TTL policy) are skipped, reading on until the page is full. */
  private async list(orgId: string, q: PageQuery, now: number): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    let after: string | undefined;
    if (q.startingAfter !== undefined) {
      const cursor = await this.db.audit.doc(q.startingAfter).get();
      if (!cursor.exists || cursor.get('orgId') !== orgId) return BAD_CURSOR;
      after = cursor.get('sortKey') as string;
    }
    const out: AuditRecord[] = [];
    const want = q.limit + 1;
    const read = Math.max(want, MIN_READ);
    for (;;) {
      let query = this.db.audit.where('orgId', '==', orgId);
      if (after !== undefined) query = query.where('sortKey', '<', after);
      const snap = await query.orderBy('sortKey', 'desc').limit(read).get();
      for (const d of snap.docs) {
        const r = toAudit(d);
        if (r.expireAt > now) out.push(r);
        if (out.length === want) break;
      }
      if (out.length === want || snap.size < read) break;
      after = snap.docs[snap.size - 1]!.get('sortKey') as string;
    }
    return { data: await this.withCounts(out.slice(0, q.limit)), hasMore: out.length > q.limit };
  }
}
