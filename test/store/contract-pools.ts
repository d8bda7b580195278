/**
 * The store contract's pools (contract.ts runs it for every adapter): create, get, list per organisation
 * (newest first, paged, by name prefix), update with a `pool` change, a pooled token created only while
 * its pool exists and deleted with it, and a member's cooling stored (a later end kept) and announced to
 * another store instance on the same backend.
 */
import type { TestFn } from 'ava';
import { BAD_CURSOR, type OrgRecord, type PoolRecord, type Store, type TokenRecord } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { collect, type StoreHarness } from './contract.js';

async function org(store: Store): Promise<OrgRecord> {
  const o: OrgRecord = { id: newId('org'), name: 'acme', createdAt: Date.now() };
  await store.createOrg(o, { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: o.createdAt, expiresAt: null });
  return o;
}

const pool = (orgId: string, createdAt: number, over: Partial<PoolRecord> = {}): PoolRecord => ({
  id: newId('pool'), orgId, provider: 'openai', strategy: 'round_robin',
  members: [{ credentialId: newId('cred'), weight: 1 }, { credentialId: newId('cred'), weight: 2 }], cooling: {}, createdAt, updatedAt: createdAt, ...over,
});

const pooledToken = (orgId: string, poolId: string): TokenRecord => ({
  id: newId('tok'), orgId, credentialId: poolId, tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt: Date.now(), expiresAt: Date.now() + 900_000,
});

export function poolContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('pools: create, get, list newest first by name prefix with starting_after, org scoping, update'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const b = await org(store);
    const base = 1_700_000_000_000;
    const mine = [pool(a.id, base, { name: 'Prod OpenAI' }), pool(a.id, base + 1, { strategy: 'ordered' }), pool(a.id, base + 2, { name: 'prod backup' })];
    for (const p of mine) await store.createPool(p);
    const theirs = pool(b.id, base + 1);
    await store.createPool(theirs);

    t.deepEqual(await store.getPool(a.id, mine[0]!.id), mine[0]);
    t.is(await store.getPool(b.id, mine[0]!.id), undefined, 'another organisation does not see it');
    const p1 = await store.listPools(a.id, { limit: 2 });
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data.map((p) => p.id), [mine[2]!.id, mine[1]!.id]);
    t.true(p1.hasMore);
    const p2 = await store.listPools(a.id, { limit: 2, startingAfter: mine[1]!.id });
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data.map((p) => p.id), [mine[0]!.id]);
    t.is(await store.listPools(a.id, { limit: 2, startingAfter: theirs.id }), BAD_CURSOR);
    const named = await store.listPools(a.id, { limit: 10, namePrefix: 'PROD' });
    if (named === BAD_CURSOR) return t.fail();
    t.deepEqual(named.data.map((p) => p.id), [mine[2]!.id, mine[0]!.id], 'a case-insensitive name prefix');

    const members = [{ credentialId: newId('cred'), weight: 5 }];
    const updated = await store.updatePool(a.id, mine[0]!.id, { strategy: 'least_busy', members, name: null, updatedAt: base + 10 });
    const { name: _cleared, ...unnamed } = mine[0]!;
    t.deepEqual(updated, { ...unnamed, strategy: 'least_busy', members, updatedAt: base + 10 }, 'the name cleared, the rest as given');
    t.is(await store.updatePool(b.id, mine[1]!.id, { name: 'x', updatedAt: base }), undefined, 'another organisation cannot change it');
    t.deepEqual((await store.updatePool(a.id, mine[1]!.id, { name: 'renamed', updatedAt: base + 11 }))?.name, 'renamed');
    t.is((await store.getPool(a.id, mine[1]!.id))?.strategy, 'ordered', 'what a PATCH leaves out is kept');
  });

  test(n('pools: a pooled token is created only while its pool exists, and deleted with it'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const p = pool(a.id, Date.now());
    t.is(await store.createToken(pooledToken(a.id, p.id)), 'no_credential', 'no such pool yet');
    await store.createPool(p);
    const tokens = [pooledToken(a.id, p.id), pooledToken(a.id, p.id)];
    for (const tk of tokens) t.is(await store.createToken(tk), 'created');
    t.deepEqual(await store.findTokenByHash(tokens[0]!.tokenHash), tokens[0]);
    t.false(await store.deletePool(newId('org'), p.id), 'another organisation cannot delete it');
    t.true(await store.deletePool(a.id, p.id));
    t.false(await store.deletePool(a.id, p.id), 'a second delete');
    for (const tk of tokens) t.is(await store.findTokenByHash(tk.tokenHash), undefined, 'its tokens went with it');
    t.is(await store.createToken(pooledToken(a.id, p.id)), 'no_credential');
    t.is(await store.getPool(a.id, p.id), undefined);
  });

  test(n('pools: a member cooling is stored (a later end kept) and announced to another instance'), async (t) => {
    const backend = await h.backend(t);
    const store = await backend.open();
    const other = await backend.open();
    const a = await org(store);
    const p = pool(a.id, Date.now());
    await store.createPool(p);
    const member = p.members[0]!.credentialId;
    const heard = collect(other, (c) => c.kind === 'pool' && c.id === p.id, backend);
    t.true(await store.coolPoolMember(a.id, p.id, member, 2_000_000_000_000));
    await heard.done();
    t.true(await store.coolPoolMember(a.id, p.id, member, 1_900_000_000_000), 'an earlier end changes nothing');
    t.deepEqual((await other.getPool(a.id, p.id))?.cooling, { [member]: 2_000_000_000_000 });
    t.false(await store.coolPoolMember(a.id, newId('pool'), member, 1), 'no such pool');
  });
}
