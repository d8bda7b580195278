import test from 'ava';
import { api, createOrg, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { proxyFixture } from '../support/proxy-fixture.js';

test('repeated failed authentications from one IP start a cool-down on the admin API and the proxy; valid tokens still pass', async (t) => {
  const clock = new ManualClock(Date.now());
  const f = await proxyFixture(t, { clock, env: { KEYWARD_AUTH_FAILURES: '5', KEYWARD_AUTH_COOLDOWN_S: '2' } });
  for (let i = 0; i < 4; i++) {
    const r = await api(f.app, 'GET', '/v1/credentials', { token: `otok_wrong_${i}` });
    t.is(r.status, 401);
  }
  // The fifth failure (on the proxy) starts the cool-down: from then on a bad token gets 429 instead of 401...
  t.is((await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': 'ptok_wrong' } })).status, 401);
  const refused = await api(f.app, 'GET', '/v1/credentials', { token: 'otok_wrong_again' });
  t.is(refused.status, 429);
  t.is(refused.body.error.code, 'too_many_failures');
  t.is(refused.body.error.type, 'rate_limit');
  const retryAfter = Number(refused.headers.get('retry-after'));
  t.true(retryAfter >= 1 && retryAfter <= 2);
  const proxied = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': 'ptok_wrong' } });
  t.is(proxied.status, 429);
  t.is(((await proxied.json()) as any).error.code, 'too_many_failures');
  t.truthy(proxied.headers.get('retry-after'));
  t.is(f.fake.received.length, 0);
  // ...but a valid token is never refused by the cool-down (contract, Hardening).
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).status, 200);
  t.is((await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } })).status, 200);
  // After the cool-down (on the injected clock), a bad token is a plain 401 again.
  clock.advance(1999);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: 'otok_wrong_still' })).status, 429, 'a millisecond before its end');
  clock.advance(1);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: 'otok_wrong_later' })).status, 401);
  t.true(f.app.logs.some((l) => l.message === 'too many failed authentications; cooling down'));
});

test('the reported attack: 20 bad proxy tokens from one address do not lock out valid tokens from it', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_AUTH_FAILURES: '20', KEYWARD_AUTH_COOLDOWN_S: '60' } });
  for (let i = 0; i < 20; i++) {
    t.is((await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': `ptok_attacker_${i}` } })).status, 401);
  }
  const ptok = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': f.tokens.openai.token } });
  t.is(ptok.status, 200);
  t.is(f.fake.received.length, 1);
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: f.org.token })).status, 200);
  const further = await fetch(f.proxyUrl('v1/models'), { headers: { 'x-proxy-token': 'ptok_attacker_20' } });
  t.is(further.status, 429);
  t.is(((await further.json()) as any).error.code, 'too_many_failures');
  t.is((await api(f.app, 'GET', '/v1/credentials', { token: 'otok_attacker' })).status, 429);
});

test('the admin API is rate limited per organisation', async (t) => {
  // The bucket refills on the injected timers: a slow machine's seconds do not top it up mid-test.
  const app = await startApp(t, { timers: new ManualClock(), env: { KEYWARD_ADMIN_RATE: '10' } });
  const a = await createOrg(app, 'a');
  const b = await createOrg(app, 'b');
  const statuses: number[] = [];
  for (let i = 0; i < 14; i++) statuses.push((await api(app, 'GET', '/v1/credentials', { token: a.token })).status);
  t.is(statuses.filter((s) => s === 200).length, 10);
  t.is(statuses.filter((s) => s === 429).length, 4);
  const limited = await api(app, 'GET', '/v1/usage', { token: a.token });
  t.is(limited.body.error.code, 'rate_limited');
  t.truthy(limited.headers.get('retry-after'));
  // Organisation B has its own budget.
  t.is((await api(app, 'GET', '/v1/credentials', { token: b.token })).status, 200);
});
