/**
 * The Firestore store's deployment secrets: meta/{name} holds a secret wrapped
 * by the KeyWrapper. create() makes the first instance's the only one; every
 * other instance reads it back. A rewrap is a compare-and-swap transaction.
 */
import type { DocumentSnapshot } from '@google-cloud/firestore';
import type { SecretStore, StoredSecret } from '../ports.js';
import { buf, Code, errCode, type FirestoreDb } from './db.js';

const toSecret = (d: DocumentSnapshot): StoredSecret => ({
  name: d.get('name'), wrapped: buf(d.get('wrapped')), kekId: d.get('kekId'), createdAt: d.get('createdAt'),
});

export class FirestoreSecrets implements SecretStore {
  constructor(private readonly db: FirestoreDb) {}

  createSecretIfAbsent(s: StoredSecret): Promise<StoredSecret> {
    return this.db.guard(async () => {
      const ref = this.db.meta.doc(s.name);
      try {
        await ref.create({ name: s.name, wrapped: s.wrapped, kekId: s.kekId, createdAt: s.createdAt });
        return s;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
      }
      return toSecret(await ref.get());
    });
  }

  getSecret(name: string): Promise<StoredSecret | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.meta.doc(name).get();
      return d.exists ? toSecret(d) : undefined;
    });
  }

  rewrapSecret(name: string, expected: Buffer, wrapped: Buffer, kekId: string): Promise<boolean> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      const ref = this.db.meta.doc(name);
      const d = await tx.get(ref);
      if (!d.exists || !buf(d.get('wrapped')).equals(expected)) return false;
      tx.update(ref, { wrapped, kekId });
      return true;
    }));
  }
}
