/**
 * Authority never outlives its source: a trust policy, admin key or proxy token made by a caller whose
 * own credential ends (an admin key with a ttl, a retiring org token) ends no later; a retiring org
 * token makes no trust policy (403 token_retiring); a token an exchange mints ends with its policy.
 * The reproduction (a 2-second admin key's policy still minting a 30-day ptok after the key
 * died) is the first test. Time is the manual clock's. Policies stored before these rules: one
 * without the expiry column lasts until deleted; a prefix that does not fix the owner matches nothing.
 */
import 'reflect-metadata';
import test from 'ava';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { newId } from '../../src/ids.js';
import type { Store } from '../../src/store/ports.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { Symbols } from '../../src/symbols.js';
import { api, tempDir, type ApiResponse } from '../support/app.js';
import { identitySetup, type IdentitySetup } from './_setup.js';

const ms = (iso: string): number => Date.parse(iso);

async function adminKey(s: IdentitySetup, ttl: string | undefined, token = s.f.org.token, role = 'admin'): Promise<{ id: string; token: string; expiresAt: number | null }> {
  const r = await api(s.f.app, 'POST', '/v1/admin-keys', { token, body: { name: 'k', role, ...(ttl ? { ttl } : {}) } });
  if (r.status !== 201) throw new Error(`admin key: ${r.status} ${r.text}`);
  return { id: r.body.id, token: r.body.token, expiresAt: r.body.expires_at === null ? null : ms(r.body.expires_at) };
}

const chat = (s: IdentitySetup, ptok: string): Promise<Response> => fetch(s.f.proxyUrl('v1/chat/completions'), {
  method: 'POST', headers: { authorization: `Bearer ${ptok}`, 'content-type': 'application/json' },
  body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
});

test('a 2-second admin key\'s trust policy ends with the key: its exchanges mint tokens that end by then, and none after', async (t) => {
  const s = await identitySetup(t);
  const key = await adminKey(s, '2s');
  const made = await api(s.f.app, 'POST', '/v1/trust-policies', {
    token: key.token,
    body: { issuer: s.issuer.url, audience: 'https://keyward.test', subject: 'repo:acme/*', credential_id: s.f.credentials.openai, ttl: '30d' },
  });
  t.is(made.status, 201, made.text);
  t.is(ms(made.body.expires_at), key.expiresAt!, 'the policy ends with the key that made it');
  t.deepEqual((await api(s.f.app, 'GET', `/v1/trust-policies/${made.body.id}`, { token: s.f.org.token })).body, made.body);

  // While the key lives: the exchange's 30-day ttl is cut to the policy's end.
  s.clock.advance(500);
  const jwt = await s.issuer.sign(s.clock.now());
  const exchanged = await s.exchange(jwt, { policy_id: made.body.id });
  t.is(exchanged.status, 200, exchanged.text);
  t.true(exchanged.body.expires_in <= 2, `expires_in ${exchanged.body.expires_in}`);
  const minted = (await api(s.f.app, 'GET', '/v1/tokens?limit=10', { token: s.f.org.token })).body.data.find((x: any) => x.created_by === made.body.id);
  t.true(ms(minted.expires_at) <= key.expiresAt!, 'the minted token ends no later than the policy');
  t.is((await chat(s, exchanged.body.access_token)).status, 200);

  // Once the key is dead: the key, the policy and the token it minted are all refused.
  s.clock.set(key.expiresAt!);
  t.is((await api(s.f.app, 'GET', '/v1/trust-policies', { token: key.token })).status, 401);
  const late = await s.issuer.sign(s.clock.now());
  for (const extra of [{ policy_id: made.body.id as string }, {}] as Array<Record<string, string>>) {
    const r = await s.exchange(late, extra);
    t.is(r.status, 400, JSON.stringify(extra));
    t.is(r.body.error, 'invalid_grant');
  }
  t.is((await chat(s, exchanged.body.access_token)).status, 401);
  t.is((await api(s.f.app, 'GET', `/v1/trust-policies/${made.body.id}`, { token: s.f.org.token })).body.expires_at, made.body.expires_at, 'still listed, with its end');
});

test('a retiring org token makes no trust policy (403 token_retiring); its tokens and keys end with it', async (t) => {
  const s = await identitySetup(t);
  const rotated = await api(s.f.app, 'POST', '/v1/orgs/self/token/rotate', { token: s.f.org.token, body: { grace_s: 3600 } });
  t.is(rotated.status, 200);
  const end = s.clock.now() + 3_600_000;
  const old = s.f.org.token;

  const policy = await api(s.f.app, 'POST', '/v1/trust-policies', {
    token: old, body: { issuer: s.issuer.url, audience: 'https://keyward.test', subject: 'repo:acme/app:ref:refs/heads/main', credential_id: s.f.credentials.openai, ttl: '10m' },
  });
  t.is(policy.status, 403, policy.text);
  t.is(policy.body.error.code, 'token_retiring');
  t.deepEqual((await api(s.f.app, 'GET', '/v1/trust-policies', { token: rotated.body.token })).body.data, [], 'nothing was made');
  // The current token still may.
  const current = await api(s.f.app, 'POST', '/v1/trust-policies', {
    token: rotated.body.token, body: { issuer: s.issuer.url, audience: 'https://keyward.test', subject: 'repo:acme/app:ref:refs/heads/main', credential_id: s.f.credentials.openai, ttl: '10m' },
  });
  t.is(current.status, 201);
  t.is(current.body.expires_at, null, 'a current org token\'s policy lasts until deleted');

  // A proxy token from the retiring token: within its hour, yes; past it, refused (not silently cut).
  const short = await api(s.f.app, 'POST', '/v1/tokens', { token: old, body: { credential_id: s.f.credentials.openai, ttl: '30m' } });
  t.is(short.status, 201);
  t.true(ms(short.body.expires_at) <= end);
  const long = await api(s.f.app, 'POST', '/v1/tokens', { token: old, body: { credential_id: s.f.credentials.openai, ttl: '30d' } });
  t.is(long.status, 403, long.text);
  t.is(long.body.error.code, 'forbidden');
  t.regex(long.body.error.message, /may not outlive/);
  // An admin key from it: at most its hour.
  const key = await adminKey(s, undefined, old);
  t.is(key.expiresAt, end);
});

test('an admin key with a ttl: the proxy tokens, keys and policies it makes end by its end; asking for longer is 403', async (t) => {
  const s = await identitySetup(t);
  const key = await adminKey(s, '1h');
  const cases: Array<[string, string, Record<string, unknown>, number]> = [
    ['/v1/tokens', 'a token within the hour', { credential_id: s.f.credentials.openai, ttl: '59m' }, 201],
    ['/v1/tokens', 'a token to the second of its end', { credential_id: s.f.credentials.openai, ttl: '3600s' }, 201],
    ['/v1/tokens', 'a token a second past it', { credential_id: s.f.credentials.openai, ttl: '3601s' }, 403],
    ['/v1/admin-keys', 'a key past it', { name: 'k2', role: 'viewer', ttl: '2h' }, 403],
    ['/v1/admin-keys', 'a key without a ttl', { name: 'k3', role: 'viewer' }, 201],
  ];
  for (const [path, label, body, status] of cases) {
    const r: ApiResponse = await api(s.f.app, 'POST', path, { token: key.token, body });
    t.is(r.status, status, `${label}: ${r.text}`);
    if (status === 201) t.true(ms(r.body.expires_at) <= key.expiresAt!, label);
    else t.is(r.body.error.code, 'forbidden', label);
  }
  // An admin key without a ttl makes lasting things, as the org token does.
  const lasting = await adminKey(s, undefined);
  const p = await api(s.f.app, 'POST', '/v1/trust-policies', {
    token: lasting.token, body: { issuer: s.issuer.url, audience: 'https://keyward.test', subject: 'repo:acme/*', credential_id: s.f.credentials.openai, ttl: '10m' },
  });
  t.is(p.status, 201);
  t.is(p.body.expires_at, null);
  t.is((await api(s.f.app, 'POST', '/v1/tokens', { token: lasting.token, body: { credential_id: s.f.credentials.openai, ttl: '30d' } })).status, 201);
});

test('a policy stored before policies expired (a SQLite file without the column) lasts until deleted', async (t) => {
  const dir = tempDir(t);
  const old = new DatabaseSync(path.join(dir, 'keyward.db'));
  old.exec(`CREATE TABLE trust_policies (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, issuer TEXT NOT NULL, audience TEXT NOT NULL, subject TEXT NOT NULL,
    claims TEXT NOT NULL, credential_id TEXT NOT NULL, ttl TEXT NOT NULL, scopes TEXT NOT NULL, created_at INTEGER NOT NULL) STRICT`);
  old.prepare('INSERT INTO trust_policies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)').run('tp_old', 'org_a', 'https://gitlab.com', 'k', 'project_path:acme/*', '{}', 'cred_a', '15m', '{}', 1);
  old.close();
  const store = new SqliteStore(dir);
  t.teardown(() => store.close());
  t.like(await store.getTrustPolicy('org_a', 'tp_old'), { subject: 'project_path:acme/*', expiresAt: null });
  const fresh = { ...(await store.getTrustPolicy('org_a', 'tp_old'))!, id: 'tp_new', expiresAt: 5_000 };
  await store.createTrustPolicy(fresh);
  t.deepEqual(await store.findTrustPolicy('tp_new'), fresh);
});

test('a stored prefix that does not fix the owner (written before the rule) matches nothing: it no longer blocks other organisations', async (t) => {
  const s = await identitySetup(t);
  const ours = await s.policy();
  const store = s.f.app.server.container.resolve<Store>(Symbols.Store);
  for (const subject of ['r*', 'repo:*', 'repo:acme*']) {
    await store.createTrustPolicy({
      id: newId('tp'), orgId: 'org_someoneelse', issuer: s.issuer.url, audience: 'https://keyward.test', subject, claims: {},
      credentialId: s.f.credentials.openai, ttl: '1m', scopes: {}, createdAt: 0, expiresAt: null,
    });
  }
  const r = await s.exchange(await s.issuer.sign(s.clock.now()));
  t.is(r.status, 200, r.text);
  t.is(r.body.expires_in, 600, `our policy ${ours}`);
});
