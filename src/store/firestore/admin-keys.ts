/**
 * The Firestore store's admin keys: admin_keys/{sha256 of the key} (O(1)
 * lookup by hash), with `orgId`, `id`, `sortKey` and the name fields (names.ts) for the other reads. A
 * deletion carries an exists precondition, so exactly one deleter wins.
 * Nothing caches an admin key (each admin request reads it), so no change is
 * published: a deleted key is refused at once on every instance.
 */
import type { DocumentSnapshot, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type AdminKeyRecord, type AdminKeyStore, type NamedPageQuery, type Page } from '../ports.js';
import { deleteOwned, pageByOrg, sortKey, type FirestoreDb } from './db.js';
import { nameFields, renameDoc } from './names.js';

const toAdminKey = (d: DocumentSnapshot): AdminKeyRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, ...(typeof x.name === 'string' ? { name: x.name } : {}), role: x.role,
    ...(Array.isArray(x.credentialIds) ? { credentialIds: x.credentialIds as string[] } : {}),
    tokenHash: x.tokenHash, createdAt: x.createdAt, expiresAt: x.expiresAt ?? null, createdBy: x.createdBy,
  };
};

export class FirestoreAdminKeys implements AdminKeyStore {
  constructor(private readonly db: FirestoreDb) {}

  createAdminKey(k: AdminKeyRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.db.adminKeys.doc(k.tokenHash).create({
        id: k.id, orgId: k.orgId, ...nameFields(k.name), role: k.role, credentialIds: k.credentialIds ?? null, tokenHash: k.tokenHash,
        createdAt: k.createdAt, expiresAt: k.expiresAt, createdBy: k.createdBy, sortKey: sortKey(k.createdAt, k.id),
      });
    });
  }

  findAdminKeyByHash(tokenHash: string): Promise<AdminKeyRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.adminKeys.doc(tokenHash).get();
      return d.exists ? toAdminKey(d) : undefined;
    });
  }

  getAdminKey(orgId: string, id: string): Promise<AdminKeyRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.byId(id);
      return d && d.get('orgId') === orgId ? toAdminKey(d) : undefined;
    });
  }

  listAdminKeys(orgId: string, q: NamedPageQuery): Promise<Page<AdminKeyRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db.adminKeys, orgId, q, (id) => this.byId(id), toAdminKey));
  }

  setAdminKeyName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(async () => renameDoc(await this.byId(id), orgId, name));
  }

  deleteAdminKey(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => deleteOwned(await this.byId(id), orgId));
  }

  /** Documents are keyed by hash: a key's id is a query. */
  private async byId(id: string): Promise<QueryDocumentSnapshot | undefined> {
    const snap = await this.db.adminKeys.where('id', '==', id).limit(1).get();
    return snap.docs[0];
  }
}
