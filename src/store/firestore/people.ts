/**
 * The Firestore store's people (people-port.ts): sso_configs/{org id}; members/{SHA-256 of org, issuer and
 * subject} (create() makes one member per issuer and subject on every instance; `id`, `orgId` and `sortKey`
 * for the other reads); sessions/{SHA-256 of the session's value} with `memberId` for a member's deletion,
 * which deletes the member under an exists precondition (one deleter wins) and then its sessions in batches.
 * A session minted while its member is being deleted is refused anyway: every use reads the member too.
 */
import { createHash } from 'node:crypto';
import type { CollectionReference, DocumentSnapshot, QueryDocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type MemberRecord, type Page, type PageQuery, type PeopleStore, type SessionRecord, type SsoConfigRecord } from '../ports.js';
import { BATCH_WRITES, buf, Code, deleteOwned, errCode, pageByOrg, sortKey, type FirestoreDb } from './db.js';

const memberKey = (orgId: string, issuer: string, subject: string): string =>
  createHash('sha256').update(JSON.stringify([orgId, issuer, subject])).digest('hex');

const toSso = (d: DocumentSnapshot): SsoConfigRecord => {
  const x = d.data()!;
  return {
    orgId: x.orgId, issuer: x.issuer, clientId: x.clientId, allowedDomains: x.allowedDomains ?? [], groupsClaim: x.groupsClaim ?? null,
    roleMap: JSON.parse(x.roleMap), secretHint: x.secretHint, wrappedDek: buf(x.wrappedDek), kekId: x.kekId, nonce: buf(x.nonce),
    ciphertext: buf(x.ciphertext), updatedAt: x.updatedAt,
  };
};

const toMember = (d: DocumentSnapshot): MemberRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, issuer: x.issuer, subject: x.subject, email: x.email ?? null, name: x.name ?? null, role: x.role,
    budgetMicros: x.budgetMicros ?? null, createdAt: x.createdAt, lastSignInAt: x.lastSignInAt, ...(Array.isArray(x.groups) ? { groups: x.groups } : {}),
  };
};

const toSession = (d: DocumentSnapshot): SessionRecord => {
  const x = d.data()!;
  return { hash: d.id, orgId: x.orgId, memberId: x.memberId, kind: x.kind, createdAt: x.createdAt, expiresAt: x.expiresAt };
};

export class FirestorePeople implements PeopleStore {
  private readonly sso: CollectionReference;
  private readonly members: CollectionReference;
  private readonly sessions: CollectionReference;

  constructor(private readonly db: FirestoreDb) {
    this.sso = db.client.collection('sso_configs');
    this.members = db.client.collection('members');
    this.sessions = db.client.collection('sessions');
  }

  putSsoConfig(s: SsoConfigRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.sso.doc(s.orgId).set({
        orgId: s.orgId, issuer: s.issuer, clientId: s.clientId, allowedDomains: s.allowedDomains, groupsClaim: s.groupsClaim,
        roleMap: JSON.stringify(s.roleMap), secretHint: s.secretHint, wrappedDek: s.wrappedDek, kekId: s.kekId, nonce: s.nonce,
        ciphertext: s.ciphertext, updatedAt: s.updatedAt,
      });
    });
  }

  getSsoConfig(orgId: string): Promise<SsoConfigRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.sso.doc(orgId).get();
      return d.exists ? toSso(d) : undefined;
    });
  }

  signInMember(m: MemberRecord): Promise<MemberRecord> {
    return this.db.guard(async () => {
      const ref = this.members.doc(memberKey(m.orgId, m.issuer, m.subject));
      try {
        await ref.create({
          id: m.id, orgId: m.orgId, issuer: m.issuer, subject: m.subject, email: m.email, name: m.name, role: m.role,
          budgetMicros: m.budgetMicros, createdAt: m.createdAt, lastSignInAt: m.lastSignInAt, sortKey: sortKey(m.createdAt, m.id), groups: m.groups ?? null,
        });
        return m;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
      }
      await ref.update({ email: m.email, name: m.name, role: m.role, lastSignInAt: m.lastSignInAt, groups: m.groups ?? null });
      return toMember(await ref.get());
    });
  }

  getMember(orgId: string, id: string): Promise<MemberRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.byId(id);
      return d && d.get('orgId') === orgId ? toMember(d) : undefined;
    });
  }

  listMembers(orgId: string, q: PageQuery): Promise<Page<MemberRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.members, orgId, q, (id) => this.byId(id), toMember));
  }

  setMemberBudget(orgId: string, id: string, micros: number | null): Promise<boolean> {
    return this.db.guard(async () => {
      const d = await this.byId(id);
      if (!d || d.get('orgId') !== orgId) return false;
      try {
        await d.ref.update({ budgetMicros: micros });
        return true;
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false;
        throw err;
      }
    });
  }

  deleteMember(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => {
      if (!(await deleteOwned(await this.byId(id), orgId))) return false;
      for (;;) {
        const snap = await this.sessions.where('memberId', '==', id).limit(BATCH_WRITES).get();
        if (snap.empty) return true;
        const batch = this.db.client.batch();
        for (const s of snap.docs) batch.delete(s.ref);
        await batch.commit();
      }
    });
  }

  createSession(s: SessionRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.sessions.doc(s.hash).create({ orgId: s.orgId, memberId: s.memberId, kind: s.kind, createdAt: s.createdAt, expiresAt: s.expiresAt });
    });
  }

  findSession(hash: string): Promise<SessionRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.sessions.doc(hash).get();
      return d.exists ? toSession(d) : undefined;
    });
  }

  deleteSession(hash: string): Promise<boolean> {
    return this.db.guard(async () => {
      try {
        await this.sessions.doc(hash).delete({ exists: true });
        return true;
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false;
        throw err;
      }
    });
  }

  memberTokenIds(orgId: string, memberId: string): Promise<string[]> {
    return this.db.guard(async () => {
      const snap = await this.db.tokens.where('orgId', '==', orgId).where('memberId', '==', memberId).get();
      return snap.docs.map((d) => d.get('id') as string);
    });
  }

  /** Members are keyed by issuer and subject: an id is a query. */
  private async byId(id: string): Promise<QueryDocumentSnapshot | undefined> {
    const snap = await this.members.where('id', '==', id).limit(1).get();
    return snap.docs[0];
  }
}
