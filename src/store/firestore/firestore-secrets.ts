/**
 * The Firestore store's deployment secrets: meta/{name} holds a secret wrapped
 * by the KeyWrapper. create() makes the first instance's the only one; every
 * other instance reads it back. A rewrap is a compare-and-swap transaction.
 */
import type { CollectionReference, DocumentSnapshot, Firestore as FirestoreClient } from '@google-cloud/firestore';
import type { StoredSecret } from '../ports.js';
import { Code, errCode } from './firestore-codes.js';

const buf = (v: unknown): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array));

const toSecret = (d: DocumentSnapshot): StoredSecret => ({
  name: d.get('name'), wrapped: buf(d.get('wrapped')), kekId: d.get('kekId'), createdAt: d.get('createdAt'),
});

export class FirestoreSecrets {
  private readonly meta: CollectionReference;

  constructor(private readonly db: FirestoreClient) {
    this.meta = db.collection('meta');
  }

  async createIfAbsent(s: StoredSecret): Promise<StoredSecret> {
    const ref = this.meta.doc(s.name);
    try {
      await ref.create({ name: s.name, wrapped: s.wrapped, kekId: s.kekId, createdAt: s.createdAt });
      return s;
    } catch (err) {
      if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
    }
    return toSecret(await ref.get());
  }

  async get(name: string): Promise<StoredSecret | undefined> {
    const d = await this.meta.doc(name).get();
    return d.exists ? toSecret(d) : undefined;
  }

  rewrap(name: string, expected: Buffer, wrapped: Buffer, kekId: string): Promise<boolean> {
    return this.db.runTransaction(async (tx) => {
      const ref = this.meta.doc(name);
      const d = await tx.get(ref);
      if (!d.exists || !buf(d.get('wrapped')).equals(expected)) return false;
      tx.update(ref, { wrapped, kekId });
      return true;
    });
  }
}
