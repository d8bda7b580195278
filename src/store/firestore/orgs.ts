/**
 * The Firestore store's organisations: orgs/{org} and org_tokens/{sha256 of
 * the token} (O(1) lookup by hash). An org and its first token are one batch
 * of create()s. A rotation is a transaction that reads the org's tokens,
 * refuses unless the caller's token is still unexpiring, retires the others
 * (dropping those expired over a day) and announces the org; Firestore
 * serialises it against a concurrent rotation (the emulator does not;
 * rotations are rare and tested serially). A spend limit is an update of the
 * org document batched with its change.
 */
import type { DocumentData, DocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type OrgRecord, type OrgStore, type OrgTokenRecord, type Page, type PageQuery } from '../ports.js';
import type { FirestoreChanges } from './changes.js';
import type { FirestoreDb } from './db.js';

/** Retired org tokens are deleted once they have been expired this long. */
const DROP_EXPIRED_AFTER_MS = 86_400_000;

const toOrgToken = (d: DocumentSnapshot): OrgTokenRecord => {
  const x = d.data()!;
  return { id: x.id, orgId: x.orgId, tokenHash: x.tokenHash, createdAt: x.createdAt, expiresAt: x.expiresAt ?? null };
};

const toOrg = (d: DocumentSnapshot): OrgRecord => {
  const limit = (d.get('spendLimitMicros') as number | null | undefined) ?? null;
  // Absent when unset: records of orgs without a cap look as they always did.
  return { id: d.get('id'), name: d.get('name'), createdAt: d.get('createdAt'), ...(limit !== null ? { spendLimitMicros: limit } : {}) };
};

const orgTokenDoc = (t: OrgTokenRecord): DocumentData => ({ id: t.id, orgId: t.orgId, tokenHash: t.tokenHash, createdAt: t.createdAt, expiresAt: t.expiresAt });

export class FirestoreOrgs implements OrgStore {
  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {}

  createOrg(org: OrgRecord, token: OrgTokenRecord): Promise<void> {
    return this.db.guard(async () => {
      const batch = this.db.client.batch();
      batch.create(this.db.orgs.doc(org.id), { id: org.id, name: org.name, createdAt: org.createdAt });
      batch.create(this.db.orgTokens.doc(token.tokenHash), orgTokenDoc(token));
      await batch.commit();
    });
  }

  getOrg(id: string): Promise<OrgRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.orgs.doc(id).get();
      return d.exists ? toOrg(d) : undefined;
    });
  }

  /**
   * Newest first, ties by id descending, on the automatic single-field index of createdAt (no composite index). How
   * Firestore orders ties is not relied on: the millisecond a page ends in is read whole and sorted here (a few orgs
   * at most), as is, after a cursor, the cursor's own millisecond (those with a smaller id come first).
   */
  listOrgs(q: PageQuery): Promise<Page<OrgRecord> | typeof BAD_CURSOR> {
    return this.db.guard(async () => {
      const at = (d: DocumentSnapshot) => d.get('createdAt') as number;
      const newestFirst = (a: DocumentSnapshot, b: DocumentSnapshot) => at(b) - at(a) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
      const madeAt = async (t: number) => (await this.db.orgs.where('createdAt', '==', t).get()).docs;
      let tied: DocumentSnapshot[] = [];
      let query = this.db.orgs.orderBy('createdAt', 'desc');
      if (q.startingAfter !== undefined) {
        const cursor = await this.db.orgs.doc(q.startingAfter).get();
        if (!cursor.exists) return BAD_CURSOR;
        tied = (await madeAt(at(cursor))).filter((d) => d.id < cursor.id);
        query = this.db.orgs.where('createdAt', '<', at(cursor)).orderBy('createdAt', 'desc');
      }
      let docs: DocumentSnapshot[] = (await query.limit(q.limit + 1).get()).docs;
      const last = docs[docs.length - 1];
      if (last) docs = [...docs.filter((d) => at(d) > at(last)), ...(await madeAt(at(last)))];
      docs = [...tied, ...docs].sort(newestFirst);
      return { data: docs.slice(0, q.limit).map(toOrg), hasMore: docs.length > q.limit };
    });
  }

  /** One batch: the update (only if the org exists) and its change, so every instance's cache hears of it. */
  setOrgSpendLimit(id: string, micros: number | null): Promise<boolean> {
    return this.db.guard(async () => {
      const batch = this.db.client.batch();
      batch.update(this.db.orgs.doc(id), { spendLimitMicros: micros });
      this.changes.publish(batch, 'org', id);
      return this.changes.commitUnlessGone(batch);
    });
  }

  findOrgToken(tokenHash: string): Promise<OrgTokenRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.orgTokens.doc(tokenHash).get();
      return d.exists ? toOrgToken(d) : undefined;
    });
  }

  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string): Promise<'rotated' | 'retiring'> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      const existing = await tx.get(this.db.orgTokens.where('orgId', '==', token.orgId));
      // Read in the transaction: a rotation that retired the caller meanwhile makes this one retry and refuse.
      const caller = existing.docs.find((d) => d.get('id') === callerId);
      if (!caller || caller.get('expiresAt') !== null) return 'retiring' as const;
      const dropBefore = token.createdAt - DROP_EXPIRED_AFTER_MS;
      for (const d of existing.docs) {
        const was = d.get('expiresAt') as number | null;
        const expiresAt = was === null || was > retireAt ? retireAt : was;
        if (expiresAt < dropBefore) tx.delete(d.ref);
        else if (expiresAt !== was) tx.update(d.ref, { expiresAt });
      }
      tx.create(this.db.orgTokens.doc(token.tokenHash), orgTokenDoc(token));
      this.changes.publish(tx, 'org', token.orgId);
      return 'rotated' as const;
    })).finally(() => this.changes.sweep());
  }
}
