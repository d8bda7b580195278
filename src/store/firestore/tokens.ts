/**
 * The Firestore store's proxy tokens: tokens/{sha256 of the token} (O(1)
 * lookup by hash), with `orgId`, `credentialId` and `sortKey` for the other
 * reads (`createdBy`: who minted it; a minter lists only its own; `name` and
 * `namePrefixes`, names.ts). A token is created only while its
 * credential exists, without a transaction (see createToken). A revocation is
 * one batch: the token deleted under an exists precondition (one revoker wins;
 * its hash leaves the lookup path), its record kept in revoked_tokens/{tok_id}
 * (`sortKey` by revocation time) and the change that announces it.
 * `deleteTokensOf` is the second step of a credential's deletion.
 */
import type { CollectionReference, DocumentData, DocumentSnapshot, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, isPoolId, type NamedPageQuery, type Page, type RevokedTokenRecord, type TokenRecord, type TokenStore } from '../ports.js';
import type { FirestoreChanges } from './changes.js';
import { BATCH_WRITES, pageByOrg, sortKey, type FirestoreDb } from './db.js';
import { nameFields, renameDoc } from './names.js';

/** The fields a live token and its revocation record share. */
const common = (x: DocumentData): Omit<TokenRecord, 'tokenHash'> => ({
  id: x.id, orgId: x.orgId, credentialId: x.credentialId, scopes: JSON.parse(x.scopes), createdAt: x.createdAt, expiresAt: x.expiresAt,
  ...(typeof x.createdBy === 'string' ? { createdBy: x.createdBy } : {}),
  ...(typeof x.name === 'string' ? { name: x.name } : {}),
  ...(typeof x.teamId === 'string' ? { teamId: x.teamId } : {}),
  ...(typeof x.memberId === 'string' ? { memberId: x.memberId } : {}),
});

const toToken = (d: DocumentSnapshot): TokenRecord => ({ ...common(d.data()!), tokenHash: d.get('tokenHash') });
const toRevoked = (d: DocumentSnapshot): RevokedTokenRecord => ({ ...common(d.data()!), revokedAt: d.get('revokedAt'), revokedBy: d.get('revokedBy') });

/**
 * Deletes every token of a credential of `orgId`, in batches, with no change
 * per token: the credential's one change (in the batch that deleted it) covers
 * them all.
 */
export async function deleteTokensOf(db: FirestoreDb, credentialId: string, orgId: string): Promise<void> {
  for (;;) {
    const snap = await db.tokens.where('credentialId', '==', credentialId).where('orgId', '==', orgId).limit(BATCH_WRITES / 2).get();
    if (snap.empty) return;
    const batch = db.client.batch();
    for (const t of snap.docs) batch.delete(t.ref);
    await batch.commit();
  }
}

export class FirestoreTokens implements TokenStore {
  /** Revocation records by token id (the data model's revoked_tokens collection). */
  private readonly revoked: CollectionReference;

  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {
    this.revoked = db.client.collection('revoked_tokens');
  }

  /**
   * Without transaction isolation: (1) read the credential, (2) create the
   * token, (3) read the credential again and roll the token back if it is gone.
   * If (3) still sees the credential, the token's write precedes the deletion,
   * which precedes deleteCredential's token query, so that query finds and
   * deletes it. Either way no token outlives its credential. (Credential ids
   * are never reused.)
   */
  createToken(t: TokenRecord): Promise<'created' | 'no_credential'> {
    return this.db.guard(async () => {
      // A pooled token is bound to its pool (pool-port.ts) exactly as another is to its credential.
      const cred = (isPoolId(t.credentialId) ? this.db.pools : this.db.credentials).doc(t.credentialId);
      const before = await cred.get();
      if (!before.exists || before.get('orgId') !== t.orgId) return 'no_credential' as const;
      const ref = this.db.tokens.doc(t.tokenHash);
      await ref.create({
        id: t.id, orgId: t.orgId, credentialId: t.credentialId, tokenHash: t.tokenHash, scopes: JSON.stringify(t.scopes),
        createdAt: t.createdAt, expiresAt: t.expiresAt, sortKey: sortKey(t.createdAt, t.id), createdBy: t.createdBy, ...nameFields(t.name),
        ...(t.teamId !== undefined ? { teamId: t.teamId } : {}), ...(t.memberId !== undefined ? { memberId: t.memberId } : {}),
      });
      if (!(await cred.get()).exists) {
        await ref.delete();
        return 'no_credential' as const;
      }
      return 'created' as const;
    });
  }

  findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.db.tokens.doc(tokenHash).get();
      return d.exists ? toToken(d) : undefined;
    });
  }

  getToken(orgId: string, id: string): Promise<TokenRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.byId(id);
      return d && d.get('orgId') === orgId ? toToken(d) : undefined;
    });
  }

  getRevokedToken(orgId: string, id: string): Promise<RevokedTokenRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.revoked.doc(id).get();
      return d.exists && d.get('orgId') === orgId ? toRevoked(d) : undefined;
    });
  }

  listTokens(orgId: string, q: NamedPageQuery, createdBy?: string): Promise<Page<TokenRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db.tokens, orgId, q, (id) => this.byId(id), toToken, createdBy));
  }

  revokeToken(orgId: string, id: string, revokedAt: number, revokedBy: string): Promise<RevokedTokenRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.byId(id);
      if (!d || d.get('orgId') !== orgId) return undefined;
      const { tokenHash: _hash, sortKey: _key, ...kept } = d.data();
      const batch = this.db.client.batch();
      batch.delete(d.ref, { exists: true });
      // set, not create: the delete's precondition already lets one revoker through.
      batch.set(this.revoked.doc(id), { ...kept, revokedAt, revokedBy, sortKey: sortKey(revokedAt, id) });
      this.changes.publish(batch, 'token', id);
      if (!(await this.changes.commitUnlessGone(batch))) return undefined;
      return { ...common(kept), revokedAt, revokedBy };
    });
  }

  listRevokedTokens(orgId: string, q: NamedPageQuery, createdBy?: string): Promise<Page<RevokedTokenRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.revoked, orgId, q, async (id) => this.revoked.doc(id).get(), toRevoked, createdBy));
  }

  /** A token revoked meanwhile is not renamed (renameDoc's exists precondition). */
  setTokenName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(async () => renameDoc(await this.byId(id), orgId, name));
  }

  /** Documents are keyed by hash: a token's id is a query. */
  private async byId(id: string): Promise<QueryDocumentSnapshot | undefined> {
    const snap = await this.db.tokens.where('id', '==', id).limit(1).get();
    return snap.docs[0];
  }
}
