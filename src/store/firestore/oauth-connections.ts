/**
 * The Firestore store's upstream OAuth connections: oauth_connections/{credential id}~{member id or "org"},
 * with `orgId` and `credentialId` for the per-credential reads. A refresh's write and a refusal's mark are
 * compare-and-swap transactions on the ciphertext read before the SaaS was asked.
 */
import type { DocumentSnapshot } from '@google-cloud/firestore';
import type { OAuthConnectionRecord, OAuthConnectionState, OAuthConnectionStore } from '../oauth-port.js';
import type { SealedKey } from '../sealed-key.js';
import type { FirestoreChanges } from './changes.js';
import { buf, type FirestoreDb } from './db.js';

const toConnection = (d: DocumentSnapshot): OAuthConnectionRecord => {
  const x = d.data()!;
  return {
    orgId: x.orgId, credentialId: x.credentialId, memberId: x.memberId, state: x.state, wrappedDek: buf(x.wrappedDek), kekId: x.kekId,
    nonce: buf(x.nonce), ciphertext: buf(x.ciphertext), connectedBy: x.connectedBy, connectedAt: x.connectedAt, updatedAt: x.updatedAt,
  };
};

/** Ids hold no `/` and no `~` (ids.ts), so the document id names one connection. */
const docId = (credentialId: string, memberId: string): string => `${credentialId}~${memberId === '' ? 'org' : memberId}`;

export class FirestoreOAuthConnections implements OAuthConnectionStore {
  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {}

  private get collection() {
    return this.db.client.collection('oauth_connections');
  }

  putOAuthConnection(c: OAuthConnectionRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.collection.doc(docId(c.credentialId, c.memberId)).set({ ...c });
    });
  }

  getOAuthConnection(orgId: string, credentialId: string, memberId: string): Promise<OAuthConnectionRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.collection.doc(docId(credentialId, memberId)).get();
      return d.exists && d.get('orgId') === orgId ? toConnection(d) : undefined;
    });
  }

  private swap(orgId: string, credentialId: string, memberId: string, expected: Buffer, update: Record<string, unknown>, connectedOnly: boolean): Promise<boolean> {
    return this.db.guard(() => this.db.client.runTransaction(async (tx) => {
      const ref = this.collection.doc(docId(credentialId, memberId));
      const d = await tx.get(ref);
      if (!d.exists || d.get('orgId') !== orgId || !buf(d.get('ciphertext')).equals(expected) || (connectedOnly && d.get('state') !== 'connected')) return false;
      tx.update(ref, update);
      return true;
    }));
  }

  replaceOAuthTokens(orgId: string, credentialId: string, memberId: string, expected: Buffer, s: SealedKey, updatedAt: number): Promise<boolean> {
    return this.swap(orgId, credentialId, memberId, expected, { wrappedDek: s.wrappedDek, kekId: s.kekId, nonce: s.nonce, ciphertext: s.ciphertext, updatedAt }, true);
  }

  markOAuthReconnect(orgId: string, credentialId: string, memberId: string, expected: Buffer, updatedAt: number): Promise<boolean> {
    return this.swap(orgId, credentialId, memberId, expected, { state: 'reconnect', updatedAt }, false);
  }

  countOAuthConnections(orgId: string, credentialId: string): Promise<Record<OAuthConnectionState, number>> {
    return this.db.guard(async () => {
      const snap = await this.collection.where('orgId', '==', orgId).where('credentialId', '==', credentialId).select('state').get();
      const counts: Record<OAuthConnectionState, number> = { connected: 0, reconnect: 0 };
      for (const d of snap.docs) {
        const state = d.get('state');
        if (state === 'connected' || state === 'reconnect') counts[state as OAuthConnectionState]++;
      }
      return counts;
    });
  }

  deleteOAuthConnections(orgId: string, credentialId: string, memberId?: string): Promise<number> {
    return this.db.guard(async () => {
      let query = this.collection.where('orgId', '==', orgId).where('credentialId', '==', credentialId);
      if (memberId !== undefined) query = query.where('memberId', '==', memberId);
      const snap = await query.select().get();
      if (snap.size === 0) return 0;
      const batch = this.db.client.batch();
      for (const d of snap.docs) batch.delete(d.ref);
      // Every instance drops the access tokens it holds for the credential (vault/oauth-connections.ts).
      this.changes.publish(batch, 'credential', credentialId);
      await this.changes.commit(batch);
      return snap.size;
    });
  }
}
