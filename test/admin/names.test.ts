/**
 * Names on credentials, tokens and admin keys over the admin API: given at creation or by PATCH (null
 * removes one), returned in views, found by a case-insensitive `?name=` prefix, refused when not 1 to 64
 * printable characters (control and bidirectional-override characters included), replayed as stored, and
 * carried into the audit trail as `target_name` (the target stays the id; never a secret there).
 */
import 'reflect-metadata';
import test from 'ava';
import { ADMIN_TOKEN, api, createOrg, startApp } from '../support/app.js';
import { monotonicClock } from '../support/clocks.js';

const KEY = 'sk-names-0123456789abcdef';

test('credentials: named at creation, renamed and unnamed by PATCH, listed by a name prefix in any case', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const create = (body: Record<string, unknown>, token = org.token) => api(app, 'POST', '/v1/credentials', { token, body: { provider: 'openai', api_key: KEY, ...body } });
  const prod = await create({ name: 'Prod OpenAI' });
  t.is(prod.status, 201);
  t.is(prod.body.name, 'Prod OpenAI');
  const staging = await create({ name: 'staging' });
  const unnamed = await create({});
  t.false('name' in unnamed.body);
  await create({ name: 'prod elsewhere' }, other.token);
  t.is((await api(app, 'GET', `/v1/credentials/${prod.body.id}`, { token: org.token })).body.name, 'Prod OpenAI');

  const byPrefix = async (q: string) => (await api(app, 'GET', `/v1/credentials?name=${encodeURIComponent(q)}`, { token: org.token })).body.data.map((c: any) => c.id);
  t.deepEqual(await byPrefix('PROD'), [prod.body.id]);
  t.deepEqual(await byPrefix('s'), [staging.body.id]);
  t.deepEqual(await byPrefix('nothing'), []);

  const renamed = await api(app, 'PATCH', `/v1/credentials/${unnamed.body.id}`, { token: org.token, body: { name: 'prod backup' } });
  t.is(renamed.status, 200);
  t.is(renamed.body.name, 'prod backup');
  t.is(renamed.body.key_hint, unnamed.body.key_hint);
  t.deepEqual(await byPrefix('prod'), [unnamed.body.id, prod.body.id]);
  const cleared = await api(app, 'PATCH', `/v1/credentials/${prod.body.id}`, { token: org.token, body: { name: null } });
  t.is(cleared.status, 200);
  t.false('name' in cleared.body);
  t.deepEqual(await byPrefix('prod'), [unnamed.body.id]);
  // Another organisation's id, or none, answers 404; a body without `name` or with more is 400.
  t.is((await api(app, 'PATCH', `/v1/credentials/${prod.body.id}`, { token: other.token, body: { name: 'x' } })).status, 404);
  t.is((await api(app, 'PATCH', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA', { token: org.token, body: { name: 'x' } })).status, 404);
  for (const body of [{}, { name: 'x', api_key: KEY }, { name: 5 }]) {
    const r = await api(app, 'PATCH', `/v1/credentials/${prod.body.id}`, { token: org.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request');
  }
});

test('a name is 1 to 64 printable characters, not starting or ending with a space: anything else → 400 naming `name`, nothing stored', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY, name: 'ok' } })).body.id;
  const ok = ['x', 'é'.repeat(64), '😀'.repeat(64), 'a b', 'ci: nightly (eu) #3', '語'];
  const bad: unknown[] = ['', ' x', 'x ', 'x'.repeat(65), '😀'.repeat(65), 'a\nb', 'a\u0000b', 'a\u202eb', 'a\u200bb', 'a\u2028b', '\ud800', 42, [], {}];
  for (const name of ok) {
    for (const [path, body] of [['/v1/credentials', { provider: 'openai', api_key: KEY }], ['/v1/tokens', { credential_id: cred, ttl: '1m' }], ['/v1/admin-keys', { role: 'viewer' }]] as const) {
      const r = await api(app, 'POST', path, { token: org.token, body: { ...body, name } });
      t.is(r.status, 201, `${path} ${JSON.stringify(name)}`);
      t.is(r.body.name, name);
    }
  }
  const counts = async () => Promise.all(['/v1/credentials', '/v1/tokens', '/v1/admin-keys'].map(async (p) => (await api(app, 'GET', `${p}?limit=100`, { token: org.token })).body.data.length));
  const before = await counts();
  for (const name of bad) {
    for (const [path, body] of [['/v1/credentials', { provider: 'openai', api_key: KEY }], ['/v1/tokens', { credential_id: cred, ttl: '1m' }], ['/v1/admin-keys', { role: 'viewer' }]] as const) {
      const r = await api(app, 'POST', path, { token: org.token, body: { ...body, name } });
      t.is(r.status, 400, `${path} ${JSON.stringify(name)}`);
      t.is(r.body.error.param, 'name', `${path} ${JSON.stringify(name)}`);
    }
    const patch = await api(app, 'PATCH', `/v1/credentials/${cred}`, { token: org.token, body: { name } });
    t.is(patch.status, 400, `PATCH ${JSON.stringify(name)}`);
  }
  t.deepEqual(await counts(), before);
  // The prefix filter takes 1 to 64 printable characters too (a trailing space is a fine prefix).
  t.is((await api(app, 'GET', '/v1/credentials?name=ok%20', { token: org.token })).status, 200);
  for (const q of ['name=', `name=${'x'.repeat(65)}`, 'name=a%0Ab', 'name=a%E2%80%AEb']) {
    const r = await api(app, 'GET', `/v1/credentials?${q}`, { token: org.token });
    t.is(r.status, 400, q);
    t.is(r.body.error.param, 'name', q);
  }
});

test('tokens and admin keys: named, renamed by PATCH (roles as for deletion), listed by prefix; an idempotent replay keeps the name', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY } })).body.id;
  const headers = { 'idempotency-key': 'named-token-1' };
  const first = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', name: 'Evals agent' }, headers });
  const replay = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', name: 'Evals agent' }, headers });
  t.is(replay.headers.get('idempotent-replayed'), 'true');
  t.is(replay.body.name, 'Evals agent');
  t.false('token' in replay.body);
  const other = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', name: 'ci runner' } });
  t.deepEqual((await api(app, 'GET', '/v1/tokens?name=EVAL', { token: org.token })).body.data.map((x: any) => x.id), [first.body.id]);
  const renamed = await api(app, 'PATCH', `/v1/tokens/${other.body.id}`, { token: org.token, body: { name: 'evals shadow' } });
  t.is(renamed.status, 200);
  t.like(renamed.body, { id: other.body.id, name: 'evals shadow', status: 'active' });
  t.false('token' in renamed.body);
  t.deepEqual((await api(app, 'GET', '/v1/tokens?name=evals', { token: org.token })).body.data.map((x: any) => x.id), [other.body.id, first.body.id]);
  // The token still works the same after a rename: its value never changes.
  t.is((await api(app, 'GET', `/v1/tokens/${other.body.id}`, { token: org.token })).body.expires_at, other.body.expires_at);

  const admin = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'admin', name: 'ops' } });
  const unnamed = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'viewer' } });
  t.is(unnamed.status, 201);
  t.false('name' in unnamed.body);
  t.is((await api(app, 'PATCH', `/v1/admin-keys/${unnamed.body.id}`, { token: admin.body.token, body: { name: 'dashboard' } })).body.name, 'dashboard');
  t.deepEqual((await api(app, 'GET', '/v1/admin-keys?name=DASH', { token: org.token })).body.data.map((x: any) => x.id), [unnamed.body.id]);
  // A viewer renames nothing; a minter renames no token.
  t.is((await api(app, 'PATCH', `/v1/admin-keys/${admin.body.id}`, { token: unnamed.body.token, body: { name: 'x' } })).status, 403);
  const minter = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'minter' } });
  t.is((await api(app, 'PATCH', `/v1/tokens/${first.body.id}`, { token: minter.body.token, body: { name: 'x' } })).status, 403);
});

test('a revoked token is kept as a record: GET /v1/tokens?status=revoked lists it with who and when; by id it answers 404; its value never works again', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY, name: 'main' } })).body.id;
  const self = await api(app, 'GET', '/v1/orgs/self', { token: org.token });
  const doomed = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', name: 'old agent', models: ['gpt-4o-mini'] } });
  const kept = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', name: 'new agent' } });
  t.deepEqual((await api(app, 'GET', '/v1/tokens?status=revoked', { token: org.token })).body, { object: 'list', data: [], has_more: false });

  const del = await api(app, 'DELETE', `/v1/tokens/${doomed.body.id}`, { token: org.token });
  t.deepEqual(del.body, { id: doomed.body.id, object: 'token', revoked: true });
  for (const method of ['GET', 'DELETE', 'PATCH']) {
    const r = await api(app, method, `/v1/tokens/${doomed.body.id}`, { token: org.token, ...(method === 'PATCH' ? { body: { name: 'x' } } : {}) });
    t.is(r.status, 404, method);
  }
  const live = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.deepEqual(live.body.data.map((x: any) => x.id), [kept.body.id]);
  const revoked = await api(app, 'GET', '/v1/tokens?status=revoked', { token: org.token });
  t.is(revoked.status, 200);
  t.is(revoked.body.data.length, 1);
  const r = revoked.body.data[0];
  t.like(r, { id: doomed.body.id, object: 'token', name: 'old agent', credential_id: cred, status: 'revoked', models: ['gpt-4o-mini'], revoked_by: self.body.caller.id });
  t.is(r.created_at, doomed.body.created_at);
  t.is(r.expires_at, doomed.body.expires_at);
  t.true(Date.parse(r.revoked_at) >= Date.parse(r.created_at));
  t.false('token' in r);
  t.false(revoked.text.includes(doomed.body.token));
  t.deepEqual((await api(app, 'GET', '/v1/tokens?status=revoked&name=OLD', { token: org.token })).body.data.map((x: any) => x.id), [doomed.body.id]);
  t.deepEqual((await api(app, 'GET', '/v1/tokens?status=revoked&name=new', { token: org.token })).body.data, []);
  // A live token's id is no cursor among revoked ones; only `revoked` is a status to ask for.
  for (const q of [`status=revoked&starting_after=${kept.body.id}`, 'status=active', 'status=expired', 'status=all']) {
    const bad = await api(app, 'GET', `/v1/tokens?${q}`, { token: org.token });
    t.is(bad.status, 400, q);
    t.is(bad.body.error.code, 'invalid_request', q);
  }
  // The revoked value no longer authenticates a proxied request (its hash left the lookup path).
  const proxied = await fetch(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': doomed.body.token, 'content-type': 'application/json' }, body: '{}' });
  t.is(proxied.status, 401);
  t.is(((await proxied.json()) as { error: { code: string } }).error.code, 'invalid_token');
});

test('a minter lists only the revoked tokens it minted; viewers list them all', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY } })).body.id;
  const minter = (await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'minter', name: 'bot' } })).body;
  const viewer = (await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'viewer' } })).body;
  const mine = (await api(app, 'POST', '/v1/tokens', { token: minter.token, body: { credential_id: cred, ttl: '1h' } })).body;
  const theirs = (await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h' } })).body;
  for (const x of [mine, theirs]) t.is((await api(app, 'DELETE', `/v1/tokens/${x.id}`, { token: org.token })).status, 200);
  t.deepEqual((await api(app, 'GET', '/v1/tokens?status=revoked', { token: minter.token })).body.data.map((x: any) => x.id), [mine.id]);
  t.deepEqual((await api(app, 'GET', '/v1/tokens?status=revoked', { token: viewer.token })).body.data.map((x: any) => x.id), [theirs.id, mine.id]);
});

test('the audit trail names what was acted on (target_name), keeps the id as the target, and holds no secret', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app, 'Acme Corp');
  const cred = (await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY, name: 'Prod OpenAI' } })).body;
  await api(app, 'PATCH', `/v1/credentials/${cred.id}`, { token: org.token, body: { name: 'prod openai (eu)' } });
  const tok = (await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.id, ttl: '1h', name: 'evals' } })).body;
  await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token });
  const key = (await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { role: 'viewer', name: 'dashboard' } })).body;
  await api(app, 'DELETE', `/v1/admin-keys/${key.id}`, { token: org.token });
  const plain = (await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.id, ttl: '1h' } })).body;
  await api(app, 'DELETE', `/v1/credentials/${cred.id}`, { token: org.token });

  const audit = await api(app, 'GET', '/v1/audit?limit=100', { token: org.token });
  const rows = audit.body.data.map((e: any) => [e.action, e.target, e.target_name]).reverse();
  t.deepEqual(rows, [
    ['org.create', org.id, 'Acme Corp'],
    ['credential.create', cred.id, 'Prod OpenAI'],
    ['credential.update', cred.id, 'prod openai (eu)'],
    ['token.create', tok.id, 'evals'],
    ['token.revoke', tok.id, 'evals'],
    ['admin_key.create', key.id, 'dashboard'],
    ['admin_key.revoke', key.id, 'dashboard'],
    ['token.create', plain.id, undefined],
    ['credential.delete', cred.id, 'prod openai (eu)'],
  ]);
  for (const secret of [KEY, tok.token, key.token, plain.token, org.token, ADMIN_TOKEN]) t.false(audit.text.includes(secret));
});
