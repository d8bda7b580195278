import 'reflect-metadata';
import test from 'ava';
import { isWellFormedToken } from '../../src/ids.js';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { ManualClock, monotonicClock, RFC3339_MS_UTC } from '../support/clocks.js';

const KEY = 'sk-test-tokens-0123456789';

test('POST /v1/tokens → 201 with id, ptok_ token, credential_id, created_at and expires_at = created_at + ttl', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  for (const [ttl, ms] of [['15m', 900_000], ['1s', 1000], ['2h', 7_200_000], ['30d', 2_592_000_000], ['720h', 2_592_000_000], ['2592000s', 2_592_000_000]] as const) {
    const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl } });
    t.is(r.status, 201, ttl);
    t.regex(r.body.id, /^tok_[0-9A-Za-z]{24}$/);
    t.regex(r.body.token, /^ptok_[0-9A-Za-z]{38}$/);
    t.true(isWellFormedToken('ptok', r.body.token));
    t.is(r.body.credential_id, cred);
    t.regex(r.body.created_at, RFC3339_MS_UTC);
    t.regex(r.body.expires_at, RFC3339_MS_UTC);
    t.is(Date.parse(r.body.expires_at) - Date.parse(r.body.created_at), ms, ttl);
    t.false(r.text.includes(KEY));
  }
  // Every token is different.
  const a = await mintToken(app, org, cred);
  const b = await mintToken(app, org, cred);
  t.not(a.token, b.token);
  t.not(a.id, b.id);
});

test('ttl grammar: a positive integer without leading zeros and one unit of s m h d, at most KEYWARD_MAX_TTL; anything else → 400 invalid_ttl', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const bad: unknown[] = [
    '', ' ', '0s', '0m', '0d', '00m', '015m', '15', 'm', '15M', '15S', '1H', '1.5h', '1,5h', '-5m', '+5m', ' 15m', '15m ', '15 m', '15m\n',
    '\t15m', '15mm', '1h30m', '15w', '1y', '1ms', '15sec', '15min', 'PT15M', '0x10s', '1e3s', '1_000s', '١٥m', '１５m', '15ｍ',
    '31d', '721h', '43201m', '2592001s', '9999999999999999999999d', 'Infinity', 'NaN', 'null',
    15, 900, 0, -1, 1.5, null, true, false, [], ['15m'], {}, { value: '15m' },
  ];
  for (const ttl of bad) {
    const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl } });
    t.is(r.status, 400, JSON.stringify(ttl));
    t.is(r.body?.error?.code, 'invalid_ttl', JSON.stringify(ttl));
    t.is(r.body.error.type, 'invalid_request');
  }
  const missing = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred } });
  t.is(missing.status, 400);
  t.is(missing.body.error.code, 'invalid_ttl');
  // Nothing was minted by any refused request.
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: org.token })).body.data, []);
});

test('KEYWARD_MAX_TTL bounds the ttl in its own unit and any other', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_MAX_TTL: '1h' } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  for (const ttl of ['1h', '60m', '3600s', '1s']) {
    t.is((await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl } })).status, 201, ttl);
  }
  for (const ttl of ['2h', '61m', '3601s', '1d']) {
    const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl } });
    t.is(r.status, 400, ttl);
    t.is(r.body.error.code, 'invalid_ttl', ttl);
  }
});

test('POST /v1/tokens: unknown credential → 404; bad bodies → 400 invalid_request; no org token → 401', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  for (const credential_id of ['cred_AAAAAAAAAAAAAAAAAAAAAAAA', 'cred_x', 'tok_AAAAAAAAAAAAAAAAAAAAAAAA', org.id]) {
    const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id, ttl: '15m' } });
    t.is(r.status, 404, credential_id);
    t.is(r.body.error.code, 'not_found');
  }
  const deleted = await createCredential(app, org, 'openai', KEY);
  await api(app, 'DELETE', `/v1/credentials/${deleted}`, { token: org.token });
  const gone = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: deleted, ttl: '15m' } });
  t.is(gone.status, 404);

  const bodies: unknown[] = [{}, { ttl: '15m' }, { credential_id: '', ttl: '15m' }, { credential_id: 42, ttl: '15m' }, { credential_id: cred, ttl: '15m', tll: '1m' }, [], 'x', null];
  for (const body of bodies) {
    const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request', JSON.stringify(body));
  }
  const invalid = await api(app, 'POST', '/v1/tokens', { token: org.token, rawBody: '{"credential_id":', headers: { 'content-type': 'application/json' } });
  t.is(invalid.status, 400);
  t.is(invalid.body.error.code, 'invalid_request');
  const anon = await api(app, 'POST', '/v1/tokens', { body: { credential_id: cred, ttl: '15m' } });
  t.is(anon.status, 401);
  t.is(anon.body.error.code, 'unauthenticated');
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: org.token })).body.data, []);
});

test('GET /v1/tokens lists newest first with status active/expired and never the token value; pages like credentials', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const short = await mintToken(app, org, cred, '10s');
  clock.advance(1);
  const long = await mintToken(app, org, cred, '1h');
  clock.advance(1);
  const mid = await mintToken(app, org, cred, '1m');

  const list = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.is(list.status, 200);
  t.is(list.body.has_more, false);
  t.deepEqual(list.body.data.map((x: any) => x.id), [mid.id, long.id, short.id]);
  t.deepEqual(list.body.data.map((x: any) => x.status), ['active', 'active', 'active']);
  for (const x of list.body.data) {
    t.false('token' in x);
    t.is(x.credential_id, cred);
    t.regex(x.created_at, RFC3339_MS_UTC);
    t.regex(x.expires_at, RFC3339_MS_UTC);
  }
  for (const secret of [short.token, long.token, mid.token]) t.false(list.text.includes(secret));
  t.false(list.text.includes('ptok_'));

  // Valid while now < expires_at: at exactly expires_at the 10 s token is expired.
  clock.advance(10_000 - 2 - 1);
  t.is((await api(app, 'GET', `/v1/tokens/${short.id}`, { token: org.token })).body.status, 'active');
  clock.advance(1);
  const one = await api(app, 'GET', `/v1/tokens/${short.id}`, { token: org.token });
  t.is(one.status, 200);
  t.is(one.body.status, 'expired');
  t.false('token' in one.body);
  t.false(one.text.includes('ptok_'));
  clock.advance(60_000);
  const later = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.deepEqual(later.body.data.map((x: any) => [x.id, x.status]), [[mid.id, 'expired'], [long.id, 'active'], [short.id, 'expired']]);

  const p1 = await api(app, 'GET', '/v1/tokens?limit=2', { token: org.token });
  t.deepEqual(p1.body.data.map((x: any) => x.id), [mid.id, long.id]);
  t.is(p1.body.has_more, true);
  const p2 = await api(app, 'GET', `/v1/tokens?limit=2&starting_after=${long.id}`, { token: org.token });
  t.deepEqual(p2.body.data.map((x: any) => x.id), [short.id]);
  t.is(p2.body.has_more, false);
  for (const q of ['limit=0', 'limit=101', 'limit=x', 'starting_after=tok_AAAAAAAAAAAAAAAAAAAAAAAA', `starting_after=${cred}`, 'status=active']) {
    const r = await api(app, 'GET', `/v1/tokens?${q}`, { token: org.token });
    t.is(r.status, 400, q);
    t.is(r.body.error.code, 'invalid_request', q);
  }
});

test('DELETE /v1/tokens/:id → {id, revoked: true}; then GET and DELETE → 404 and the list forgets it', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const keep = await mintToken(app, org, cred);
  const tok = await mintToken(app, org, cred);
  const got = await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token });
  t.is(got.status, 200);
  t.is(got.body.id, tok.id);
  t.is(got.body.status, 'active');
  t.false(got.text.includes(tok.token));

  const del = await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token });
  t.is(del.status, 200);
  t.is(del.body.id, tok.id);
  t.is(del.body.revoked, true);
  t.false(del.text.includes('ptok_'));
  for (const method of ['GET', 'DELETE']) {
    const r = await api(app, method, `/v1/tokens/${tok.id}`, { token: org.token });
    t.is(r.status, 404, method);
    t.is(r.body.error.code, 'not_found');
  }
  const unknown = await api(app, 'DELETE', '/v1/tokens/tok_AAAAAAAAAAAAAAAAAAAAAAAA', { token: org.token });
  t.is(unknown.status, 404);
  t.deepEqual((await api(app, 'GET', '/v1/tokens', { token: org.token })).body.data.map((x: any) => x.id), [keep.id]);
  const anon = await api(app, 'DELETE', `/v1/tokens/${keep.id}`);
  t.is(anon.status, 401);
  t.is((await api(app, 'GET', `/v1/tokens/${keep.id}`, { token: org.token })).status, 200);
  for (const secret of [keep.token, tok.token]) t.false(app.logText().includes(secret));
});

test('deleting a credential deletes its tokens: GET → 404, gone from the list; other credentials keep theirs', async (t) => {
  const app = await startApp(t, { clock: monotonicClock() });
  const org = await createOrg(app);
  const doomed = await createCredential(app, org, 'openai', KEY);
  const kept = await createCredential(app, org, 'anthropic', KEY + 'x');
  const t1 = await mintToken(app, org, doomed);
  const t2 = await mintToken(app, org, doomed, '1h');
  const t3 = await mintToken(app, org, kept);
  t.is((await api(app, 'DELETE', `/v1/credentials/${doomed}`, { token: org.token })).status, 200);
  for (const tok of [t1, t2]) {
    t.is((await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).status, 404);
    t.is((await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token })).status, 404);
  }
  const list = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.deepEqual(list.body.data.map((x: any) => x.id), [t3.id]);
  t.is((await api(app, 'GET', `/v1/tokens/${t3.id}`, { token: org.token })).status, 200);
});

test('an amount sent as a JSON number is refused with the string to send instead; amounts stay decimal strings', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', KEY);
  const mint = (budget: unknown) => api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', budget_usd: budget } });
  const rule = '`budget_usd` must be a decimal string of US dollars above 0 with at most six decimal places, such as "12.50".';
  for (const [given, send] of [[1, '"budget_usd": "1.00"'], [0.5, '"budget_usd": "0.50"'], [12.345, '"budget_usd": "12.345"'], [25, '"budget_usd": "25.00"']] as const) {
    const r = await mint(given);
    t.is(r.status, 400, String(given));
    t.like(r.body.error, { code: 'invalid_scope', param: 'budget_usd', message: `${rule} It was a JSON number; send ${send}.` }, String(given));
  }
  // A number no string form can hold (seven places) gets the form alone; other wrong values only the rule.
  t.is((await mint(1.1234567)).body.error.message, `${rule} It was a JSON number; send a string, such as "budget_usd": "12.50".`);
  for (const bad of [0, -1, true, '1.1234567', 'abc']) t.is((await mint(bad)).body.error.message, rule, JSON.stringify(bad));
  t.is((await mint('1.00')).status, 201, 'the string form is taken');

  const limit = await api(app, 'PATCH', '/v1/orgs/self', { token: org.token, body: { spend_limit_usd: 250 } });
  t.is(limit.status, 400);
  t.regex(limit.body.error.message, /It was a JSON number; send "spend_limit_usd": "250\.00"\.$/);
});
