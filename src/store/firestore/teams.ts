/**
 * The Firestore store's teams (team-port.ts): teams/{id}, with `orgId` and `sortKey` for an organisation's
 * list (the pools' indexes; names as names.ts stores them), and member_budgets/{org id}|{member id}. Every
 * change is one batch with the change that announces it (`team`, `member`), under an exists precondition for
 * a team's update, so a team deleted meanwhile is not made again. Deletion is the pools' two steps: the team
 * (with its change), then its tokens; a token minted for the team meanwhile is refused by every instance
 * (the team's limits read it as gone: src/vault/team-limits.ts) and deleted by a retried delete.
 */
import type { DocumentData, DocumentSnapshot } from '@google-cloud/firestore';
import { BAD_CURSOR, type MemberBudget, type NamedPageQuery, type Page, type TeamRecord, type TeamStore, type TeamUpdate } from '../ports.js';
import type { FirestoreChanges } from './changes.js';
import { BATCH_WRITES, pageByOrg, sortKey, type FirestoreDb } from './db.js';
import { nameFields } from './names.js';

const toTeam = (d: DocumentSnapshot): TeamRecord => {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, name: x.name, members: x.members ?? [], groups: x.groups ?? [], budgetMicros: x.budgetMicros ?? null,
    tokensPerMinute: x.tokensPerMinute ?? null, credentials: x.credentials ?? [], pools: x.pools ?? [], maxTtlMs: x.maxTtlMs,
    createdAt: x.createdAt, updatedAt: x.updatedAt,
  };
};

/** A document id must not hold a slash (it would name another path). */
const usable = (id: string): boolean => id.length > 0 && id.length <= 64 && !id.includes('/');

/** Deletes every token bound to team `teamId` of `orgId`, in batches (the team's one change covers them). */
async function deleteTeamTokens(db: FirestoreDb, teamId: string, orgId: string): Promise<void> {
  for (;;) {
    const snap = await db.tokens.where('teamId', '==', teamId).where('orgId', '==', orgId).limit(BATCH_WRITES / 2).get();
    if (snap.empty) return;
    const batch = db.client.batch();
    for (const t of snap.docs) batch.delete(t.ref);
    await batch.commit();
  }
}

export class FirestoreTeams implements TeamStore {
  constructor(private readonly db: FirestoreDb, private readonly changes: FirestoreChanges) {}

  private get teams() {
    return this.db.client.collection('teams');
  }

  private get budgets() {
    return this.db.client.collection('member_budgets');
  }

  createTeam(t: TeamRecord): Promise<void> {
    return this.db.guard(async () => {
      await this.teams.doc(t.id).create({
        id: t.id, orgId: t.orgId, members: t.members, groups: t.groups, budgetMicros: t.budgetMicros, tokensPerMinute: t.tokensPerMinute,
        credentials: t.credentials, pools: t.pools, maxTtlMs: t.maxTtlMs, createdAt: t.createdAt, updatedAt: t.updatedAt,
        sortKey: sortKey(t.createdAt, t.id), ...nameFields(t.name),
      });
    });
  }

  getTeam(orgId: string, id: string): Promise<TeamRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      return d && d.get('orgId') === orgId ? toTeam(d) : undefined;
    });
  }

  listTeams(orgId: string, q: NamedPageQuery): Promise<Page<TeamRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.teams, orgId, q, (id) => this.read(id), toTeam));
  }

  updateTeam(orgId: string, id: string, u: TeamUpdate): Promise<TeamRecord | undefined> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      if (!d || d.get('orgId') !== orgId) return undefined;
      const change: DocumentData = { updatedAt: u.updatedAt };
      for (const field of ['members', 'groups', 'budgetMicros', 'tokensPerMinute', 'credentials', 'pools', 'maxTtlMs'] as const) {
        if (u[field] !== undefined) change[field] = u[field];
      }
      if (u.name !== undefined) Object.assign(change, nameFields(u.name));
      const batch = this.db.client.batch();
      batch.update(d.ref, change, { exists: true });
      this.changes.publish(batch, 'team', id);
      if (!(await this.changes.commitUnlessGone(batch))) return undefined;
      const after = await d.ref.get();
      return after.exists ? toTeam(after) : undefined;
    });
  }

  deleteTeam(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(async () => {
      const d = await this.read(id);
      if (!d) {
        // Gone already. If a delete died between its two steps, its tokens are still here: finish the job.
        await deleteTeamTokens(this.db, id, orgId);
        return false;
      }
      if (d.get('orgId') !== orgId) return false;
      const batch = this.db.client.batch();
      batch.delete(d.ref, { exists: true });
      this.changes.publish(batch, 'team', id);
      if (!(await this.changes.commitUnlessGone(batch))) return false;
      await deleteTeamTokens(this.db, id, orgId);
      return true;
    });
  }

  putMemberBudget(orgId: string, memberId: string, micros: number | null): Promise<void> {
    return this.db.guard(async () => {
      const batch = this.db.client.batch();
      const ref = this.budgets.doc(`${orgId}|${memberId}`);
      if (micros === null) batch.delete(ref);
      else batch.set(ref, { orgId, memberId, budgetMicros: micros });
      this.changes.publish(batch, 'member', memberId);
      await batch.commit();
    });
  }

  getMemberBudget(orgId: string, memberId: string): Promise<number | null> {
    return this.db.guard(async () => {
      if (!usable(`${orgId}|${memberId}`)) return null;
      const d = await this.budgets.doc(`${orgId}|${memberId}`).get();
      return d.exists ? (d.get('budgetMicros') as number) : null;
    });
  }

  listMemberBudgets(orgId: string): Promise<MemberBudget[]> {
    return this.db.guard(async () => {
      const snap = await this.budgets.where('orgId', '==', orgId).get();
      return snap.docs.map((d) => ({ memberId: d.get('memberId') as string, budgetMicros: d.get('budgetMicros') as number }))
        .sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0));
    });
  }

  private async read(id: string): Promise<DocumentSnapshot | undefined> {
    if (!usable(id)) return undefined;
    const d = await this.teams.doc(id).get();
    return d.exists ? d : undefined;
  }
}
