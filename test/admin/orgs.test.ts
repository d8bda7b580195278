import test from 'ava';
import { isWellFormedToken } from '../../src/ids.js';
import { ADMIN_TOKEN, api, createCredential, createOrg, startApp } from '../support/app.js';
import { ManualClock, RFC3339_MS_UTC } from '../support/clocks.js';

test('POST /v1/orgs with the admin token → 201 {id, name, token, created_at}; the token works at once', async (t) => {
  const app = await startApp(t);
  const r = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'Acme & Co. (EU)' } });
  t.is(r.status, 201);
  t.regex(r.body.id, /^org_[0-9A-Za-z]{24}$/);
  t.is(r.body.name, 'Acme & Co. (EU)');
  t.regex(r.body.token, /^otok_[0-9A-Za-z]{38}$/);
  t.true(isWellFormedToken('otok', r.body.token));
  t.regex(r.body.created_at, RFC3339_MS_UTC);
  t.true(Math.abs(Date.parse(r.body.created_at) - Date.now()) < 5000);
  t.truthy(r.headers.get('x-request-id'));
  const list = await api(app, 'GET', '/v1/credentials', { token: r.body.token });
  t.is(list.status, 200);
  // Unicode letters are names too; two orgs may share a name and still differ.
  const u = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'Zürich Labs' } });
  t.is(u.status, 201);
  const again = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'Acme & Co. (EU)' } });
  t.is(again.status, 201);
  t.not(again.body.id, r.body.id);
  t.not(again.body.token, r.body.token);
  t.false(app.logText().includes(r.body.token));
});

test('POST /v1/orgs: a wrong or absent admin token → 401 unauthenticated', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cases: Array<Record<string, string>> = [
    {},
    { authorization: '' },
    { authorization: 'Bearer ' },
    { authorization: 'Bearer wrong-admin-token-0123456789' },
    { authorization: `Bearer ${ADMIN_TOKEN}x` },
    { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` },
    { authorization: `Basic ${ADMIN_TOKEN}` },
    { authorization: ADMIN_TOKEN },
    { authorization: `Bearer ${org.token}` },
    { 'x-admin-token': ADMIN_TOKEN },
  ];
  for (const headers of cases) {
    const r = await api(app, 'POST', '/v1/orgs', { headers, body: { name: 'evil' } });
    t.is(r.status, 401, JSON.stringify(headers));
    t.is(r.body.error.code, 'unauthenticated');
    t.is(r.body.error.type, 'authentication');
    t.false(r.text.includes(ADMIN_TOKEN));
  }
  // The scheme is case-insensitive, as RFC 7235 says.
  t.is((await api(app, 'POST', '/v1/orgs', { headers: { authorization: `bearer ${ADMIN_TOKEN}` }, body: { name: 'ok' } })).status, 201);
  t.false(app.logText().includes(ADMIN_TOKEN));
});

test('POST /v1/orgs without KEYWARD_ADMIN_TOKEN configured refuses everyone', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_ADMIN_TOKEN: '' } });
  for (const headers of [{} as Record<string, string>, { authorization: `Bearer ${ADMIN_TOKEN}` }, { authorization: 'Bearer ' }, { authorization: 'Bearer undefined' }]) {
    const r = await api(app, 'POST', '/v1/orgs', { headers, body: { name: 'acme' } });
    t.is(r.status, 401, JSON.stringify(headers));
    t.is(r.body.error.code, 'unauthenticated');
  }
});

test('POST /v1/orgs: a bad name or body → 400 invalid_request', async (t) => {
  const app = await startApp(t);
  const bodies: unknown[] = [
    {}, { name: '' }, { name: ' acme' }, { name: 'acme ' }, { name: '-acme' }, { name: '.acme' }, { name: 'a'.repeat(101) },
    { name: 42 }, { name: null }, { name: ['acme'] }, { name: 'ac\u0000me' }, { name: 'ac\nme' }, { name: 'acme<script>' },
    { name: 'acme', plan: 'pro' }, [], 'acme', null,
  ];
  for (const body of bodies) {
    const r = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request', JSON.stringify(body));
  }
  const raw = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, rawBody: '{"name":', headers: { 'content-type': 'application/json' } });
  t.is(raw.status, 400);
  t.is(raw.body.error.code, 'invalid_request');
  t.is((await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name: 'a'.repeat(100) } })).status, 201);
});

test('org token rotation with grace_s 0: the old token is refused at once, the new one works', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-test-orgrotate-0001');
  const r = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } });
  t.is(r.status, 200);
  t.is(r.body.id, org.id);
  t.true(isWellFormedToken('otok', r.body.token));
  t.not(r.body.token, org.token);
  const old = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(old.status, 401);
  t.is(old.body.error.code, 'unauthenticated');
  const fresh = await api(app, 'GET', '/v1/credentials', { token: r.body.token });
  t.is(fresh.status, 200);
  t.deepEqual(fresh.body.data.map((c: any) => c.id), [cred]);
  // The old token can no longer rotate either.
  t.is((await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } })).status, 401);
  // An empty body means grace_s 0.
  const again = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: r.body.token });
  t.is(again.status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: r.body.token })).status, 401);
  t.is((await api(app, 'GET', '/v1/credentials', { token: again.body.token })).status, 200);
  for (const secret of [org.token, r.body.token, again.body.token]) t.false(app.logText().includes(secret));
});

test('org token rotation with grace_s 2: the old token works for 2 more seconds, then stops', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const other = await createOrg(app, 'other');
  const r = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 2 } });
  t.is(r.status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 200);
  clock.advance(1999);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 200);
  clock.advance(1);
  const old = await api(app, 'GET', '/v1/credentials', { token: org.token });
  t.is(old.status, 401);
  t.is(old.body.error.code, 'unauthenticated');
  t.is((await api(app, 'GET', '/v1/credentials', { token: r.body.token })).status, 200);
  // Another organisation's token was never touched.
  clock.advance(86_400_000);
  t.is((await api(app, 'GET', '/v1/credentials', { token: other.token })).status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: r.body.token })).status, 200);
});

test('org token rotation: grace_s 1 ends the old token a second later, to the millisecond', async (t) => {
  // Was a real-time test (a 1.1 s sleep); the grace is measured on the injected clock, so the clock is moved instead.
  const clock = new ManualClock(Date.now());
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const r = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 1 } });
  t.is(r.status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 200);
  clock.advance(999);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 200);
  clock.advance(1);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 401);
  t.is((await api(app, 'GET', '/v1/credentials', { token: r.body.token })).status, 200);
});

test('org token rotation: a second rotation with grace_s 0 ends an earlier grace at once; bad grace_s → 400', async (t) => {
  const clock = new ManualClock();
  const app = await startApp(t, { clock });
  const org = await createOrg(app);
  const first = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 3600 } });
  t.is(first.status, 200);
  const second = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: first.body.token, body: { grace_s: 0 } });
  t.is(second.status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).status, 401);
  t.is((await api(app, 'GET', '/v1/credentials', { token: first.body.token })).status, 401);
  t.is((await api(app, 'GET', '/v1/credentials', { token: second.body.token })).status, 200);
  for (const body of [{ grace_s: -1 }, { grace_s: 1.5 }, { grace_s: '2' }, { grace_s: null }, { grace_s: 2_592_001 }, { grace: 2 }, []]) {
    const r = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: second.body.token, body });
    t.is(r.status, 400, JSON.stringify(body));
    t.is(r.body.error.code, 'invalid_request');
  }
  t.is((await api(app, 'GET', '/v1/credentials', { token: second.body.token })).status, 200, 'refused rotations changed nothing');
  t.is((await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: ADMIN_TOKEN, body: { grace_s: 0 } })).status, 401);
});
