/**
 * The Firestore store's trust policies: trust_policies/{id}, with `orgId` and `sortKey` for an
 * organisation's list (the same composite index as credentials and tokens: orgId, sortKey desc)
 * and `issuer` + `audience` for an exchange's lookup (two equality filters, served by Firestore's
 * single-field indexes; sorted here, oldest first). Claims and scopes are JSON strings, as tokens'
 * scopes are; `expiresAt` is null (or absent, on a policy written before it) for none. A delete reads the policy's organisation, then deletes under an exists precondition
 * (of two deleters, one wins).
 */
import type { CollectionReference, DocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type Page, type PageQuery, type TrustPolicyRecord, type TrustPolicyStore } from '../ports.js';
import { deleteOwned, pageByOrg, sortKey, type FirestoreDb } from './db.js';

const toPolicy = (d: DocumentSnapshot): TrustPolicyRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, issuer: x.issuer, audience: x.audience, subject: x.subject, claims: JSON.parse(x.claims),
    credentialId: x.credentialId, ttl: x.ttl, scopes: JSON.parse(x.scopes), createdAt: x.createdAt, expiresAt: x.expiresAt ?? null,
  };
};

/** A document id must not hold a slash (it would name another path); ids are checked upstream, this is the last word. */
const usable = (id: string): boolean => id.length > 0 && id.length <= 64 && !id.includes('/');

export class FirestoreTrustPolicies implements TrustPolicyStore {
  private readonly coll: CollectionReference;

  constructor(private readonly db: FirestoreDb) {
    this.coll = db.client.collection('trust_policies');
  }

  createTrustPolicy(p: TrustPolicyRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.coll.doc(p.id).create({
        id: p.id, orgId: p.orgId, issuer: p.issuer, audience: p.audience, subject: p.subject, claims: JSON.stringify(p.claims),
        credentialId: p.credentialId, ttl: p.ttl, scopes: JSON.stringify(p.scopes), createdAt: p.createdAt, expiresAt: p.expiresAt, sortKey: sortKey(p.createdAt, p.id),
      });
    });
  }

  getTrustPolicy(orgId: string, id: string): Promise<TrustPolicyRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      return d && d.get('orgId') === orgId ? toPolicy(d) : undefined;
    });
  }

  listTrustPolicies(orgId: string, q: PageQuery): Promise<Page<TrustPolicyRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.coll, orgId, q, (id) => this.read(id), toPolicy));
  }

  deleteTrustPolicy(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => deleteOwned(await this.read(id), orgId));
  }

  findTrustPolicy(id: string): Promise<TrustPolicyRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      return d ? toPolicy(d) : undefined;
    });
  }

  findTrustPolicies(issuer: string, audience: string): Promise<TrustPolicyRecord[]> {
    return this.db.guard(async () => {
      const snap = await this.coll.where('issuer', '==', issuer).where('audience', '==', audience).get();
      return snap.docs.map(toPolicy).sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    });
  }

  private async read(id: string): Promise<DocumentSnapshot | undefined> {
    if (!usable(id)) return undefined;
    const d = await this.coll.doc(id).get();
    return d.exists ? d : undefined;
  }
}
