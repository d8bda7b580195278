/**
 * The Firestore store's pools (pool-port.ts): pools/{id}, with `orgId` and `sortKey` for an organisation's
 * list (the credentials' composite index: orgId, sortKey desc; names as names.ts stores them), members as an
 * array and `cooling` as a map of credential id → epoch ms. Every change is one batch: the update under an
 * exists precondition and the `pool` change that announces it, so a pool deleted meanwhile is not made
 * again. A member's cooling writes only its own map entry (a cooling set by another instance at the same
 * moment is kept). Deletion is the credentials' two steps: the pool (with its change), then its tokens
 * (a token whose pool is gone is refused at creation: tokens.ts reads the pool after writing).
 */
import { FieldPath, type DocumentData, type DocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type NamedPageQuery, type Page, type PoolRecord, type PoolStore, type PoolUpdate } from '../ports.js';
import type { FirestoreChanges } from './changes.js';
import { pageByOrg, sortKey, type FirestoreDb } from './db.js';
import { nameFields } from './names.js';
import { deleteTokensOf } from './tokens.js';

const toPool = (d: DocumentSnapshot): PoolRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, provider: x.provider, strategy: x.strategy, members: x.members, cooling: x.cooling ?? {},
    createdAt: x.createdAt, updatedAt: x.updatedAt, ...(typeof x.name === 'string' ? { name: x.name } : {}),
  };
};

/** A document id must not hold a slash (it would name another path). */
const usable = (id: string): boolean => id.length > 0 && id.length <= 64 && !id.includes('/');

export class FirestorePools implements PoolStore {
  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {}

  createPool(p: PoolRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.db.pools.doc(p.id).create({
        id: p.id, orgId: p.orgId, provider: p.provider, strategy: p.strategy, members: p.members, cooling: p.cooling,
        createdAt: p.createdAt, updatedAt: p.updatedAt, sortKey: sortKey(p.createdAt, p.id), ...nameFields(p.name),
      });
    });
  }

  getPool(orgId: string, id: string): Promise<PoolRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      return d && d.get('orgId') === orgId ? toPool(d) : undefined;
    });
  }

  listPools(orgId: string, q: NamedPageQuery): Promise<Page<PoolRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db.pools, orgId, q, (id) => this.read(id), toPool));
  }

  updatePool(orgId: string, id: string, u: PoolUpdate): Promise<PoolRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      if (!d || d.get('orgId') !== orgId) return undefined;
      const change: DocumentData = { updatedAt: u.updatedAt };
      if (u.strategy !== undefined) change.strategy = u.strategy;
      if (u.members !== undefined) change.members = u.members;
      if (u.name !== undefined) Object.assign(change, nameFields(u.name));
      const batch = this.db.client.batch();
      batch.update(d.ref, change, { exists: true });
      this.changes.publish(batch, 'pool', id);
      if (!(await this.changes.commitUnlessGone(batch))) return undefined;
      const after = await d.ref.get();
      return after.exists ? toPool(after) : undefined;
    });
  }

  deletePool(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      if (!d) {
        // Gone already. If a delete died between its two steps, its tokens are still here: finish the job.
        await deleteTokensOf(this.db, id, orgId);
        return false;
      }
      if (d.get('orgId') !== orgId) return false;
      const batch = this.db.client.batch();
      batch.delete(d.ref, { exists: true });
      this.changes.publish(batch, 'pool', id);
      if (!(await this.changes.commitUnlessGone(batch))) return false;
      await deleteTokensOf(this.db, id, orgId);
      return true;
    });
  }

  coolPoolMember(orgId: string, id: string, credentialId: string, until: number): Promise<boolean> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      if (!d || d.get('orgId') !== orgId) return false;
      if (((d.get('cooling') ?? {})[credentialId] ?? 0) >= until) return true;
      const batch = this.db.client.batch();
      batch.update(d.ref, new FieldPath('cooling', credentialId), until, { exists: true });
      this.changes.publish(batch, 'pool', id);
      return this.changes.commitUnlessGone(batch);
    });
  }

  private async read(id: string): Promise<DocumentSnapshot | undefined> {
    if (!usable(id)) return undefined;
    const d = await this.db.pools.doc(id).get();
    return d.exists ? d : undefined;
  }
}
