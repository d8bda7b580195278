/**
 * /v1/admin-keys: keys are shown once and stored as hashes; list and get never show a value; a
 * deleted key is refused at once, on this instance and another on the same store; a minter mints
 * only for its credentials and sees only its own tokens; no caller creates a key above its role
 * or its own lifetime; the audit trail names the key.
 */
import 'reflect-metadata';
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { isWellFormedToken } from '../../src/ids.js';
import { api, createCredential, createOrg, startApp, type Org, type TestApp } from '../support/app.js';
import { ManualClock, monotonicClock, RFC3339_MS_UTC } from '../support/clocks.js';

const KEY = 'sk-admin-keys-0123456789abcdef';

async function createKey(app: TestApp, token: string, body: Record<string, unknown>) {
  return api(app, 'POST', '/v1/admin-keys', { token, body });
}

async function ownerId(app: TestApp, org: Org): Promise<string> {
  return (await api(app, 'GET', '/v1/orgs/self', { token: org.token })).body.caller.id;
}

test('POST /v1/admin-keys → 201 with akey_ id and an otok_ shown once; GET /v1/orgs/self names the caller and its role', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const self = await api(app, 'GET', '/v1/orgs/self', { token: org.token });
  t.is(self.status, 200);
  t.like(self.body, { id: org.id, object: 'organization', name: 'acme', caller: { role: 'owner' } });
  t.regex(self.body.caller.id, /^otk_[0-9A-Za-z]{24}$/);
  t.regex(self.body.created_at, RFC3339_MS_UTC);
  t.false('token' in self.body);

  const r = await createKey(app, org.token, { name: 'deploy bot', role: 'admin' });
  t.is(r.status, 201);
  t.regex(r.body.id, /^akey_[0-9A-Za-z]{24}$/);
  t.true(isWellFormedToken('otok', r.body.token));
  t.like(r.body, { object: 'admin_key', name: 'deploy bot', role: 'admin', status: 'active', expires_at: null, created_by: self.body.caller.id });
  t.false('credential_ids' in r.body);

  const asKey = await api(app, 'GET', '/v1/orgs/self', { token: r.body.token });
  t.deepEqual(asKey.body.caller, { id: r.body.id, role: 'admin' });
  t.is(asKey.body.id, org.id);
});

test('list and get never show a key value; the store holds only its hash; no log line carries it', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const made = [];
  for (const role of ['viewer', 'minter', 'admin']) made.push((await createKey(app, org.token, { name: `${role} key`, role, ttl: '30d' })).body);
  const list = await api(app, 'GET', '/v1/admin-keys', { token: org.token });
  t.is(list.status, 200);
  t.deepEqual(list.body.data.map((k: { id: string }) => k.id), made.map((k) => k.id).reverse(), 'newest first');
  const page = await api(app, 'GET', `/v1/admin-keys?limit=1&starting_after=${made[2].id}`, { token: org.token });
  t.deepEqual(page.body.data.map((k: { id: string }) => k.id), [made[1].id]);
  t.true(page.body.has_more);
  t.is((await api(app, 'GET', '/v1/admin-keys?starting_after=akey_unknown', { token: org.token })).status, 400);
  const one = await api(app, 'GET', `/v1/admin-keys/${made[0].id}`, { token: org.token });
  t.is(one.status, 200);
  t.is(Date.parse(one.body.expires_at) - Date.parse(one.body.created_at), 30 * 86_400_000);
  for (const k of made) {
    t.false(list.text.includes(k.token));
    t.false(one.text.includes(k.token));
    t.false(app.logText().includes(k.token), 'never logged');
    // Used once so the authentication path logs too.
    await api(app, 'GET', '/v1/orgs/self', { token: k.token });
    t.false(app.logText().includes(k.token));
  }
  await app.stop();
  const files = readdirSync(app.dataDir).filter((f) => f.startsWith('keyward.db'));
  t.true(files.length > 0);
  const bytes = Buffer.concat(files.map((f) => readFileSync(path.join(app.dataDir, f))));
  for (const k of made) t.false(bytes.includes(Buffer.from(k.token)), 'no key value in the store');
});

test('delete takes effect at once here and on another instance on the same store; a second delete and a get are 404', async (t) => {
  const a = await startApp(t);
  const b = await startApp(t, { dataDir: a.dataDir });
  const org = await createOrg(a);
  const key = (await createKey(a, org.token, { name: 'temp', role: 'viewer' })).body;
  t.is((await api(a, 'GET', '/v1/usage', { token: key.token })).status, 200);
  t.is((await api(b, 'GET', '/v1/usage', { token: key.token })).status, 200);
  const del = await api(a, 'DELETE', `/v1/admin-keys/${key.id}`, { token: org.token });
  t.is(del.status, 200);
  t.deepEqual(del.body, { id: key.id, object: 'admin_key', revoked: true });
  t.is((await api(a, 'GET', '/v1/usage', { token: key.token })).status, 401);
  t.is((await api(b, 'GET', '/v1/usage', { token: key.token })).status, 401, 'refused at once on the other instance');
  t.is((await api(a, 'DELETE', `/v1/admin-keys/${key.id}`, { token: org.token })).status, 404);
  t.is((await api(b, 'GET', `/v1/admin-keys/${key.id}`, { token: org.token })).status, 404);
  t.deepEqual((await api(b, 'GET', '/v1/admin-keys', { token: org.token })).body.data, []);
});

test('another organisation cannot see, use or delete the key (404 as a missing one)', async (t) => {
  const app = await startApp(t);
  const acme = await createOrg(app, 'acme');
  const other = await createOrg(app, 'other');
  const key = (await createKey(app, acme.token, { name: 'k', role: 'admin' })).body;
  t.is((await api(app, 'GET', `/v1/admin-keys/${key.id}`, { token: other.token })).status, 404);
  t.is((await api(app, 'DELETE', `/v1/admin-keys/${key.id}`, { token: other.token })).status, 404);
  t.deepEqual((await api(app, 'GET', '/v1/admin-keys', { token: other.token })).body.data, []);
  // The key acts for its own organisation only.
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: key.token })).body.id, acme.id);
});

test('a minter mints only for its listed credentials and sees only the tokens it minted', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const credA = await createCredential(app, org, 'openai', KEY);
  const credB = await createCredential(app, org, 'openai', `${KEY}-b`);
  const limited = (await createKey(app, org.token, { name: 'ci', role: 'minter', credential_ids: [credA] })).body;
  t.deepEqual(limited.credential_ids, [credA]);
  const open = (await createKey(app, org.token, { name: 'any', role: 'minter' })).body;

  const mine = await api(app, 'POST', '/v1/tokens', { token: limited.token, body: { credential_id: credA, ttl: '15m' } });
  t.is(mine.status, 201);
  t.is(mine.body.created_by, limited.id);
  const refused = await api(app, 'POST', '/v1/tokens', { token: limited.token, body: { credential_id: credB, ttl: '15m' } });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'forbidden');
  t.is((await api(app, 'POST', '/v1/tokens', { token: open.token, body: { credential_id: credB, ttl: '15m' } })).status, 201);
  const owners = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: credA, ttl: '15m' } });
  t.is(owners.body.created_by, await ownerId(app, org));

  const seen = await api(app, 'GET', '/v1/tokens', { token: limited.token });
  t.deepEqual(seen.body.data.map((x: { id: string }) => x.id), [mine.body.id]);
  t.is((await api(app, 'GET', `/v1/tokens/${mine.body.id}`, { token: limited.token })).status, 200);
  t.is((await api(app, 'GET', `/v1/tokens/${owners.body.id}`, { token: limited.token })).status, 404, 'another\'s token answers as a missing one');
  t.is((await api(app, 'GET', `/v1/tokens?starting_after=${owners.body.id}`, { token: limited.token })).status, 400, 'nor can it page from one');
  t.is((await api(app, 'DELETE', `/v1/tokens/${mine.body.id}`, { token: limited.token })).status, 403, 'a minter does not revoke');
  // The owner sees all three.
  t.is((await api(app, 'GET', '/v1/tokens', { token: org.token })).body.data.length, 3);
  // The minted token works (a minter's tokens are ordinary proxy tokens).
  t.regex(mine.body.token, /^ptok_/);
});

test('no caller creates a key above itself: roles it does not cover, owner, or a key outliving its own', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const admin = (await createKey(app, org.token, { name: 'a', role: 'admin' })).body;
  const shortAdmin = (await createKey(app, org.token, { name: 'short', role: 'admin', ttl: '1h' })).body;
  const minter = (await createKey(app, org.token, { name: 'm', role: 'minter' })).body;
  const viewer = (await createKey(app, org.token, { name: 'v', role: 'viewer' })).body;

  // An admin creates admins and below; no one creates an owner.
  for (const role of ['admin', 'minter', 'viewer']) t.is((await createKey(app, admin.token, { name: 'x', role })).status, 201, role);
  for (const token of [org.token, admin.token]) {
    const r = await createKey(app, token, { name: 'x', role: 'owner' });
    t.is(r.status, 400);
    t.is(r.body.error.param, 'role');
  }
  // Minters and viewers create nothing.
  for (const token of [minter.token, viewer.token]) {
    for (const role of ['admin', 'minter', 'viewer']) t.is((await createKey(app, token, { name: 'x', role })).status, 403);
  }
  // A key made by an expiring key ends with it at the latest; asking for longer is refused.
  const longer = await createKey(app, shortAdmin.token, { name: 'x', role: 'viewer', ttl: '2h' });
  t.is(longer.status, 403);
  t.is(longer.body.error.code, 'forbidden');
  const inherited = await createKey(app, shortAdmin.token, { name: 'x', role: 'viewer' });
  t.is(inherited.status, 201);
  t.is(inherited.body.expires_at, shortAdmin.expires_at);
  t.is((await createKey(app, shortAdmin.token, { name: 'x', role: 'viewer', ttl: '30m' })).status, 201);

  // A retiring org token (rotated with a grace period) cannot mint itself a lasting key either.
  const rotated = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 600 } });
  t.is(rotated.status, 200);
  const fromRetiring = await createKey(app, org.token, { name: 'x', role: 'admin' });
  t.is(fromRetiring.status, 201);
  t.is(Date.parse(fromRetiring.body.expires_at), clock.now() + 600_000);
  // Admin keys are untouched by the org token's rotation.
  clock.advance(601_000);
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: org.token })).status, 401);
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: admin.token })).status, 200);
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: fromRetiring.body.token })).status, 401, 'ended with its creator');
  // An admin key never rotates the org token.
  t.is((await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: admin.token, body: {} })).status, 403);
});

test('an expired key is refused (401) and listed as expired', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const key = (await createKey(app, org.token, { name: 'k', role: 'viewer', ttl: '1h' })).body;
  t.is((await api(app, 'GET', '/v1/usage', { token: key.token })).status, 200);
  clock.advance(3_600_000);
  t.is((await api(app, 'GET', '/v1/usage', { token: key.token })).status, 401);
  t.is((await api(app, 'GET', `/v1/admin-keys/${key.id}`, { token: org.token })).body.status, 'expired');
});

test('bad bodies → 400 naming the field; credentials of another organisation → 404; credential_ids only for a minter', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const foreign = await createCredential(app, other, 'openai', KEY);
  const cases: Array<[unknown, number, string, string?]> = [
    // The name became optional (Round 4: 1 to 64 printable characters): an empty, over-long or control-character one is refused.
    [{ name: '', role: 'admin' }, 400, 'invalid_request', 'name'],
    [{ name: 'x'.repeat(65), role: 'admin' }, 400, 'invalid_request', 'name'],
    [{ name: 'a\u0007b', role: 'admin' }, 400, 'invalid_request', 'name'],
    [{ name: 'x' }, 400, 'invalid_request', 'role'],
    [{ name: 'x', role: 'root' }, 400, 'invalid_request', 'role'],
    [{ name: ' x', role: 'admin' }, 400, 'invalid_request', 'name'],
    [{ name: 'x', role: 'admin', extra: 1 }, 400, 'invalid_request'],
    [{ name: 'x', role: 'admin', ttl: '0d' }, 400, 'invalid_ttl', 'ttl'],
    [{ name: 'x', role: 'admin', ttl: '367d' }, 400, 'invalid_ttl', 'ttl'],
    [{ name: 'x', role: 'admin', ttl: 3600 }, 400, 'invalid_ttl', 'ttl'],
    [{ name: 'x', role: 'viewer', credential_ids: [foreign] }, 400, 'invalid_request', 'credential_ids'],
    [{ name: 'x', role: 'minter', credential_ids: [] }, 400, 'invalid_request', 'credential_ids'],
    [{ name: 'x', role: 'minter', credential_ids: [foreign] }, 404, 'not_found'],
    [{ name: 'x', role: 'minter', credential_ids: ['cred_nope'] }, 404, 'not_found'],
  ];
  for (const [body, status, code, param] of cases) {
    const r = await createKey(app, org.token, body as Record<string, unknown>);
    t.is(r.status, status, JSON.stringify(body));
    t.is(r.body.error.code, code, JSON.stringify(body));
    if (param) t.is(r.body.error.param, param, JSON.stringify(body));
  }
  t.deepEqual((await api(app, 'GET', '/v1/admin-keys', { token: org.token })).body.data, [], 'nothing was created');
});

test('the audit trail names the key: its actions carry its akey_ id, its creation and revocation target it', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const minter = (await createKey(app, org.token, { name: 'm', role: 'minter' })).body;
  const minted = (await api(app, 'POST', '/v1/tokens', { token: minter.token, body: { credential_id: cred, ttl: '15m' } })).body;
  t.is((await api(app, 'DELETE', `/v1/admin-keys/${minter.id}`, { token: org.token })).status, 200);
  const events = (await api(app, 'GET', '/v1/audit', { token: org.token })).body.data as Array<Record<string, string>>;
  const owner = await ownerId(app, org);
  const find = (action: string) => events.find((e) => e.action === action)!;
  t.like(find('admin_key.create'), { actor: owner, target: minter.id, outcome: 'success' });
  t.like(find('token.create'), { actor: minter.id, target: minted.id, outcome: 'success' });
  t.like(find('admin_key.revoke'), { actor: owner, target: minter.id, outcome: 'success' });
  t.false(JSON.stringify(events).includes(minter.token));
});

test('an Idempotency-Key replay of a key\'s creation leaves the value out', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const headers = { 'idempotency-key': 'make-admin-key-1' };
  const first = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'k', role: 'viewer' }, headers });
  const again = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'k', role: 'viewer' }, headers });
  t.is(again.status, 201);
  t.is(again.headers.get('idempotent-replayed'), 'true');
  t.is(again.body.id, first.body.id);
  t.false('token' in again.body);
  t.is((await api(app, 'GET', '/v1/admin-keys', { token: org.token })).body.data.length, 1);
});

test('an admin key\'s Idempotency-Keys are its own: the same key and body from a limited minter is not answered with the owner\'s mint', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const credA = await createCredential(app, org, 'openai', KEY);
  const credB = await createCredential(app, org, 'openai', `${KEY}-b`);
  const minter = (await createKey(app, org.token, { name: 'm', role: 'minter', credential_ids: [credA] })).body;
  const headers = { 'idempotency-key': 'mint-1' };
  const body = { credential_id: credB, ttl: '15m' };
  const owners = await api(app, 'POST', '/v1/tokens', { token: org.token, body, headers });
  t.is(owners.status, 201);
  const theirs = await api(app, 'POST', '/v1/tokens', { token: minter.token, body, headers });
  t.is(theirs.status, 403, 'refused for its own reason, not replayed');
  t.is(theirs.headers.get('idempotent-replayed'), null);
  t.false(theirs.text.includes(owners.body.id));
  // The owner's own retry still replays.
  t.is((await api(app, 'POST', '/v1/tokens', { token: org.token, body, headers })).headers.get('idempotent-replayed'), 'true');
});
