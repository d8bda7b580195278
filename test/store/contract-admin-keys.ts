/**
 * The store contract's admin-key part (contract.ts runs it for every adapter): keys are found by
 * hash, read, listed newest first and deleted once, per organisation, with their role, credential
 * list and expiry as stored; and proxy tokens keep who minted them, so a minter's list is its own.
 */
import type { TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { BAD_CURSOR, type AdminKeyRecord, type OrgRecord, type Store, type TokenRecord } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

async function org(store: Store, name = 'acme'): Promise<OrgRecord> {
  const o: OrgRecord = { id: newId('org'), name, createdAt: Date.now() };
  await store.createOrg(o, { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: o.createdAt, expiresAt: null });
  return o;
}

function key(orgId: string, createdAt: number, extra: Partial<AdminKeyRecord> = {}): AdminKeyRecord {
  return { id: newId('akey'), orgId, name: 'ci', role: 'viewer', tokenHash: sha256Hex(newToken('otok')), createdAt, expiresAt: null, createdBy: newId('otk'), ...extra };
}

export function adminKeyContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('createAdminKey, findAdminKeyByHash, getAdminKey read back every field; another org sees nothing'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const b = await org(store, 'other');
    const base = 1_700_000_000_000;
    const minter = key(a.id, base, { role: 'minter', credentialIds: [newId('cred'), newId('cred')], expiresAt: base + 3_600_000, name: 'deploy (eu)' });
    const admin = key(a.id, base + 1, { role: 'admin', createdBy: 'cli' });
    await store.createAdminKey(minter);
    await store.createAdminKey(admin);
    t.deepEqual(await store.findAdminKeyByHash(minter.tokenHash), minter);
    t.deepEqual(await store.findAdminKeyByHash(admin.tokenHash), admin);
    t.deepEqual(await store.getAdminKey(a.id, minter.id), minter);
    t.is(await store.getAdminKey(b.id, minter.id), undefined);
    t.is(await store.findAdminKeyByHash(sha256Hex(newToken('otok'))), undefined);
    // An admin key is not an org token, nor the reverse.
    t.is(await store.findOrgToken(admin.tokenHash), undefined);
  });

  test(n('listAdminKeys pages newest first per org; deleteAdminKey is true once and only for its org'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const b = await org(store, 'other');
    const base = 1_700_000_000_000;
    const keys = [key(a.id, base), key(a.id, base + 1), key(a.id, base + 1), key(a.id, base + 4)];
    for (const k of keys) await store.createAdminKey(k);
    const foreign = key(b.id, base + 2);
    await store.createAdminKey(foreign);
    const expected = [...keys].sort((x, y) => y.createdAt - x.createdAt || (x.id < y.id ? 1 : -1)).map((x) => x.id);
    const p1 = await store.listAdminKeys(a.id, { limit: 3 });
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data.map((x) => x.id), expected.slice(0, 3));
    t.true(p1.hasMore);
    const p2 = await store.listAdminKeys(a.id, { limit: 3, startingAfter: p1.data[2]!.id });
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data.map((x) => x.id), expected.slice(3));
    t.false(p2.hasMore);
    t.is(await store.listAdminKeys(a.id, { limit: 3, startingAfter: foreign.id }), BAD_CURSOR);
    t.is(await store.listAdminKeys(a.id, { limit: 3, startingAfter: newId('akey') }), BAD_CURSOR);

    t.false(await store.deleteAdminKey(b.id, keys[0]!.id));
    t.true(await store.deleteAdminKey(a.id, keys[0]!.id));
    t.false(await store.deleteAdminKey(a.id, keys[0]!.id));
    t.is(await store.findAdminKeyByHash(keys[0]!.tokenHash), undefined);
    t.is(await store.getAdminKey(a.id, keys[0]!.id), undefined);
    const after = await store.listAdminKeys(a.id, { limit: 10 });
    t.deepEqual(after !== BAD_CURSOR && after.data.map((x) => x.id), expected.filter((id) => id !== keys[0]!.id));
    t.truthy(await store.getAdminKey(b.id, foreign.id));
  });

  test(n('tokens keep createdBy; listTokens(createdBy) pages only that caller\'s, a cursor outside them is BAD_CURSOR'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const now = Date.now();
    const cred = { id: newId('cred'), orgId: a.id, provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41), fields: {}, createdAt: now, updatedAt: now };
    await store.createCredential(cred, 10);
    const minter = newId('akey');
    const tok = (createdAt: number, createdBy?: string): TokenRecord => ({
      id: newId('tok'), orgId: a.id, credentialId: cred.id, tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt, expiresAt: createdAt + 900_000,
      ...(createdBy !== undefined ? { createdBy } : {}),
    });
    const base = 1_700_000_000_000;
    const mine = [tok(base, minter), tok(base + 2, minter), tok(base + 4, minter)];
    const others = [tok(base + 1, newId('otk')), tok(base + 3)];
    for (const x of [...mine, ...others]) t.is(await store.createToken(x), 'created');
    t.is((await store.getToken(a.id, mine[0]!.id))?.createdBy, minter);
    t.is((await store.findTokenByHash(others[1]!.tokenHash))?.createdBy, undefined);
    const p1 = await store.listTokens(a.id, { limit: 2 }, minter);
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data.map((x) => x.id), [mine[2]!.id, mine[1]!.id]);
    t.true(p1.hasMore);
    const p2 = await store.listTokens(a.id, { limit: 2, startingAfter: mine[1]!.id }, minter);
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data.map((x) => x.id), [mine[0]!.id]);
    t.false(p2.hasMore);
    t.is(await store.listTokens(a.id, { limit: 2, startingAfter: others[0]!.id }, minter), BAD_CURSOR);
    const all = await store.listTokens(a.id, { limit: 10 });
    t.is(all !== BAD_CURSOR && all.data.length, 5);
  });
}
