/**
 * The Firestore store's credentials: credentials/{cred} (sealed key, plain
 * fields, `sortKey`, `name` and `namePrefixes`: names.ts) and the org's slots orgs/{org}/credential_slots/{k}, k in
 * [0, limit). A credential is stored in the same batch as create() of a free
 * slot, so two creators can never both win slot k, and no more than `limit`
 * credentials can exist. Deleting a credential deletes its slot in the same
 * batch (guarded by an exists precondition on the credential, so only one
 * deleter wins), with one change that stands for all its tokens, which go
 * next. Key replacement is an update (exists precondition) with its change;
 * a re-wrap is a compare-and-swap transaction.
 */
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type CredentialRecord, type CredentialStore, type NamedPageQuery, type Page, type SealedKey } from '../ports.js';
import type { FirestoreChanges } from './changes.js';
import { buf, Code, errCode, pageByOrg, sortKey, type FirestoreDb } from './db.js';
import { nameFields, renameDoc } from './names.js';
import { deleteTokensOf } from './tokens.js';

const toCredential = (d: DocumentSnapshot): CredentialRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, provider: x.provider, keyHint: x.keyHint,
    wrappedDek: buf(x.wrappedDek), kekId: x.kekId, nonce: buf(x.nonce), ciphertext: buf(x.ciphertext),
    // Documents written before credentials had plain fields have none.
    fields: { ...(x.fields ?? {}) }, createdAt: x.createdAt, updatedAt: x.updatedAt,
    ...(typeof x.name === 'string' ? { name: x.name } : {}),
  };
};

export class FirestoreCredentials implements CredentialStore {
  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {}

  private slots(orgId: string): CollectionReference {
    return this.db.orgs.doc(orgId).collection('credential_slots');
  }

  /**
   * Claims a free slot k in [0, limit) with create(), in the same batch as the
   * credential: whoever creates slot k first wins it, the others re-read the
   * slots and try another. When `limit` slot documents exist the org is full.
   */
  createCredential(c: CredentialRecord, limit: number): Promise<'created' | 'limit'> {
    // The deadline applies per round: losing races is progress (someone else won), not an outage.
    return this.db.rounds('credential slots', (round) => this.db.guard(async () => {
      const slots = this.slots(c.orgId);
      const held = await slots.get();
      if (held.size >= limit) return 'limit' as const;
      const taken = new Set(held.docs.map((d) => d.id));
      const free: number[] = [];
      for (let k = 0; k < limit; k++) if (!taken.has(String(k))) free.push(k);
      if (free.length === 0) return 'limit' as const;
      const slot = free[Math.floor(Math.random() * free.length)]!;
      const batch = this.db.client.batch();
      // The slot first: where writes apply in order (the emulator), a lost slot writes nothing.
      batch.create(slots.doc(String(slot)), { credentialId: c.id, at: c.createdAt });
      batch.create(this.db.credentials.doc(c.id), {
        id: c.id, orgId: c.orgId, provider: c.provider, keyHint: c.keyHint,
        wrappedDek: c.wrappedDek, kekId: c.kekId, nonce: c.nonce, ciphertext: c.ciphertext,
        createdAt: c.createdAt, updatedAt: c.updatedAt, slot, sortKey: sortKey(c.createdAt, c.id), fields: { ...(c.fields ?? {}) }, ...nameFields(c.name),
      });
      try {
        await batch.commit();
        return 'created' as const;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
        if ((await this.db.credentials.doc(c.id).get()).exists) throw err; // the id itself is taken: not a slot race
        await new Promise((r) => setTimeout(r, Math.random() * 5 * Math.min(round + 1, 10)));
        return undefined; // lost the slot: another round
      }
    }));
  }

  getCredential(orgId: string, id: string): Promise<CredentialRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.credentials.doc(id).get();
      return d.exists && d.get('orgId') === orgId ? toCredential(d) : undefined;
    });
  }

  listCredentials(orgId: string, q: NamedPageQuery): Promise<Page<CredentialRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db.credentials, orgId, q, async (id) => this.db.credentials.doc(id).get(), toCredential));
  }

  /** A name is not a secret nor cached anywhere: an update, no change event. */
  setCredentialName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(async () => renameDoc(await this.db.credentials.doc(id).get(), orgId, name));
  }

  countCredentials(orgId: string): Promise<number> {
    return this.db.guard(async () => (await this.db.credentials.where('orgId', '==', orgId).count().get()).data().count);
  }

  /**
   * One batch deletes the credential (exists precondition: one deleter wins),
   * frees its slot and announces it; then its tokens go (tokens.ts,
   * deleteTokensOf). A token created concurrently is either seen here or
   * rolled back by createToken's re-check.
   */
  deleteCredential(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => {
      const ref = this.db.credentials.doc(id);
      const d = await ref.get();
      if (!d.exists) {
        // Gone already. If a delete died between its two steps, its tokens are still here: finish the job.
        await deleteTokensOf(this.db, id, orgId);
        return false;
      }
      if (d.get('orgId') !== orgId) return false;
      const batch = this.db.client.batch();
      batch.delete(ref, { exists: true });
      const slot = d.get('slot');
      if (slot !== undefined) batch.delete(this.slots(orgId).doc(String(slot)));
      this.changes.publish(batch, 'credential', id);
      try {
        await batch.commit();
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false; // another deleter won
        throw err;
      }
      await deleteTokensOf(this.db, id, orgId);
      this.changes.sweep();
      return true;
    });
  }

  replaceCredentialKey(orgId: string, id: string, s: SealedKey, keyHint: string, updatedAt: number): Promise<boolean> {
    return this.db.guard(async () => {
      const ref = this.db.credentials.doc(id);
      const d = await ref.get();
      if (!d.exists || d.get('orgId') !== orgId) return false;
      const batch = this.db.client.batch();
      // update() carries an exists precondition: a credential deleted meanwhile fails with NOT_FOUND.
      batch.update(ref, { wrappedDek: s.wrappedDek, kekId: s.kekId, nonce: s.nonce, ciphertext: s.ciphertext, keyHint, updatedAt });
      this.changes.publish(batch, 'credential', id);
      return this.changes.commitUnlessGone(batch);
    });
  }

  async *allCredentials(): AsyncIterable<CredentialRecord> {
    let after = '';
    for (;;) {
      const snap = await this.db.guard(() => this.db.credentials.where('id', '>', after).orderBy('id').limit(100).get());
      if (snap.empty) return;
      for (const d of snap.docs) yield toCredential(d);
      after = snap.docs[snap.docs.length - 1]!.get('id');
    }
  }

  /** Compare-and-swap in a transaction (a rotation racing a rewrap must never pair an old DEK with a new ciphertext). */
  rewrapCredential(id: string, expected: Buffer, wrappedDek: Buffer, kekId: string): Promise<boolean> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      const ref = this.db.credentials.doc(id);
      const d = await tx.get(ref);
      if (!d.exists || !buf(d.get('wrappedDek')).equals(expected)) return false;
      tx.update(ref, { wrappedDek, kekId });
      this.changes.publish(tx, 'credential', id);
      return true;
    })).finally(() => this.changes.sweep());
  }
}
