import test from 'ava';
import { ADMIN_TOKEN, api, createOrg, startApp } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';

test('a scripted session leaves an audit trail of every admin action, newest first, with no secret', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cred = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'anthropic', api_key: 'sk-audit-secret-0123456789' } });
  const tok = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred.body.id, ttl: '1h' } });
  await api(app, 'POST', `/v1/credentials/${cred.body.id}/rotate`, { token: org.token, body: { api_key: 'sk-audit-rotated-0123456789' } });
  await api(app, 'DELETE', `/v1/tokens/${tok.body.id}`, { token: org.token });
  await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'nope', api_key: 'sk-audit-secret-0123456789' } });
  await api(app, 'DELETE', `/v1/credentials/${cred.body.id}`, { token: org.token });
  const res = await api(app, 'GET', '/v1/audit', { token: org.token });
  t.is(res.status, 200);
  const actions = res.body.data.map((e: any) => `${e.action}:${e.outcome}`);
  t.deepEqual(actions, [
    'credential.delete:success',
    'credential.create:failure',
    'token.revoke:success',
    'credential.rotate:success',
    'token.create:success',
    'credential.create:success',
    'org.create:success',
  ]);
  const create = res.body.data.find((e: any) => e.action === 'token.create');
  t.is(create.target, tok.body.id);
  t.is(create.org, org.id);
  t.regex(create.actor, /^otk_/);
  t.regex(create.request_id, /^req_/);
  t.regex(create.id, /^evt_/);
  t.is(create.ip, '127.0.0.1');
  t.regex(create.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.is(res.body.data.find((e: any) => e.action === 'org.create').actor, 'admin');
  for (const secret of ['sk-audit-secret-0123456789', 'sk-audit-rotated-0123456789', tok.body.token, org.token]) t.false(res.text.includes(secret));
  // Paging.
  const page1 = await api(app, 'GET', '/v1/audit?limit=3', { token: org.token });
  t.is(page1.body.data.length, 3);
  t.true(page1.body.has_more);
  const page2 = await api(app, 'GET', `/v1/audit?limit=10&starting_after=${page1.body.data[2].id}`, { token: org.token });
  t.deepEqual(page2.body.data.map((e: any) => e.id), res.body.data.slice(3).map((e: any) => e.id));
  // Another organisation sees none of it.
  const other = await createOrg(app, 'other');
  const theirs = await api(app, 'GET', '/v1/audit', { token: other.token });
  t.deepEqual(theirs.body.data.map((e: any) => e.action), ['org.create']);
  void ADMIN_TOKEN;
});

test('quota refusals are audited with the token as actor', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '1' } });
  const send = () => fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is((await send()).status, 200);
  t.is((await send()).status, 429);
  const res = await api(f.app, 'GET', '/v1/audit', { token: f.org.token });
  const refused = res.body.data.find((e: any) => e.action === 'quota.refused');
  t.truthy(refused);
  t.is(refused.actor, f.tokens.openai.id);
  t.is(refused.target, f.credentials.openai);
  t.is(refused.outcome, 'denied');
});

test('failed authentications are audited without an organisation and never with the presented value', async (t) => {
  const app = await startApp(t);
  await api(app, 'GET', '/v1/credentials', { token: 'otok_guessing_a_token' });
  await fetch(`${app.url}/v1/proxy/v1/models`, { headers: { 'x-proxy-token': 'ptok_guess' } });
  const store = app.server.container.resolve<any>((await import('../../src/controls/audit-log.js')).AuditLog);
  const page = await store.list('', { limit: 10 });
  const failed = page.data.filter((e: any) => e.action === 'auth.failed');
  // Refusals are aggregated per (org, action, address, minute): one record, or two across a minute's edge.
  t.true(failed.length >= 1 && failed.length <= 2);
  t.is(failed.reduce((n: number, e: any) => n + e.count, 0), 2);
  t.true(failed.every((e: any) => e.actor === 'anonymous' && e.org === '' && e.ip === '127.0.0.1'));
  t.false(JSON.stringify(page).includes('otok_guessing_a_token'));
  t.false(JSON.stringify(page).includes('ptok_guess'));
});
