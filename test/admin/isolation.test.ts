import test from 'ava';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { monotonicClock } from '../support/clocks.js';

const MISSING_CRED = 'cred_AAAAAAAAAAAAAAAAAAAAAAAA';
const MISSING_TOK = 'tok_AAAAAAAAAAAAAAAAAAAAAAAA';

/** A response without its per-request id: what must be identical for "not yours" and "not there". */
const shape = (r: { status: number; text: string; headers: Headers }) => ({
  status: r.status,
  text: r.text,
  contentType: r.headers.get('content-type'),
  contentLength: r.headers.get('content-length'),
});

test("another organisation's ids answer 404 exactly as missing ones do, and nothing of theirs changes", async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const a = await createOrg(app, 'alpha');
  const b = await createOrg(app, 'beta');
  const aCred = await createCredential(app, a, 'openai', 'sk-test-alpha-00000001');
  const bCred = await createCredential(app, b, 'openai', 'sk-test-beta-000000002');
  const aTok = await mintToken(app, a, aCred);
  const bTok = await mintToken(app, b, bCred);

  const pairs: Array<[string, string, string, unknown?]> = [
    ['GET', `/v1/credentials/${bCred}`, `/v1/credentials/${MISSING_CRED}`],
    ['DELETE', `/v1/credentials/${bCred}`, `/v1/credentials/${MISSING_CRED}`],
    ['POST', `/v1/credentials/${bCred}/rotate`, `/v1/credentials/${MISSING_CRED}/rotate`, { api_key: 'sk-test-hijack-0000000' }],
    ['GET', `/v1/tokens/${bTok.id}`, `/v1/tokens/${MISSING_TOK}`],
    ['DELETE', `/v1/tokens/${bTok.id}`, `/v1/tokens/${MISSING_TOK}`],
  ];
  for (const [method, theirs, missing, body] of pairs) {
    const x = await api(app, method, theirs, { token: a.token, ...(body ? { body } : {}) });
    const y = await api(app, method, missing, { token: a.token, ...(body ? { body } : {}) });
    t.is(x.status, 404, `${method} ${theirs}`);
    t.is(x.body.error.code, 'not_found');
    t.deepEqual(shape(x), shape(y), `${method} ${theirs}`);
  }
  const mintTheirs = await api(app, 'POST', '/v1/tokens', { token: a.token, body: { credential_id: bCred, ttl: '15m' } });
  const mintMissing = await api(app, 'POST', '/v1/tokens', { token: a.token, body: { credential_id: MISSING_CRED, ttl: '15m' } });
  t.is(mintTheirs.status, 404);
  t.deepEqual(shape(mintTheirs), shape(mintMissing));
  // Cursors are per organisation too.
  for (const [path, id, missing] of [['/v1/credentials', bCred, MISSING_CRED], ['/v1/tokens', bTok.id, MISSING_TOK]] as const) {
    const x = await api(app, 'GET', `${path}?starting_after=${id}`, { token: a.token });
    const y = await api(app, 'GET', `${path}?starting_after=${missing}`, { token: a.token });
    t.is(x.status, 400);
    t.deepEqual(shape(x), shape(y));
  }

  // Lists show only one's own.
  t.deepEqual((await api(app, 'GET', '/v1/credentials', { token: a.token })).body.data.map((c: any) => c.id), [aCred]);
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: a.token })).body.data.map((x: any) => x.id), [aTok.id]);
  // B's records survived every attempt, its key unchanged.
  const bGot = await api(app, 'GET', `/v1/credentials/${bCred}`, { token: b.token });
  t.is(bGot.status, 200);
  t.is(bGot.body.key_hint, '…0002');
  t.is((await api(app, 'GET', `/v1/tokens/${bTok.id}`, { token: b.token })).status, 200);
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: b.token })).body.data.map((x: any) => x.id), [bTok.id]);
  t.is((await api(app, 'GET', '/v1/usage', { token: b.token })).body.credentials.used, 1);
});

test('GET /v1/usage → 200 {period, proxy_requests {used, held, limit}, credentials {used, limit}}', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_FREE_CREDENTIALS: '4', KEYWARD_FREE_PROXY_REQUESTS: '250' } });
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const r = await api(app, 'GET', '/v1/usage', { token: org.token });
  t.is(r.status, 200);
  const now = new Date();
  t.is(r.body.period, `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`);
  t.deepEqual(r.body.proxy_requests, { used: 0, held: 0, limit: 250 });
  t.deepEqual(r.body.credentials, { used: 0, limit: 4 });
  t.truthy(r.headers.get('x-request-id'));

  const c1 = await createCredential(app, org, 'openai', 'sk-test-usage-000000001');
  await createCredential(app, org, 'anthropic', 'sk-test-usage-000000002');
  await createCredential(app, other, 'openai', 'sk-test-usage-000000003');
  t.deepEqual((await api(app, 'GET', '/v1/usage', { token: org.token })).body.credentials, { used: 2, limit: 4 });
  await api(app, 'DELETE', `/v1/credentials/${c1}`, { token: org.token });
  t.deepEqual((await api(app, 'GET', '/v1/usage', { token: org.token })).body.credentials, { used: 1, limit: 4 });
  t.deepEqual((await api(app, 'GET', '/v1/usage', { token: other.token })).body.credentials, { used: 1, limit: 4 });

  t.is((await api(app, 'GET', '/v1/usage')).status, 401);
  const q = await api(app, 'GET', '/v1/usage?period=2020-01', { token: org.token });
  t.is(q.status, 400);
  t.is(q.body.error.code, 'invalid_request');
});

test('defaults: 10 credentials and 10000 proxy requests per organisation', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const r = await api(app, 'GET', '/v1/usage', { token: org.token });
  t.deepEqual(r.body.credentials, { used: 0, limit: 10 });
  t.deepEqual(r.body.proxy_requests, { used: 0, held: 0, limit: 10_000 });
});
