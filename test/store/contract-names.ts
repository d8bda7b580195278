/**
 * The store contract's names and revocations (contract.ts runs it for every adapter): credentials, tokens
 * and admin keys keep an optional name, set, cleared and found by a case-insensitive prefix (the same
 * records on both adapters, whatever the characters: a property run against a model of the rule); a
 * revoked token leaves the lookup path and is kept, without its hash, in its own newest-revoked-first
 * list; audit records keep their target's name.
 */
import type { TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { BAD_CURSOR, type AdminKeyRecord, type CredentialRecord, type OrgRecord, type Page, type Store, type TokenRecord } from '../../src/store/ports.js';
import { nameKey } from '../../src/store/name-key.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

async function org(store: Store, name = 'acme'): Promise<OrgRecord> {
  const o: OrgRecord = { id: newId('org'), name, createdAt: Date.now() };
  await store.createOrg(o, { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: o.createdAt, expiresAt: null });
  return o;
}

const credential = (orgId: string, createdAt: number, name?: string): CredentialRecord => ({
  id: newId('cred'), orgId, provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41),
  fields: {}, createdAt, updatedAt: createdAt, ...(name !== undefined ? { name } : {}),
});

const token = (orgId: string, credentialId: string, createdAt: number, extra: Partial<TokenRecord> = {}): TokenRecord => ({
  id: newId('tok'), orgId, credentialId, tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt, expiresAt: createdAt + 900_000, ...extra,
});

const adminKey = (orgId: string, createdAt: number, name?: string): AdminKeyRecord => ({
  id: newId('akey'), orgId, role: 'viewer', tokenHash: sha256Hex(newToken('otok')), createdAt, expiresAt: null, createdBy: 'cli', ...(name !== undefined ? { name } : {}),
});

const ids = <T extends { id: string }>(p: Page<T> | typeof BAD_CURSOR): string[] | 'bad' => (p === BAD_CURSOR ? 'bad' : p.data.map((x) => x.id));

/** A small random generator with a seed, so a failing run can be repeated. */
function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0;
    return x / 2 ** 32;
  };
}

/** Characters that fold in interesting ways: cases, accents, ß, dotted İ, a surrogate pair, CJK, a space. */
const ALPHABET = ['a', 'A', 'b', 'B', 'é', 'É', 'ß', 'İ', 'i', '😀', '語', ' ', '-', '_', '1'];

export function namesContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('names: credentials, tokens and admin keys keep theirs (or none), set and clear it, only for their own org'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const b = await org(store, 'other');
    const now = Date.now();
    const named = credential(a.id, now, 'Prod OpenAI');
    const plain = credential(a.id, now + 1);
    for (const c of [named, plain]) t.is(await store.createCredential(c, 10), 'created');
    t.is((await store.getCredential(a.id, named.id))?.name, 'Prod OpenAI');
    t.false('name' in (await store.getCredential(a.id, plain.id))!);
    const tk = token(a.id, named.id, now, { name: 'evals agent', createdBy: 'cli' });
    t.is(await store.createToken(tk), 'created');
    t.deepEqual(await store.findTokenByHash(tk.tokenHash), tk);
    const key = adminKey(a.id, now, 'deploy bot');
    const unnamedKey = adminKey(a.id, now + 1);
    await store.createAdminKey(key);
    await store.createAdminKey(unnamedKey);
    t.deepEqual(await store.getAdminKey(a.id, key.id), key);
    t.deepEqual(await store.findAdminKeyByHash(unnamedKey.tokenHash), unnamedKey);

    t.true(await store.setCredentialName(a.id, plain.id, 'staging'));
    t.is((await store.getCredential(a.id, plain.id))?.name, 'staging');
    t.true(await store.setCredentialName(a.id, named.id, null));
    t.false('name' in (await store.getCredential(a.id, named.id))!);
    t.true(await store.setTokenName(a.id, tk.id, 'renamed'));
    t.is((await store.getToken(a.id, tk.id))?.name, 'renamed');
    t.true(await store.setAdminKeyName(a.id, unnamedKey.id, 'ci'));
    t.is((await store.getAdminKey(a.id, unnamedKey.id))?.name, 'ci');
    t.true(await store.setAdminKeyName(a.id, key.id, null));
    t.false('name' in (await store.getAdminKey(a.id, key.id))!);
    // Another organisation's ids, and ids that do not exist, are not renamed.
    t.false(await store.setCredentialName(b.id, plain.id, 'x'));
    t.false(await store.setTokenName(b.id, tk.id, 'x'));
    t.false(await store.setAdminKeyName(b.id, unnamedKey.id, 'x'));
    t.false(await store.setCredentialName(a.id, newId('cred'), 'x'));
    t.false(await store.setTokenName(a.id, newId('tok'), 'x'));
    t.false(await store.setAdminKeyName(a.id, newId('akey'), 'x'));
    t.is((await store.getCredential(a.id, plain.id))?.name, 'staging');
    // A revoked token is not renamed (nor brought back).
    await store.revokeToken(a.id, tk.id, now + 5, 'cli');
    t.false(await store.setTokenName(a.id, tk.id, 'ghost'));
    t.is(await store.getToken(a.id, tk.id), undefined);
  });

  test(n('namePrefix: lists keep the names starting with it in any case, newest first, paged; unnamed never match'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const b = await org(store, 'other');
    const base = 1_700_000_000_000;
    const names = ['Prod OpenAI', 'prod anthropic', 'PRODUCTION eu', 'staging', undefined, 'pro'];
    const creds = names.map((name, i) => credential(a.id, base + i, name));
    for (const c of creds) await store.createCredential(c, 10);
    await store.createCredential(credential(b.id, base + 9, 'prod elsewhere'), 10);
    const newest = (xs: CredentialRecord[]) => xs.sort((x, y) => y.createdAt - x.createdAt).map((x) => x.id);
    const prod = newest(creds.filter((c) => c.name !== undefined && c.name.toLowerCase().startsWith('prod')));
    t.deepEqual(ids(await store.listCredentials(a.id, { limit: 10, namePrefix: 'PROD' })), prod);
    t.deepEqual(ids(await store.listCredentials(a.id, { limit: 10, namePrefix: 'prod ' })), newest(creds.filter((c) => /^prod /i.test(c.name ?? ''))));
    t.deepEqual(ids(await store.listCredentials(a.id, { limit: 10, namePrefix: 'nothing' })), []);
    // Paged within the filter; a cursor is a position among the org's records, named or not.
    const p1 = await store.listCredentials(a.id, { limit: 2, namePrefix: 'prod' });
    t.deepEqual(ids(p1), prod.slice(0, 2));
    t.true(p1 !== BAD_CURSOR && p1.hasMore);
    t.deepEqual(ids(await store.listCredentials(a.id, { limit: 2, namePrefix: 'prod', startingAfter: prod[1]! })), prod.slice(2));
    const unnamed = creds.find((c) => c.name === undefined)!;
    t.deepEqual(ids(await store.listCredentials(a.id, { limit: 10, namePrefix: 'prod', startingAfter: unnamed.id })), prod.filter((id) => creds.find((c) => c.id === id)!.createdAt < unnamed.createdAt));
    t.is(await store.listCredentials(a.id, { limit: 2, namePrefix: 'prod', startingAfter: newId('cred') }), BAD_CURSOR);

    // Tokens (with a minter's own list) and admin keys filter the same way.
    const c = creds[0]!;
    const minter = newId('akey');
    const toks = [
      token(a.id, c.id, base, { name: 'Agent one', createdBy: minter }), token(a.id, c.id, base + 1, { name: 'agent two' }),
      token(a.id, c.id, base + 2, { createdBy: minter }), token(a.id, c.id, base + 3, { name: 'AGENT three', createdBy: minter }),
    ];
    for (const x of toks) await store.createToken(x);
    t.deepEqual(ids(await store.listTokens(a.id, { limit: 10, namePrefix: 'agent' })), [toks[3]!.id, toks[1]!.id, toks[0]!.id]);
    t.deepEqual(ids(await store.listTokens(a.id, { limit: 10, namePrefix: 'agent' }, minter)), [toks[3]!.id, toks[0]!.id]);
    const keys = [adminKey(a.id, base, 'Deploy'), adminKey(a.id, base + 1), adminKey(a.id, base + 2, 'deploy eu')];
    for (const k of keys) await store.createAdminKey(k);
    t.deepEqual(ids(await store.listAdminKeys(a.id, { limit: 10, namePrefix: 'DEPLOY' })), [keys[2]!.id, keys[0]!.id]);
    // A rename moves a record in or out of a prefix's list.
    await store.setAdminKeyName(a.id, keys[1]!.id, 'deployer');
    await store.setAdminKeyName(a.id, keys[2]!.id, null);
    t.deepEqual(ids(await store.listAdminKeys(a.id, { limit: 10, namePrefix: 'deploy' })), [keys[1]!.id, keys[0]!.id]);
  });

  test(n('namePrefix property: for random names and prefixes the list is exactly the names whose folded form starts with the folded prefix'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const seed = Date.now() % 100_000;
    const rand = rng(seed);
    const word = (len: number) => Array.from({ length: len }, () => ALPHABET[Math.floor(rand() * ALPHABET.length)]!).join('');
    const base = 1_700_000_000_000;
    const made: CredentialRecord[] = [];
    for (let i = 0; i < 8; i++) {
      // Names never start or end with a space (the API's rule); the store must not care either way.
      const name = `x${word(1 + Math.floor(rand() * 6))}z`;
      const c = credential(a.id, base + i, name);
      made.push(c);
      t.is(await store.createCredential(c, 100), 'created');
    }
    const prefixes = [
      ...made.map((c) => Array.from(c.name!).slice(0, 1 + Math.floor(rand() * Array.from(c.name!).length)).join('')),
      ...made.map((c) => Array.from(c.name!).slice(0, 3).map((ch) => (rand() < 0.5 ? ch.toUpperCase() : ch.toLowerCase())).join('')),
      `x${word(2)}`, 'X', 'xİ', 'xi',
    ];
    for (const prefix of prefixes) {
      const want = made.filter((c) => nameKey(c.name!).startsWith(nameKey(prefix))).sort((x, y) => y.createdAt - x.createdAt).map((c) => c.id);
      t.deepEqual(ids(await store.listCredentials(a.id, { limit: 100, namePrefix: prefix })), want, `seed ${seed}, prefix ${JSON.stringify(prefix)}`);
    }
  });

  test(n('revokeToken: the hash leaves the lookup path, the record is kept once without it; listRevokedTokens pages by revocation time'), async (t) => {
    const backend = await h.backend(t);
    const [store, other] = [await backend.open(), await backend.open()];
    const a = await org(store);
    const b = await org(store, 'other');
    const c = credential(a.id, Date.now());
    await store.createCredential(c, 10);
    const cb = credential(b.id, Date.now());
    await store.createCredential(cb, 10);
    const base = 1_700_000_000_000;
    const minter = newId('akey');
    const toks = [
      token(a.id, c.id, base, { name: 'first', scopes: { models: ['gpt-4o-mini'], maxRequests: 5 }, createdBy: minter }),
      token(a.id, c.id, base + 1, { name: 'Second' }), token(a.id, c.id, base + 2, { createdBy: minter }), token(a.id, c.id, base + 3),
    ];
    for (const x of toks) await store.createToken(x);
    const foreign = token(b.id, cb.id, base);
    await store.createToken(foreign);
    t.deepEqual(ids(await store.listRevokedTokens(a.id, { limit: 10 })), []);

    // Revoked in another order than minted: the list follows revocation time.
    const order = [toks[2]!, toks[0]!, toks[3]!];
    for (const [i, x] of order.entries()) {
      const kept = await (i % 2 ? other : store).revokeToken(a.id, x.id, base + 100 + i, i === 1 ? minter : 'otk_owner');
      const { tokenHash: _, ...rest } = x;
      t.deepEqual(kept, { ...rest, revokedAt: base + 100 + i, revokedBy: i === 1 ? minter : 'otk_owner' });
      t.false('tokenHash' in kept!);
      t.is(await store.findTokenByHash(x.tokenHash), undefined);
      t.is(await other.getToken(a.id, x.id), undefined);
    }
    t.is(await store.revokeToken(a.id, toks[0]!.id, base + 200, 'cli'), undefined, 'once');
    // A revocation record by id (the usage breakdown's names): this organisation's only, never a live token.
    t.deepEqual(await other.getRevokedToken(a.id, toks[0]!.id), { ...(({ tokenHash: _, ...rest }) => rest)(toks[0]!), revokedAt: base + 101, revokedBy: minter });
    t.is(await other.getRevokedToken(b.id, toks[0]!.id), undefined, 'not another org\'s');
    t.is(await other.getRevokedToken(a.id, toks[1]!.id), undefined, 'a live token has none');
    t.is(await store.revokeToken(b.id, toks[1]!.id, base + 200, 'cli'), undefined, 'not another org\'s');
    t.truthy(await store.findTokenByHash(toks[1]!.tokenHash));

    const revoked = [...order].reverse().map((x) => x.id);
    const all = await store.listRevokedTokens(a.id, { limit: 10 });
    t.deepEqual(ids(all), revoked);
    if (all !== BAD_CURSOR) for (const r of all.data) t.false('tokenHash' in r);
    t.deepEqual(ids(await store.listRevokedTokens(a.id, { limit: 2 })), revoked.slice(0, 2));
    t.deepEqual(ids(await store.listRevokedTokens(a.id, { limit: 2, startingAfter: revoked[1]! })), revoked.slice(2));
    t.deepEqual(ids(await store.listRevokedTokens(a.id, { limit: 10 }, minter)), [toks[0]!.id, toks[2]!.id]);
    t.deepEqual(ids(await store.listRevokedTokens(a.id, { limit: 10, namePrefix: 'FIR' })), [toks[0]!.id]);
    // A cursor must be one of this org's revoked tokens (a live one, another org's or an unknown id is not).
    for (const cursor of [toks[1]!.id, foreign.id, newId('tok')]) t.is(await store.listRevokedTokens(a.id, { limit: 2, startingAfter: cursor }), BAD_CURSOR, cursor);
    t.is(await store.listRevokedTokens(a.id, { limit: 2, startingAfter: toks[3]!.id }, minter), BAD_CURSOR, 'not the minter\'s');
    // The live list no longer holds them; the other org's is untouched.
    t.deepEqual(ids(await store.listTokens(a.id, { limit: 10 })), [toks[1]!.id]);
    t.deepEqual(ids(await store.listRevokedTokens(b.id, { limit: 10 })), []);
  });

  test(n('revokeToken from several stores at once: exactly one revokes, one record is kept'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const a = await org(stores[0]!);
    const c = credential(a.id, Date.now());
    await stores[0]!.createCredential(c, 10);
    for (let round = 0; round < 3; round++) {
      const x = token(a.id, c.id, Date.now() + round, { name: `round ${round}` });
      await stores[0]!.createToken(x);
      const outcomes = await Promise.all(stores.flatMap((s, i) => [s.revokeToken(a.id, x.id, 1000 + i, `otk_${i}`), s.revokeToken(a.id, x.id, 2000 + i, `otk_${i}`)]));
      t.is(outcomes.filter((o) => o !== undefined).length, 1, `round ${round}`);
      t.is(await stores[1]!.findTokenByHash(x.tokenHash), undefined);
    }
    const kept = await stores[2]!.listRevokedTokens(a.id, { limit: 10 });
    t.is(kept !== BAD_CURSOR && kept.data.length, 3);
  });

  test(n('audit records keep their target\'s name, when given'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = await org(store);
    const now = Date.now();
    const rec = (id: string, time: number, targetName?: string) => ({
      id, time, requestId: 'req', org: a.id, actor: 'otk_x', action: 'credential.create', target: newId('cred'), outcome: 'success' as const, ip: '127.0.0.1',
      count: 1, expireAt: time + 86_400_000, ...(targetName !== undefined ? { targetName } : {}),
    });
    const named = rec(newId('evt'), now, 'Prod OpenAI');
    const plain = rec(newId('evt'), now - 1);
    await store.appendAudit([named, plain]);
    const page = await store.listAudit(a.id, { limit: 10 }, now);
    if (page === BAD_CURSOR) return t.fail();
    t.deepEqual(page.data, [named, plain]);
    t.false('targetName' in page.data[1]!);
  });
}
