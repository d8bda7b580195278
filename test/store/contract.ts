/**
 * The store contract: one suite, run against every adapter (sqlite.test.ts,
 * firestore.test.ts) with the same expectations. A harness gives each test a
 * fresh, empty backend and can open several store instances on it (separate
 * connections or clients: what several processes or Cloud Run instances are).
 */
import type { ExecutionContext, TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { BackendUnavailable } from '../../src/errors.js';
import {
  BAD_CURSOR, breakdownId, type BreakdownScope, type Change, type KeyUsage, type CredentialRecord, type IdempotencyRecord, type OrgRecord, type OrgTokenRecord, type SealedKey, type Store, type TokenRecord,
} from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { adminKeyContract } from './contract-admin-keys.js';
import { auditContract } from './contract-audit.js';
import { trustPolicyContract } from './contract-trust-policies.js';
import { spendContract } from './contract-spend.js';
import { namesContract } from './contract-names.js';
import type { ManualClock } from '../support/clocks.js';
import { eventually, sleep } from '../support/wait.js';
import { leaseContract } from './contract-leases.js';
import { poolContract } from './contract-pools.js';
import { mcpGrantContract } from './contract-mcp-grants.js';
import { oauthConnectionContract } from './contract-oauth.js';
import { teamContract } from './contract-teams.js';

export interface Backend {
  /** Another store instance on the same backend; closed when the test ends. */
  open(): Promise<Store>;
  /**
   * Outages: `open` gives a store with short deadlines, `break` makes the
   * backend unreachable (stops the emulator), `mend` brings it back.
   */
  outage?: { open(): Promise<Store>; break(): Promise<void>; mend(): Promise<void> };
  /**
   * The timers the stores' change feed polls on, when it polls (SQLite): the feed tests move them, so "within a
   * second" is the feed's own second, however busy the machine. Absent for a pushed feed (Firestore's listener):
   * its changes are waited for as the real events they are, with a generous bound.
   */
  timers?: ManualClock;
}

export interface StoreHarness {
  name: string;
  backend(t: ExecutionContext): Promise<Backend>;
}

const sealed = (): SealedKey => ({ wrappedDek: randomBytes(60), kekId: 'local:0123456789abcdef', nonce: randomBytes(12), ciphertext: randomBytes(41) });

function credential(orgId: string, createdAt = Date.now(), provider = 'openai'): CredentialRecord {
  return { id: newId('cred'), orgId, provider, keyHint: '…wxyz', ...sealed(), fields: {}, createdAt, updatedAt: createdAt };
}

function token(orgId: string, credentialId: string, createdAt = Date.now(), scopes: TokenRecord['scopes'] = {}): TokenRecord {
  return { id: newId('tok'), orgId, credentialId, tokenHash: sha256Hex(newToken('ptok')), scopes, createdAt, expiresAt: createdAt + 900_000 };
}

async function org(store: Store, name = 'acme', createdAt = Date.now()): Promise<{ org: OrgRecord; token: OrgTokenRecord }> {
  const o: OrgRecord = { id: newId('org'), name, createdAt };
  const tk: OrgTokenRecord = { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt, expiresAt: null };
  await store.createOrg(o, tk);
  return { org: o, token: tk };
}

/** A pushed feed's change is a real event: waited for this long at most (a loaded machine is slow; never a race). */
const PUSHED_WITHIN_MS = 20_000;

/**
 * Collects the changes `store` hears until `until` matches one. `done()`, called once the change is made, resolves
 * with how long it took on the backend's timers (moved 10 ms at a time, at most `ms`), or, for a pushed feed,
 * with undefined once it arrives (PUSHED_WITHIN_MS at most); it rejects when the change does not come.
 */
export function collect(store: Store, until: (c: Change) => boolean, backend: Backend, ms = 1000): { seen: Change[]; done(): Promise<number | undefined> } {
  const seen: Change[] = [];
  let matched = false;
  const stop = store.watch((c) => {
    seen.push(c);
    if (until(c)) matched = true;
  });
  const fail = (within: string) => new Error(`no matching change within ${within}; saw ${JSON.stringify(seen)}`);
  const done = async (): Promise<number | undefined> => {
    try {
      const timers = backend.timers;
      if (!timers) {
        await eventually(() => matched, 'the change', PUSHED_WITHIN_MS).catch(() => Promise.reject(fail(`${PUSHED_WITHIN_MS} ms`)));
        return undefined;
      }
      for (let waited = 0; !matched; waited += 10) {
        if (waited >= ms) throw fail(`${ms} ms of the feed's timers`);
        await timers.tick(10);
      }
      return timers.elapsed() - started;
    } finally {
      stop();
    }
  };
  const started = backend.timers?.elapsed() ?? 0;
  return { seen, done };
}

/** Lets `ms` pass for the feed: its timers moved (SQLite's poll), or real time for a pushed feed (Firestore's listener). */
async function pass(backend: Backend, ms: number): Promise<void> {
  if (backend.timers) await backend.timers.tick(ms);
  else await sleep(ms);
}


export function storeContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;
  auditContract(test, h);
  trustPolicyContract(test, h);
  mcpGrantContract(test, h);
  adminKeyContract(test, h);
  spendContract(test, h);
  namesContract(test, h);
  leaseContract(test, h);
  poolContract(test, h);
  oauthConnectionContract(test, h);
  teamContract(test, h);

  // ---- organisations ----------------------------------------------------------

  test(n('createOrg, getOrg and findOrgToken'), async (t) => {
    const store = await (await h.backend(t)).open();
    const { org: o, token: tk } = await org(store, 'acme', 1_700_000_000_000);
    t.deepEqual(await store.getOrg(o.id), o);
    t.is(await store.getOrg(newId('org')), undefined);
    t.deepEqual(await store.findOrgToken(tk.tokenHash), tk);
    t.is(await store.findOrgToken(sha256Hex('nope')), undefined);
  });

  test(n('listOrgs pages every organisation newest first; an unknown cursor is BAD_CURSOR'), async (t) => {
    const store = await (await h.backend(t)).open();
    t.deepEqual(await store.listOrgs({ limit: 1 }), { data: [], hasMore: false }, 'an empty store has none');
    const base = 1_700_000_000_000;
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await org(store, `org-${i}`, base + i * 1000)).org);
    await store.setOrgSpendLimit(made[0]!.id, 5_000_000);
    const first = await store.listOrgs({ limit: 2 });
    if (first === BAD_CURSOR) return t.fail();
    t.deepEqual(first.data.map((o) => o.name), ['org-2', 'org-1']);
    t.true(first.hasMore);
    const second = await store.listOrgs({ limit: 2, startingAfter: first.data[1]!.id });
    if (second === BAD_CURSOR) return t.fail();
    t.deepEqual(second.data, [{ ...made[0]!, spendLimitMicros: 5_000_000 }], 'the record as getOrg reads it');
    t.false(second.hasMore);
    t.is(await store.listOrgs({ limit: 2, startingAfter: newId('org') }), BAD_CURSOR);
    // Orgs made in one millisecond: one at a time, each is seen once.
    for (let i = 3; i < 6; i++) made.push((await org(store, `org-${i}`, base + 1000)).org);
    const seen: string[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const p = await store.listOrgs({ limit: 1, ...(after !== undefined ? { startingAfter: after } : {}) });
      if (p === BAD_CURSOR) return t.fail();
      seen.push(...p.data.map((o) => o.id));
      if (!p.hasMore) break;
      after = p.data[0]!.id;
    }
    t.deepEqual([...seen].sort(), made.map((o) => o.id).sort());
    t.is(seen[0], made[2]!.id, 'the newest first');
    t.is(seen[seen.length - 1], made[0]!.id, 'the oldest last');
  });

  test(n('rotateOrgToken adds a token and retires the others at retireAt (or sooner)'), async (t) => {
    const store = await (await h.backend(t)).open();
    const now = Date.now();
    const { org: o, token: first } = await org(store, 'acme', now - 10_000);
    const other = await org(store, 'other', now - 10_000);
    const second: OrgTokenRecord = { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: now, expiresAt: null };
    t.is(await store.rotateOrgToken(second, now + 60_000, first.id), 'rotated');
    t.is((await store.findOrgToken(first.tokenHash))?.expiresAt, now + 60_000);
    t.deepEqual(await store.findOrgToken(second.tokenHash), second);
    // Another org's token is untouched.
    t.is((await store.findOrgToken(other.token.tokenHash))?.expiresAt, null);

    // A later rotation never extends a retirement...
    const third: OrgTokenRecord = { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: now + 1, expiresAt: null };
    t.is(await store.rotateOrgToken(third, now + 120_000, second.id), 'rotated');
    t.is((await store.findOrgToken(first.tokenHash))?.expiresAt, now + 60_000);
    t.is((await store.findOrgToken(second.tokenHash))?.expiresAt, now + 120_000);
    // ...but cuts it short.
    const thirdB: OrgTokenRecord = { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: now + 2, expiresAt: null };
    t.is(await store.rotateOrgToken(thirdB, now + 30_000, third.id), 'rotated');
    t.is((await store.findOrgToken(first.tokenHash))?.expiresAt, now + 30_000);
    t.is((await store.findOrgToken(second.tokenHash))?.expiresAt, now + 30_000);
    t.is((await store.findOrgToken(third.tokenHash))?.expiresAt, now + 30_000);
    t.is((await store.findOrgToken(thirdB.tokenHash))?.expiresAt, null);

    // Tokens retired more than a day before a rotation are dropped.
    const later = now + 2 * 86_400_000;
    const fourth: OrgTokenRecord = { id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt: later, expiresAt: null };
    t.is(await store.rotateOrgToken(fourth, later, thirdB.id), 'rotated');
    t.is(await store.findOrgToken(first.tokenHash), undefined);
    t.is(await store.findOrgToken(second.tokenHash), undefined);
    t.is(await store.findOrgToken(third.tokenHash), undefined);
    t.is((await store.findOrgToken(thirdB.tokenHash))?.expiresAt, later);
    t.is((await store.findOrgToken(fourth.tokenHash))?.expiresAt, null);
  });

  test(n('rotateOrgToken by a retiring, unknown or other org\'s token changes nothing'), async (t) => {
    const store = await (await h.backend(t)).open();
    const now = Date.now();
    const { org: o, token: first } = await org(store, 'acme', now - 10_000);
    const other = await org(store, 'other', now - 10_000);
    const fresh = (createdAt: number): OrgTokenRecord => ({ id: newId('otk'), orgId: o.id, tokenHash: sha256Hex(newToken('otok')), createdAt, expiresAt: null });
    const second = fresh(now);
    t.is(await store.rotateOrgToken(second, now + 3_600_000, first.id), 'rotated');
    // The retiring first token cannot rotate (with grace 0 it would end its successor at once).
    const third = fresh(now + 1);
    t.is(await store.rotateOrgToken(third, now, first.id), 'retiring');
    t.is(await store.findOrgToken(third.tokenHash), undefined);
    t.is((await store.findOrgToken(second.tokenHash))?.expiresAt, null);
    t.is((await store.findOrgToken(first.tokenHash))?.expiresAt, now + 3_600_000);
    // Nor can an unknown id, or another organisation's token.
    t.is(await store.rotateOrgToken(fresh(now + 2), now, newId('otk')), 'retiring');
    t.is(await store.rotateOrgToken(fresh(now + 3), now, other.token.id), 'retiring');
    t.is((await store.findOrgToken(second.tokenHash))?.expiresAt, null);
  });

  // ---- credentials ------------------------------------------------------------

  test(n('createCredential, getCredential, countCredentials; another org sees nothing'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const c = credential(a.id, 1_700_000_000_123);
    t.is(await store.createCredential(c, 10), 'created');
    const got = await store.getCredential(a.id, c.id);
    t.deepEqual(got, c);
    t.true(Buffer.isBuffer(got!.wrappedDek) && Buffer.isBuffer(got!.nonce) && Buffer.isBuffer(got!.ciphertext));
    t.is(await store.getCredential(b.id, c.id), undefined);
    t.is(await store.getCredential(a.id, newId('cred')), undefined);
    t.is(await store.countCredentials(a.id), 1);
    t.is(await store.countCredentials(b.id), 0);
  });

  test(n('a credential\'s plain fields are stored in clear with it and read back by get, list and allCredentials'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const c = { ...credential(a.id, 1_700_000_000_456), fields: { organization: 'org-abc123', project: 'proj_xyz' } };
    t.is(await store.createCredential(c, 10), 'created');
    t.deepEqual((await store.getCredential(a.id, c.id))?.fields, c.fields);
    const page = await store.listCredentials(a.id, { limit: 10 });
    t.deepEqual(page !== BAD_CURSOR && page.data[0]?.fields, c.fields);
    let seen: Record<string, string> | undefined;
    for await (const x of store.allCredentials()) if (x.id === c.id) seen = x.fields;
    t.deepEqual(seen, c.fields);
    // A rotation replaces the key, never the fields.
    t.true(await store.replaceCredentialKey(a.id, c.id, sealed(), '…rot1', 1_700_000_000_999));
    t.deepEqual((await store.getCredential(a.id, c.id))?.fields, c.fields);
  });

  test(n('createCredential stops at the limit and a delete frees a place'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const c = credential(a.id, Date.now() + i);
      t.is(await store.createCredential(c, 3), 'created');
      ids.push(c.id);
    }
    t.is(await store.createCredential(credential(a.id), 3), 'limit');
    t.is(await store.countCredentials(a.id), 3);
    // Another org has its own allowance.
    const b = (await org(store, 'other')).org;
    t.is(await store.createCredential(credential(b.id), 3), 'created');
    t.true(await store.deleteCredential(a.id, ids[1]!));
    t.is(await store.createCredential(credential(a.id), 3), 'created');
    t.is(await store.createCredential(credential(a.id), 3), 'limit');
    t.is(await store.countCredentials(a.id), 3);
  });

  test(n('20 concurrent creates with limit 10 store exactly 10'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => store.createCredential(credential(a.id, Date.now() + i), 10)));
    t.is(outcomes.filter((o) => o === 'created').length, 10);
    t.is(outcomes.filter((o) => o === 'limit').length, 10);
    t.is(await store.countCredentials(a.id), 10);
    const page = await store.listCredentials(a.id, { limit: 100 });
    t.not(page, BAD_CURSOR);
    if (page !== BAD_CURSOR) t.is(page.data.length, 10);
  });

  test(n('30 concurrent creates across 3 store instances with limit 10 store exactly 10'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const a = (await org(stores[0]!)).org;
    const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % 3]!.createCredential(credential(a.id, Date.now() + i), 10)));
    t.is(outcomes.filter((o) => o === 'created').length, 10);
    for (const s of stores) t.is(await s.countCredentials(a.id), 10);
  });

  test(n('listCredentials pages newest first with starting_after; unknown or foreign cursors are BAD_CURSOR'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const base = 1_700_000_000_000;
    // Two share a created_at: the id breaks the tie (descending), as in SQL ORDER BY created_at DESC, id DESC.
    const made = [credential(a.id, base), credential(a.id, base + 5), credential(a.id, base + 5), credential(a.id, base + 9), credential(a.id, base + 20)];
    for (const c of made) t.is(await store.createCredential(c, 10), 'created');
    const foreign = credential(b.id, base + 7);
    await store.createCredential(foreign, 10);
    const expected = [...made].sort((x, y) => y.createdAt - x.createdAt || (x.id < y.id ? 1 : -1)).map((c) => c.id);

    const seen: string[] = [];
    let after: string | undefined;
    const hasMores: boolean[] = [];
    for (;;) {
      const p = await store.listCredentials(a.id, { limit: 2, ...(after ? { startingAfter: after } : {}) });
      if (p === BAD_CURSOR) return t.fail('unexpected BAD_CURSOR');
      seen.push(...p.data.map((c) => c.id));
      hasMores.push(p.hasMore);
      if (!p.hasMore) break;
      after = p.data[p.data.length - 1]!.id;
    }
    t.deepEqual(seen, expected);
    t.deepEqual(hasMores, [true, true, false]);
    const all = await store.listCredentials(a.id, { limit: 5 });
    t.false(all !== BAD_CURSOR && all.hasMore);
    t.is(await store.listCredentials(a.id, { limit: 2, startingAfter: newId('cred') }), BAD_CURSOR);
    t.is(await store.listCredentials(a.id, { limit: 2, startingAfter: foreign.id }), BAD_CURSOR);
    const empty = await store.listCredentials(newId('org'), { limit: 10 });
    t.deepEqual(empty, { data: [], hasMore: false });
  });

  test(n('deleteCredential removes it and every token bound to it; a second delete is false'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const c = credential(a.id);
    const keep = credential(a.id);
    await store.createCredential(c, 10);
    await store.createCredential(keep, 10);
    const toks = [token(a.id, c.id), token(a.id, c.id, Date.now() + 1)];
    const kept = token(a.id, keep.id);
    for (const tk of [...toks, kept]) t.is(await store.createToken(tk), 'created');

    t.false(await store.deleteCredential(b.id, c.id), 'another org cannot delete it');
    t.truthy(await store.getCredential(a.id, c.id));
    t.true(await store.deleteCredential(a.id, c.id));
    t.is(await store.getCredential(a.id, c.id), undefined);
    for (const tk of toks) {
      t.is(await store.findTokenByHash(tk.tokenHash), undefined);
      t.is(await store.getToken(a.id, tk.id), undefined);
    }
    const list = await store.listTokens(a.id, { limit: 10 });
    t.deepEqual(list !== BAD_CURSOR && list.data.map((x) => x.id), [kept.id]);
    t.deepEqual(await store.findTokenByHash(kept.tokenHash), kept);
    t.false(await store.deleteCredential(a.id, c.id));
    t.is(await store.countCredentials(a.id), 1);
  });

  test(n('replaceCredentialKey swaps the sealed key in place; other orgs and unknown ids are false'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const c = credential(a.id, 1_700_000_000_000);
    await store.createCredential(c, 10);
    const next = sealed();
    t.false(await store.replaceCredentialKey(b.id, c.id, next, '…new1', 1_700_000_001_000));
    t.false(await store.replaceCredentialKey(a.id, newId('cred'), next, '…new1', 1_700_000_001_000));
    t.true(await store.replaceCredentialKey(a.id, c.id, next, '…new1', 1_700_000_001_000));
    t.deepEqual(await store.getCredential(a.id, c.id), { ...c, ...next, keyHint: '…new1', updatedAt: 1_700_000_001_000 });
  });

  test(n('allCredentials yields every credential of every organisation once'), async (t) => {
    const store = await (await h.backend(t)).open();
    const orgs = [(await org(store)).org, (await org(store, 'b')).org, (await org(store, 'c')).org];
    const ids = new Set<string>();
    await Promise.all(Array.from({ length: 130 }, async (_, i) => {
      const c = credential(orgs[i % 3]!.id, Date.now() + i);
      t.is(await store.createCredential(c, 1000), 'created');
      ids.add(c.id);
    }));
    const seen: string[] = [];
    for await (const c of store.allCredentials()) {
      seen.push(c.id);
      t.true(Buffer.isBuffer(c.wrappedDek));
    }
    t.is(seen.length, 130);
    t.deepEqual([...seen].sort(), [...ids].sort());
  });

  test(n('rewrapCredential is a compare-and-swap on the wrapped DEK; the ciphertext is untouched'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const c = credential(a.id);
    await store.createCredential(c, 10);
    const newDek = randomBytes(60);
    t.false(await store.rewrapCredential(c.id, randomBytes(60), newDek, 'kms:v2'), 'a stale expected DEK does not swap');
    t.false(await store.rewrapCredential(newId('cred'), c.wrappedDek, newDek, 'kms:v2'));
    t.deepEqual(await store.getCredential(a.id, c.id), c);
    t.true(await store.rewrapCredential(c.id, c.wrappedDek, newDek, 'kms:v2'));
    t.deepEqual(await store.getCredential(a.id, c.id), { ...c, wrappedDek: newDek, kekId: 'kms:v2' });
    t.false(await store.rewrapCredential(c.id, c.wrappedDek, randomBytes(60), 'kms:v3'), 'the old DEK no longer matches');
  });

  // ---- tokens -----------------------------------------------------------------

  test(n('createToken, findTokenByHash, getToken; no_credential for a missing or foreign credential'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const c = credential(a.id);
    await store.createCredential(c, 10);
    const tk = token(a.id, c.id, 1_700_000_000_000, { models: ['gpt-4o*'], paths: ['v1/chat/completions'], maxRequests: 5, rateLimit: 60 });
    t.is(await store.createToken(tk), 'created');
    t.deepEqual(await store.findTokenByHash(tk.tokenHash), tk);
    t.deepEqual(await store.getToken(a.id, tk.id), tk);
    t.is(await store.getToken(b.id, tk.id), undefined);
    t.is(await store.getToken(a.id, newId('tok')), undefined);
    t.is(await store.findTokenByHash(sha256Hex('nope')), undefined);
    t.is(await store.createToken(token(a.id, newId('cred'))), 'no_credential');
    t.is(await store.createToken(token(b.id, c.id)), 'no_credential', "another org's credential");
    const plain = token(a.id, c.id);
    t.is(await store.createToken(plain), 'created');
    t.deepEqual((await store.findTokenByHash(plain.tokenHash))?.scopes, {});
  });

  test(n('listTokens pages newest first; revokeToken answers the kept record once; org scoping'), async (t) => {
    const store = await (await h.backend(t)).open();
    const a = (await org(store)).org;
    const b = (await org(store, 'other')).org;
    const c = credential(a.id);
    const cb = credential(b.id);
    await store.createCredential(c, 10);
    await store.createCredential(cb, 10);
    const base = 1_700_000_000_000;
    const toks = [token(a.id, c.id, base), token(a.id, c.id, base + 1), token(a.id, c.id, base + 1), token(a.id, c.id, base + 3)];
    for (const tk of toks) await store.createToken(tk);
    const foreign = token(b.id, cb.id, base + 2);
    await store.createToken(foreign);
    const expected = [...toks].sort((x, y) => y.createdAt - x.createdAt || (x.id < y.id ? 1 : -1)).map((x) => x.id);
    const p1 = await store.listTokens(a.id, { limit: 3 });
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data.map((x) => x.id), expected.slice(0, 3));
    t.true(p1.hasMore);
    const p2 = await store.listTokens(a.id, { limit: 3, startingAfter: p1.data[2]!.id });
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data.map((x) => x.id), expected.slice(3));
    t.false(p2.hasMore);
    t.is(await store.listTokens(a.id, { limit: 3, startingAfter: newId('tok') }), BAD_CURSOR);
    t.is(await store.listTokens(a.id, { limit: 3, startingAfter: foreign.id }), BAD_CURSOR);

    t.is(await store.revokeToken(b.id, toks[0]!.id, base + 10, 'otk_x'), undefined);
    t.truthy(await store.revokeToken(a.id, toks[0]!.id, base + 10, 'otk_x'));
    t.is(await store.revokeToken(a.id, toks[0]!.id, base + 11, 'otk_x'), undefined);
    t.is(await store.findTokenByHash(toks[0]!.tokenHash), undefined);
    t.is(await store.getToken(a.id, toks[0]!.id), undefined);
    const after = await store.listTokens(a.id, { limit: 10 });
    t.deepEqual(after !== BAD_CURSOR && after.data.map((x) => x.id), expected.filter((id) => id !== toks[0]!.id));
  });

  test(n('tokens created while their credential is deleted never outlive it'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const a = (await org(s1)).org;
    for (let round = 0; round < 3; round++) {
      const c = credential(a.id);
      await s1.createCredential(c, 100);
      const toks = Array.from({ length: 8 }, () => token(a.id, c.id));
      const [outcomes] = await Promise.all([
        Promise.all(toks.map((tk, i) => (i % 2 ? s1 : s2).createToken(tk))),
        sleep(round * 3).then(() => s2.deleteCredential(a.id, c.id)),
      ]);
      t.true(outcomes.every((o) => o === 'created' || o === 'no_credential'));
      for (const tk of toks) t.is(await s1.findTokenByHash(tk.tokenHash), undefined);
    }
    const left = await s1.listTokens(a.id, { limit: 100 });
    t.deepEqual(left, { data: [], hasMore: false });
  });

  // ---- usage ------------------------------------------------------------------

  test(n('usage shards: each writer\'s absolute totals, replaced by its next write, summed over writers on read'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const orgId = newId('org');
    const tokId = newId('tok');
    const zero = { requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 };
    const shard = (scope: 'org' | 'tok', id: string, period: string, requests: number, inputTokens: number, outputTokens: number, spendMicros: number) =>
      ({ scope, id, period, requests, inputTokens, outputTokens, spendMicros });
    t.deepEqual(await s1.getUsage('org', orgId), zero);
    await s1.putUsageShards('w1', 1, [shard('org', orgId, '2026-10', 2, 10, 20, 1_500), shard('org', orgId, '2026-11', 1, 5, 7, 0), shard('tok', tokId, '2026-11', 3, 0, 9, 12_345_678)]);
    // The same totals again (a retry of a write that landed): nothing counts twice.
    await s1.putUsageShards('w1', 1, [shard('org', orgId, '2026-11', 1, 5, 7, 0)]);
    await s1.putUsageShards('w1', 2, [shard('org', orgId, '2026-11', 2, 6, 8, 3)]);
    await Promise.all([
      s1.putUsageShards('w1', 3, [shard('org', orgId, '2026-11', 6, 10, 12, 43)]),
      s2.putUsageShards('w2', 1, [shard('org', orgId, '2026-11', 8, 8, 8, 800)]),
    ]);
    await s1.putUsageShards('w1', 4, []);
    t.deepEqual(await s2.getUsage('org', orgId, '2026-11'), { requests: 14, inputTokens: 18, outputTokens: 20, spendMicros: 843 });
    t.deepEqual(await s2.getUsage('org', orgId, '2026-10'), { requests: 2, inputTokens: 10, outputTokens: 20, spendMicros: 1_500 });
    t.deepEqual(await s2.getUsage('org', orgId, '2026-09'), zero);
    t.deepEqual(await s2.getUsage('org', orgId), { requests: 16, inputTokens: 28, outputTokens: 40, spendMicros: 2_343 });
    t.deepEqual(await s2.getUsage('tok', tokId), { requests: 3, inputTokens: 0, outputTokens: 9, spendMicros: 12_345_678 });
    t.deepEqual(await s2.getUsage('cred', tokId), zero, 'scopes are separate');
    // A writer reads its own shards back (a counter it let go of and counts again).
    t.deepEqual(await s2.getUsageShards('w1', [{ scope: 'org', id: orgId, period: '2026-11' }, { scope: 'org', id: orgId, period: '2026-12' }]),
      [{ requests: 6, inputTokens: 10, outputTokens: 12, spendMicros: 43 }, zero]);
  });

  test(n('daily counters: listUsage reads a range of days in order, summed over writers, apart from the monthly ones'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const orgId = newId('org');
    const day = (period: string, requests: number, spendMicros: number) => ({ scope: 'org-day' as const, id: orgId, period, requests, inputTokens: requests * 10, outputTokens: requests * 2, spendMicros });
    await s1.putUsageShards('w1', 1, [day('2026-10-31', 1, 10), day('2026-11-01', 2, 20), day('2026-11-03', 3, 30), { scope: 'org', id: orgId, period: '2026-11', requests: 5, inputTokens: 50, outputTokens: 10, spendMicros: 50 }]);
    await Promise.all([s1.putUsageShards('w1', 2, [day('2026-11-03', 4, 31)]), s2.putUsageShards('w2', 1, [day('2026-11-03', 1, 2), day('2026-12-01', 9, 9)])]);
    t.deepEqual(await s2.listUsage('org-day', orgId, '2026-11-01', '2026-11-30'), [
      { period: '2026-11-01', requests: 2, inputTokens: 20, outputTokens: 4, spendMicros: 20 },
      { period: '2026-11-03', requests: 5, inputTokens: 40 + 10, outputTokens: 8 + 2, spendMicros: 33 },
    ]);
    t.deepEqual((await s1.listUsage('org-day', orgId, '2026-10-31', '2026-10-31')).map((d) => d.period), ['2026-10-31'], 'both ends are included');
    t.deepEqual(await s1.listUsage('org-day', orgId, '2026-11-04', '2026-11-30'), []);
    t.deepEqual(await s1.listUsage('org-day', newId('org'), '2026-01-01', '2026-12-31'), [], 'another organisation has none');
    // The days are a scope of their own: the month's counters are not summed with them.
    t.deepEqual(await s1.getUsage('org', orgId), { requests: 5, inputTokens: 50, outputTokens: 10, spendMicros: 50 });
    t.deepEqual((await s1.listUsage('org', orgId, '2026-01', '2026-12')).map((d) => d.period), ['2026-11']);
  });

  test(n('breakdown counters: listBreakdown sums every writer\'s shards of an organisation\'s keys over a range of days, keys with any characters, never another organisation\'s'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const [orgId, otherOrg] = [newId('org'), newId('org')];
    const d = (scope: BreakdownScope, org: string, key: string, period: string, requests: number, spendMicros: number) =>
      ({ scope, id: breakdownId(org, key), period, requests, inputTokens: requests * 10, outputTokens: requests * 2, spendMicros });
    const model = 'openai/gpt-5*'; // an OpenRouter-style name: a `/`, a `*`
    await s1.putUsageShards('w1', 1, [d('model-day', orgId, model, '2026-11-01', 1, 10), d('model-day', orgId, model, '2026-11-02', 2, 20), d('model-day', orgId, 'unpriced', '2026-11-02', 1, 0)]);
    await Promise.all([
      // w1's totals for 11-02 grow (absolute: 3, not 2 + 1); w2 writes its own shards.
      s1.putUsageShards('w1', 2, [d('model-day', orgId, model, '2026-11-02', 3, 25), d('model-day', otherOrg, model, '2026-11-02', 9, 9)]),
      s2.putUsageShards('w2', 1, [
        d('model-day', orgId, model, '2026-11-02', 1, 4), d('model-day', orgId, model, '2026-11-03', 4, 40), d('tok-day', orgId, 'tok_x', '2026-11-02', 7, 70),
        { scope: 'org-day', id: orgId, period: '2026-11-02', requests: 1, inputTokens: 0, outputTokens: 0, spendMicros: 1 },
      ]),
    ]);
    // A retry of the same totals changes nothing.
    await s1.putUsageShards('w1', 3, [d('model-day', orgId, model, '2026-11-02', 3, 25)]);
    const sorted = (rows: KeyUsage[]) => [...rows].sort((a, b) => (a.key < b.key ? -1 : 1));
    t.deepEqual(sorted(await s2.listBreakdown('model-day', orgId, '2026-11-01', '2026-11-02')), [
      { key: model, requests: 1 + 3 + 1, inputTokens: 50, outputTokens: 10, spendMicros: 10 + 25 + 4 },
      { key: 'unpriced', requests: 1, inputTokens: 10, outputTokens: 2, spendMicros: 0 },
    ]);
    t.deepEqual(sorted(await s1.listBreakdown('model-day', orgId, '2026-11-03', '2026-11-30')), [{ key: model, requests: 4, inputTokens: 40, outputTokens: 8, spendMicros: 40 }], 'both ends included');
    t.deepEqual(await s1.listBreakdown('tok-day', orgId, '2026-11-01', '2026-11-30'), [{ key: 'tok_x', requests: 7, inputTokens: 70, outputTokens: 14, spendMicros: 70 }], 'scopes are separate');
    t.deepEqual(await s1.listBreakdown('cred-day', orgId, '2026-11-01', '2026-11-30'), []);
    t.deepEqual(await s1.listBreakdown('model-day', otherOrg, '2026-11-01', '2026-11-30'), [{ key: model, requests: 9, inputTokens: 90, outputTokens: 18, spendMicros: 9 }]);
    t.deepEqual(await s1.listBreakdown('model-day', newId('org'), '2026-11-01', '2026-11-30'), []);
    // A writer reads its own breakdown shards back (a counter it let go of and counts again).
    t.deepEqual(await s2.getUsageShards('w1', [{ scope: 'model-day', id: breakdownId(orgId, model), period: '2026-11-02' }, { scope: 'tok-day', id: breakdownId(orgId, 'tok_x'), period: '2026-11-02' }]), [
      { requests: 3, inputTokens: 30, outputTokens: 6, spendMicros: 25 }, { requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 },
    ]);
  });

  // ---- change feed ------------------------------------------------------------

  // The feed's timing tests run serially (before the concurrent ones): their bound is real time, and the
  // store answering within it is what they measure, not how many other tests share this process.
  test.serial(n('the change feed brings token and credential changes to another instance within a second'), async (t) => {
    const backend = await h.backend(t);
    const [writer, reader] = [await backend.open(), await backend.open()];
    const { org: a, token: aToken } = await org(writer);
    const c = credential(a.id);
    await writer.createCredential(c, 10);
    const tk = token(a.id, c.id);
    const tk2 = token(a.id, c.id);
    await writer.createToken(tk);
    await writer.createToken(tk2);
    // Let the reader's watch settle before the changes it must see.
    const warm = reader.watch(() => undefined);
    await pass(backend, 100);

    // Within a second on the feed's own timers (SQLite); a pushed feed's change is waited for as a real event.
    const within = async (done: Promise<number | undefined>) => {
      const took = await done;
      if (took !== undefined) t.true(took < 1000, `${took} ms`);
    };
    const revoked = collect(reader, (ch) => ch.kind === 'token' && ch.id === tk.id, backend);
    await writer.revokeToken(a.id, tk.id, Date.now(), 'cli');
    await within(revoked.done());

    const rotated = collect(reader, (ch) => ch.kind === 'credential' && ch.id === c.id, backend);
    await writer.replaceCredentialKey(a.id, c.id, sealed(), '…rot1', Date.now());
    await within(rotated.done());

    const current = (await writer.getCredential(a.id, c.id))!;
    const rewrapped = collect(reader, (ch) => ch.kind === 'credential' && ch.id === c.id, backend);
    t.true(await writer.rewrapCredential(c.id, current.wrappedDek, randomBytes(60), 'kms:v9'));
    await within(rewrapped.done());

    // Deleting the credential announces it once; that change stands for its tokens (tk2) too.
    const credGone = collect(reader, (ch) => ch.kind === 'credential' && ch.id === c.id, backend);
    await writer.deleteCredential(a.id, c.id);
    await within(credGone.done());
    t.is(await reader.findTokenByHash(tk2.tokenHash), undefined);

    const orgRotated = collect(reader, (ch) => ch.kind === 'org' && ch.id === a.id, backend);
    await writer.rotateOrgToken({ id: newId('otk'), orgId: a.id, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null }, Date.now(), aToken.id);
    await within(orgRotated.done());

    // The writer's own watchers hear its changes too (the CLI relies on the same feed).
    const own = collect(writer, (ch) => ch.kind === 'token', backend);
    const c2 = credential(a.id);
    await writer.createCredential(c2, 10);
    const tk3 = token(a.id, c2.id);
    await writer.createToken(tk3);
    await writer.revokeToken(a.id, tk3.id, Date.now(), 'cli');
    await within(own.done());
    warm();

    // An unsubscribed listener hears nothing more.
    const heard: Change[] = [];
    const stop = reader.watch((ch) => heard.push(ch));
    await pass(backend, 100);
    stop();
    const before = heard.length;
    const tk4 = token(a.id, c2.id);
    await writer.createToken(tk4);
    await writer.revokeToken(a.id, tk4.id, Date.now(), 'cli');
    await pass(backend, 400);
    t.is(heard.length, before);
  });

  test(n('deleting a credential with many tokens publishes exactly one change'), async (t) => {
    const backend = await h.backend(t);
    const [writer, reader] = [await backend.open(), await backend.open()];
    const a = (await org(writer)).org;
    const c = credential(a.id);
    const other = credential(a.id);
    await writer.createCredential(c, 10);
    await writer.createCredential(other, 10);
    const tokens = Array.from({ length: 60 }, () => token(a.id, c.id));
    for (let i = 0; i < tokens.length; i += 10) await Promise.all(tokens.slice(i, i + 10).map((tk) => writer.createToken(tk)));
    const kept = token(a.id, other.id);
    await writer.createToken(kept);
    const heard: Change[] = [];
    const stop = reader.watch((ch) => heard.push(ch));
    await pass(backend, 200);
    const first = collect(reader, () => true, backend);
    t.true(await writer.deleteCredential(a.id, c.id));
    // Wait for the one change, then long enough for any stragglers (a second poll or snapshot) to show.
    await first.done();
    await pass(backend, 600);
    stop();
    t.deepEqual(heard, [{ kind: 'credential', id: c.id }]);
    for (const tk of tokens.slice(0, 5)) t.is(await reader.findTokenByHash(tk.tokenHash), undefined);
    t.truthy(await reader.findTokenByHash(kept.tokenHash), "another credential's token is untouched");
  });

  test(n('the change feed says it is live once it is watched and delivering'), async (t) => {
    const backend = await h.backend(t);
    const store = await backend.open();
    t.false(store.isLive(), 'nobody watches yet');
    const stop = store.watch(() => undefined);
    if (backend.timers) await backend.timers.tick(1000);
    else await eventually(() => store.isLive(), 'the feed live', PUSHED_WITHIN_MS).catch(() => undefined);
    t.true(store.isLive(), 'live once watched (a second of the feed\'s timers, or a real listener attaching)');
    stop();
    t.false(store.isLive(), 'not live once nobody watches');
  });

  test(n('reads and writes that change nothing publish nothing'), async (t) => {
    const backend = await h.backend(t);
    const [writer, reader] = [await backend.open(), await backend.open()];
    const a = (await org(writer)).org;
    const heard: Change[] = [];
    const stop = reader.watch((ch) => heard.push(ch));
    await pass(backend, 100);
    const c = credential(a.id);
    await writer.createCredential(c, 10);
    await writer.createToken(token(a.id, c.id));
    t.is(await writer.revokeToken(a.id, newId('tok'), Date.now(), 'cli'), undefined);
    t.false(await writer.deleteCredential(a.id, newId('cred')));
    await writer.putUsageShards('w1', 1, [{ scope: 'org', id: a.id, period: '2026-11', requests: 1, inputTokens: 0, outputTokens: 0, spendMicros: 0 }]);
    await writer.writeHolder(`quota:${a.id}:2026-11`, { holder: 'w1.1', seq: 1, nonce: 'n', granted: 0, returned: 0, used: 0, armed: 0, expiresAt: Date.now() + 60_000 },
      { op: 'claim', limit: 10, min: 1, want: 2, now: Date.now() });
    await pass(backend, 500);
    stop();
    t.deepEqual(heard.filter((ch) => ch.id === c.id || ch.id === a.id), []);
  });

  // ---- idempotency ------------------------------------------------------------

  test(n('claimIdempotency: one claim per scope, the stored response replays, release frees a claim, expired records are replaced'), async (t) => {
    const store = await (await h.backend(t)).open();
    const now = Date.now();
    const day = 86_400_000;
    const scope = `${newId('org')}|POST /v1/credentials|key-1`;
    const first: IdempotencyRecord = { scope, requestHash: 'hash-1', createdAt: now };
    t.is(await store.claimIdempotency(first, now - day), 'claimed');
    t.deepEqual(await store.claimIdempotency({ scope, requestHash: 'hash-2', createdAt: now + 1 }, now - day), first, 'in flight: no response yet');
    await store.completeIdempotency(scope, { status: 201, body: { id: 'cred_x', nested: [1, 'two'] } });
    t.deepEqual(await store.claimIdempotency({ scope, requestHash: 'hash-1', createdAt: now + 2 }, now - day),
      { ...first, response: { status: 201, body: { id: 'cred_x', nested: [1, 'two'] } } });
    await store.releaseIdempotency(scope);
    t.not(await store.claimIdempotency({ scope, requestHash: 'hash-1', createdAt: now + 3 }, now - day), 'claimed', 'a completed record is not released');

    const failed = `${newId('org')}|POST /v1/tokens|key-2`;
    t.is(await store.claimIdempotency({ scope: failed, requestHash: 'h', createdAt: now }, now - day), 'claimed');
    await store.releaseIdempotency(failed);
    t.is(await store.claimIdempotency({ scope: failed, requestHash: 'h2', createdAt: now + 1 }, now - day), 'claimed', 'released: the key can be used again');

    const old = `admin|POST /v1/orgs|key-3`;
    t.is(await store.claimIdempotency({ scope: old, requestHash: 'old', createdAt: now - 2 * day }, now - 3 * day), 'claimed');
    await store.completeIdempotency(old, { status: 201, body: {} });
    t.is(await store.claimIdempotency({ scope: old, requestHash: 'new', createdAt: now }, now - day), 'claimed', 'older than expireBefore: replaced');
    t.deepEqual(await store.claimIdempotency({ scope: old, requestHash: 'x', createdAt: now + 1 }, now - day), { scope: old, requestHash: 'new', createdAt: now });
  });

  test(n('concurrent claims of one Idempotency-Key from 3 instances: exactly one wins'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const now = Date.now();
    const scope = `${newId('org')}|POST /v1/credentials|race`;
    const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      stores[i % 3]!.claimIdempotency({ scope, requestHash: `h${i}`, createdAt: now }, now - 86_400_000)));
    t.is(outcomes.filter((o) => o === 'claimed').length, 1);
    const winner = outcomes.indexOf('claimed');
    for (const o of outcomes) if (o !== 'claimed') t.is(o.requestHash, `h${winner}`);
  });

  // ---- lifecycle --------------------------------------------------------------

  test(n('ping answers; an unreachable backend is BackendUnavailable'), async (t) => {
    const backend = await h.backend(t);
    const store = await (backend.outage ?? backend).open();
    // A new client's first call can take a while on a loaded machine: a real event, allowed 30 s.
    const answers = () => eventually(() => store.ping().then(() => true, () => false), 'the store answers', 30_000, 100).then(() => true, () => false);
    t.true(await answers());
    t.is(typeof store.kind, 'string');
    if (!backend.outage) return;
    await backend.outage.break();
    await t.throwsAsync(store.ping(), { instanceOf: BackendUnavailable });
    await t.throwsAsync(store.getOrg(newId('org')), { instanceOf: BackendUnavailable });
    await backend.outage.mend();
    // Back: ping answers again (the client reconnects with a backoff of a second or more).
    t.true(await answers());
  });
}
