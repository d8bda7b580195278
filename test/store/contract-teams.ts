/**
 * The store contract's teams (contract.ts runs it for every adapter): create, get, list per organisation
 * (newest first, by name prefix), update with a `team` change heard by another store instance, deletion with
 * the team's tokens (a token bound to a team keeps its `teamId` and `memberId`, revoked too), and members'
 * budgets set, read, listed and cleared with a `member` change.
 */
import type { TestFn } from 'ava';
import { BAD_CURSOR, type OrgRecord, type Store, type TeamRecord, type TokenRecord } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { collect, type StoreHarness } from './contract.js';

async function org(store: Store): Promise<OrgRecord> {
  const o: OrgRecord = { id: newId('org'), name: 'acme', createdAt: Date.now() };
  await store.createOrg(o, { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: o.createdAt, expiresAt: null });
  return o;
}

const team = (orgId: string, createdAt: number, over: Partial<TeamRecord> = {}): TeamRecord => ({
  id: newId('team'), orgId, name: 'platform', members: ['usr_a1'], groups: ['eng'], budgetMicros: 5_000_000, tokensPerMinute: null,
  credentials: [], pools: [], maxTtlMs: 3_600_000, createdAt, updatedAt: createdAt, ...over,
});

export function teamContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('teams: create, get, list newest first by name prefix, org scoping, update announced, delete with its tokens'), async (t) => {
    const backend = await h.backend(t);
    const store = await backend.open();
    const other = await backend.open();
    const a = await org(store);
    const b = await org(store);
    const base = 1_700_000_000_000;
    const mine = [team(a.id, base, { name: 'Platform' }), team(a.id, base + 1, { name: 'research', budgetMicros: null, tokensPerMinute: 9000 })];
    for (const x of mine) await store.createTeam(x);
    await store.createTeam(team(b.id, base));
    t.deepEqual(await store.getTeam(a.id, mine[1]!.id), mine[1]);
    t.is(await store.getTeam(b.id, mine[0]!.id), undefined, 'another organisation\'s');
    const page = await store.listTeams(a.id, { limit: 1 });
    if (page === BAD_CURSOR) throw new Error('bad cursor');
    t.deepEqual(page.data.map((x) => x.id), [mine[1]!.id]);
    t.true(page.hasMore);
    const named = await store.listTeams(a.id, { limit: 10, namePrefix: 'plat' });
    t.deepEqual(named !== BAD_CURSOR && named.data.map((x) => x.id), [mine[0]!.id]);

    const heard = collect(other, (c) => c.kind === 'team' && c.id === mine[0]!.id, backend);
    const updated = await store.updateTeam(a.id, mine[0]!.id, { budgetMicros: null, tokensPerMinute: 1234, members: [], updatedAt: base + 5 });
    await heard.done();
    t.like(updated, { budgetMicros: null, tokensPerMinute: 1234, members: [], groups: ['eng'], name: 'Platform', updatedAt: base + 5 });
    t.is(await store.updateTeam(b.id, mine[0]!.id, { updatedAt: 1 }), undefined, 'another organisation cannot change it');

    // A token bound to the team and a member keeps both; deleting the team deletes its tokens, not others.
    const cred = newId('cred');
    await store.createCredential({ id: cred, orgId: a.id, provider: 'openai', keyHint: 'sk-…abcd', wrappedDek: Buffer.alloc(8), kekId: 'k', nonce: Buffer.alloc(12), ciphertext: Buffer.alloc(16), createdAt: base, updatedAt: base }, 100);
    const token = (teamId?: string): TokenRecord => ({
      id: newId('tok'), orgId: a.id, credentialId: cred, tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt: Date.now(), expiresAt: Date.now() + 900_000,
      ...(teamId ? { teamId, memberId: 'usr_a1' } : {}),
    });
    const bound = token(mine[0]!.id);
    const revoked = token(mine[0]!.id);
    const loose = token();
    for (const tk of [bound, revoked, loose]) t.is(await store.createToken(tk), 'created');
    t.deepEqual(await store.findTokenByHash(bound.tokenHash), bound);
    await store.revokeToken(a.id, revoked.id, base, 'cli');
    t.like(await store.getRevokedToken(a.id, revoked.id), { teamId: mine[0]!.id, memberId: 'usr_a1' }, 'a revoked token keeps its binding');
    t.false(await store.deleteTeam(b.id, mine[0]!.id));
    t.true(await store.deleteTeam(a.id, mine[0]!.id));
    t.false(await store.deleteTeam(a.id, mine[0]!.id), 'a second delete');
    t.is(await store.findTokenByHash(bound.tokenHash), undefined, 'its tokens went with it');
    t.truthy(await store.findTokenByHash(loose.tokenHash), 'a token of no team stays');
  });

  test(n('member budgets: set, read, listed per organisation, cleared; each change announced'), async (t) => {
    const backend = await h.backend(t);
    const store = await backend.open();
    const other = await backend.open();
    const a = await org(store);
    const b = await org(store);
    t.is(await store.getMemberBudget(a.id, 'usr_x1'), null);
    const heard = collect(other, (c) => c.kind === 'member' && c.id === 'usr_x1', backend);
    await store.putMemberBudget(a.id, 'usr_x1', 2_500_000);
    await heard.done();
    await store.putMemberBudget(a.id, 'usr_x1', 3_000_000);
    await store.putMemberBudget(a.id, 'usr_a0', 1);
    await store.putMemberBudget(b.id, 'usr_x1', 7);
    t.is(await other.getMemberBudget(a.id, 'usr_x1'), 3_000_000);
    t.deepEqual(await store.listMemberBudgets(a.id), [{ memberId: 'usr_a0', budgetMicros: 1 }, { memberId: 'usr_x1', budgetMicros: 3_000_000 }]);
    await store.putMemberBudget(a.id, 'usr_x1', null);
    t.is(await store.getMemberBudget(a.id, 'usr_x1'), null);
    t.is(await store.getMemberBudget(b.id, 'usr_x1'), 7, 'another organisation\'s member budget is its own');
  });
}
