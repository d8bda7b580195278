import 'reflect-metadata';
import test from 'ava';
import { CredentialService } from '../../src/vault/credential-service.js';
import { newToken } from '../../src/ids.js';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { monotonicClock, RFC3339_MS_UTC } from '../support/clocks.js';

const KEY = 'sk-test-credentials-abcdWXYZ';

test('POST /v1/credentials → 201 with id, provider, key_hint and RFC 3339 ms UTC times; never the key', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const before = Date.now();
  const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: KEY } });
  const after = Date.now();
  t.is(r.status, 201);
  t.regex(r.headers.get('content-type') ?? '', /^application\/json/);
  t.regex(r.body.id, /^cred_[0-9A-Za-z]{24}$/);
  t.is(r.body.provider, 'openai');
  t.is(r.body.key_hint, '…WXYZ');
  t.regex(r.body.created_at, RFC3339_MS_UTC);
  const created = Date.parse(r.body.created_at);
  t.true(created >= before && created <= after);
  t.false('api_key' in r.body);
  t.false(r.text.includes(KEY));
  t.false(r.text.includes('abcdWXYZ'));

  const got = await api(app, 'GET', `/v1/credentials/${r.body.id}`, { token: org.token });
  t.is(got.status, 200);
  t.is(got.body.id, r.body.id);
  t.is(got.body.provider, 'openai');
  t.is(got.body.key_hint, '…WXYZ');
  t.is(got.body.created_at, r.body.created_at);
  t.false(got.text.includes(KEY));
  t.false(app.logText().includes(KEY));
});

test('credentials need a valid org token: absent, malformed, unknown or the admin token → 401 unauthenticated', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const id = await createCredential(app, org, 'openai', KEY);
  const unknownOtok = newToken('otok');
  const flipped = org.token.slice(0, 10) + (org.token[10] === 'A' ? 'B' : 'A') + org.token.slice(11);
  const cases: Array<Record<string, string>> = [
    {},
    { authorization: 'Bearer' },
    { authorization: 'Bearer otok_nope' },
    { authorization: `Basic ${org.token}` },
    { authorization: `Bearer ${unknownOtok}` },
    { authorization: `Bearer ${flipped}` },
    { authorization: `Bearer ${org.token.toLowerCase()}` },
    { authorization: 'Bearer test-admin-token-0123456789abcdef' },
    { authorization: `Bearer ${org.token} extra` },
  ];
  for (const headers of cases) {
    for (const [method, path] of [['GET', '/v1/credentials'], ['GET', `/v1/credentials/${id}`], ['DELETE', `/v1/credentials/${id}`], ['POST', '/v1/credentials']] as const) {
      const r = await api(app, method, path, { headers, ...(method === 'POST' ? { body: { provider: 'openai', api_key: KEY } } : {}) });
      t.is(r.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
      t.deepEqual(r.body?.error?.code, 'unauthenticated');
      t.is(r.body.error.type, 'authentication');
    }
  }
  // Nothing above deleted or created anything.
  const list = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.deepEqual(list.body.data.map((c: any) => c.id), [id]);
});

test('unknown provider → 400 unknown_provider', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  for (const provider of ['nope', 'OpenAI', 'openai ', '../openai', 'constructor', '__proto__']) {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider, api_key: KEY } });
    t.is(r.status, 400, provider);
    t.is(r.body.error.code, 'unknown_provider', provider);
    t.is(r.body.error.type, 'invalid_request');
  }
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 0);
});

test('bad bodies → 400 invalid_request: invalid JSON, non-objects, missing or mistyped fields, unknown fields', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const json = { 'content-type': 'application/json' };
  const raw = ['', '   ', '{', '{"provider":"openai",', 'not json', '[]', '[{"provider":"openai"}]', '"openai"', '42', 'null', 'true', '{"provider":"openai","api_key":"' + KEY + '"}x'];
  for (const rawBody of raw) {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody, headers: json });
    t.is(r.status, 400, JSON.stringify(rawBody));
    t.is(r.body.error.code, 'invalid_request', JSON.stringify(rawBody));
    t.is(r.body.error.type, 'invalid_request');
    t.truthy(r.headers.get('x-request-id'));
  }
  const bodies: unknown[] = [
    {},
    { api_key: KEY },
    { provider: 'openai' },
    { provider: '', api_key: KEY },
    { provider: 42, api_key: KEY },
    { provider: ['openai'], api_key: KEY },
    { provider: 'openai', api_key: 12345678901 },
    { provider: 'openai', api_key: 'short' },
    { provider: 'openai', api_key: 'has space inside key' },
    { provider: 'openai', api_key: 'sk-with\r\nx-injected: header' },
    { provider: 'openai', api_key: 'sk-ünïcode-key-123' },
    { provider: 'openai', api_key: 'x'.repeat(4097) },
    { provider: 'openai', api_key: KEY, label: 'prod' },
    { provider: 'openai', api_key: KEY, apiKey: KEY },
    { provider: 'openai', api_key: KEY, __proto__x: 1 },
  ];
  for (const body of bodies) {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request', JSON.stringify(body));
    t.false(r.text.includes(KEY), 'an error never echoes the key');
  }
  // A JSON own property named __proto__ is an unknown field too (and pollutes nothing).
  const proto = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: `{"provider":"openai","api_key":"${KEY}","__proto__":{"admin":true}}`, headers: json });
  t.is(proto.status, 400);
  t.is(proto.body.error.code, 'invalid_request');
  t.is(({} as any).admin, undefined);
  // Unknown query parameters are refused as well.
  const q = await api(app, 'POST', '/v1/credentials?provider=openai', { token: org.token, body: { provider: 'openai', api_key: KEY } });
  t.is(q.status, 400);
  t.is(q.body.error.code, 'invalid_request');
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 0);
  t.false(app.logText().includes(KEY));
});

test('over KEYWARD_FREE_CREDENTIALS → 403 limit_exceeded; deleted credentials do not count', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_FREE_CREDENTIALS: '3' } });
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push(await createCredential(app, org, 'openai', `${KEY}-${i}`));
  const over = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'anthropic', api_key: `${KEY}-x` } });
  t.is(over.status, 403);
  t.is(over.body.error.code, 'limit_exceeded');
  t.is(over.body.error.type, 'permission');
  // Another organisation has its own allowance.
  t.is((await api(app, 'POST', '/v1/credentials', { token: other.token, body: { provider: 'openai', api_key: KEY } })).status, 201);
  const usage = await api(app, 'GET', '/v1/usage', { token: org.token });
  t.deepEqual(usage.body.credentials, { used: 3, limit: 3 });

  t.is((await api(app, 'DELETE', `/v1/credentials/${ids[0]}`, { token: org.token })).status, 200);
  const again = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'anthropic', api_key: `${KEY}-y` } });
  t.is(again.status, 201);
  const full = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'anthropic', api_key: `${KEY}-z` } });
  t.is(full.status, 403);
  t.is(full.body.error.code, 'limit_exceeded');
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 3);
});

test('GET /v1/credentials lists newest first and pages with limit, starting_after and has_more', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const empty = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(empty.status, 200);
  t.deepEqual(empty.body.data, []);
  t.is(empty.body.has_more, false);

  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push(await createCredential(app, org, i % 2 ? 'anthropic' : 'openai', `${KEY}-${i}000`));
  const newestFirst = [...ids].reverse();

  const all = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.deepEqual(all.body.data.map((c: any) => c.id), newestFirst);
  t.is(all.body.has_more, false);
  for (const c of all.body.data) {
    t.deepEqual(Object.keys(c).filter((k) => ['id', 'provider', 'key_hint', 'created_at'].includes(k)).sort(), ['created_at', 'id', 'key_hint', 'provider']);
    t.regex(c.created_at, RFC3339_MS_UTC);
    t.false('api_key' in c);
  }
  t.is(all.body.data[0].key_hint, '…6000');

  const seen: string[] = [];
  let after: string | undefined;
  const pages: boolean[] = [];
  for (;;) {
    const r = await api(app, 'GET', `/v1/credentials?limit=3${after ? `&starting_after=${after}` : ''}`, { token: org.token });
    t.is(r.status, 200);
    t.true(r.body.data.length <= 3);
    seen.push(...r.body.data.map((c: any) => c.id));
    pages.push(r.body.has_more);
    if (!r.body.has_more) break;
    after = r.body.data[r.body.data.length - 1].id;
  }
  t.deepEqual(seen, newestFirst);
  t.deepEqual(pages, [true, true, false]);

  // Exactly a full last page: has_more is false, not a phantom extra page.
  const exact = await api(app, 'GET', `/v1/credentials?limit=1&starting_after=${ids[1]}`, { token: org.token });
  t.deepEqual(exact.body.data.map((c: any) => c.id), [ids[0]]);
  t.is(exact.body.has_more, false);
  const afterOldest = await api(app, 'GET', `/v1/credentials?starting_after=${ids[0]}`, { token: org.token });
  t.deepEqual(afterOldest.body.data, []);
  t.is(afterOldest.body.has_more, false);
  t.is((await api(app, 'GET', '/v1/credentials?limit=100', { token: org.token })).body.data.length, 7);
  t.is((await api(app, 'GET', '/v1/credentials?limit=1', { token: org.token })).body.has_more, true);
});

test('bad paging parameters → 400 invalid_request', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const id = await createCredential(app, org, 'openai', KEY);
  await api(app, 'DELETE', `/v1/credentials/${id}`, { token: org.token });
  const bad = [
    'limit=0', 'limit=101', 'limit=-1', 'limit=abc', 'limit=01', 'limit=1.5', 'limit=', 'limit=1e1', 'limit=%201',
    'starting_after=cred_AAAAAAAAAAAAAAAAAAAAAAAA', `starting_after=${id}`, 'starting_after=', 'starting_after=cred-x',
    'limit=5&bogus=1', 'offset=10',
  ];
  for (const q of bad) {
    const r = await api(app, 'GET', `/v1/credentials?${q}`, { token: org.token });
    t.is(r.status, 400, q);
    t.is(r.body.error.code, 'invalid_request', q);
  }
});

test('GET and DELETE /v1/credentials/:id: 200, then 404 not_found for a deleted or unknown id', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const keep = await createCredential(app, org, 'anthropic', `${KEY}-keep`);
  const id = await createCredential(app, org, 'openai', KEY);
  const del = await api(app, 'DELETE', `/v1/credentials/${id}`, { token: org.token });
  t.is(del.status, 200);
  t.is(del.body.id, id);
  t.is(del.body.deleted, true);
  for (const [method, path] of [['GET', `/v1/credentials/${id}`], ['DELETE', `/v1/credentials/${id}`], ['GET', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA'], ['DELETE', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA']] as const) {
    const r = await api(app, method, path, { token: org.token });
    t.is(r.status, 404, `${method} ${path}`);
    t.is(r.body.error.code, 'not_found');
    t.is(r.body.error.type, 'not_found');
  }
  const list = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.deepEqual(list.body.data.map((c: any) => c.id), [keep]);
});

test('POST /v1/credentials/:id/rotate replaces the key in place: new key_hint, same id, tokens keep working', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const id = await createCredential(app, org, 'openai', KEY);
  const tok = await mintToken(app, org, id);
  const credentials = app.server.container.resolve(CredentialService);
  const ref = { orgId: org.id, id, provider: 'openai' };
  t.is(await credentials.keyFor(ref), KEY);

  const NEW = 'sk-test-rotated-key-0000abcd';
  const r = await api(app, 'POST', `/v1/credentials/${id}/rotate`, { token: org.token, body: { api_key: NEW } });
  t.is(r.status, 200);
  t.is(r.body.id, id);
  t.is(r.body.provider, 'openai');
  t.is(r.body.key_hint, '…abcd');
  t.false(r.text.includes(NEW));
  t.is(await credentials.keyFor(ref), NEW, 'the rotated key is served at once, not the cached old one');
  t.is((await api(app, 'GET', `/v1/credentials/${id}`, { token: org.token })).body.key_hint, '…abcd');
  t.is((await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);

  const bad = await api(app, 'POST', `/v1/credentials/${id}/rotate`, { token: org.token, body: { api_key: 'short' } });
  t.is(bad.status, 400);
  t.is(bad.body.error.code, 'invalid_request');
  const extra = await api(app, 'POST', `/v1/credentials/${id}/rotate`, { token: org.token, body: { api_key: NEW, provider: 'anthropic' } });
  t.is(extra.status, 400);
  const missing = await api(app, 'POST', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA/rotate', { token: org.token, body: { api_key: NEW } });
  t.is(missing.status, 404);
  t.is(missing.body.error.code, 'not_found');
  const anon = await api(app, 'POST', `/v1/credentials/${id}/rotate`, { body: { api_key: 'sk-attacker-key-000' } });
  t.is(anon.status, 401);
  t.is(await credentials.keyFor(ref), NEW);
  t.false(app.logText().includes(NEW));
  t.false(app.logText().includes(KEY));
});
