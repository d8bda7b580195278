/**
 * Single sign-on for the console against a real OpenID provider (oidc-provider): the configuration (owner
 * only, secret never returned), the sign-in (code + PKCE S256, state, nonce, the ID token verified), the
 * session cookie's attributes, the anti-CSRF header, roles from groups, and the refusals: a wrong `state`,
 * a replayed code, a disallowed e-mail domain, an expired session, a forged cookie.
 */
import test from 'ava';
import { api } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { Browser, sessionCall, signIn } from '../support/sign-in.js';
import { ssoSetup } from './_setup.js';

test('PUT /v1/orgs/self/sso stores the provider, answers the redirect_uri and never the secret; owner only', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const got = await api(app, 'GET', '/v1/orgs/self/sso', { token: org.token });
  t.is(got.status, 200);
  t.is(got.body.redirect_uri, `${gateway}/v1/sso/callback`);
  t.is(got.body.client_secret_hint, `…${provider.clientSecret.slice(-4)}`);
  t.false(got.text.includes(provider.clientSecret));
  const key = await api(app, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'ops', role: 'admin' } });
  const refused = await api(app, 'GET', '/v1/orgs/self/sso', { token: key.body.token });
  t.is(refused.status, 403);
  const unreachable = await api(app, 'PUT', '/v1/orgs/self/sso', { token: org.token, body: { issuer: 'http://127.0.0.1:1', client_id: 'x', client_secret: 'y' } });
  t.is(unreachable.status, 502);
  t.is(unreachable.body.error.code, 'sso_unavailable');
  const plain = await api(app, 'PUT', '/v1/orgs/self/sso', { token: org.token, body: { issuer: 'http://example.com', client_id: 'x', client_secret: 'y' } });
  t.is(plain.status, 400);
});

test('a member signs in: HttpOnly SameSite=Strict cookie, GET /v1/session gives the CSRF value, the admin API needs it', async (t) => {
  const { gateway, provider, org } = await ssoSetup(t);
  provider.nextPerson = { sub: 'ada', email: 'ada@acme.test', name: 'Ada', groups: ['engineers', 'admins'] };
  const { browser, session, response } = await signIn(gateway, org.id);
  t.is(response.status, 302);
  t.is(response.headers.get('location'), '/console/');
  const set = response.headers.getSetCookie().find((c) => c.startsWith('keyward_session='))!;
  t.regex(set, /; HttpOnly/);
  t.regex(set, /; SameSite=Strict/);
  t.regex(set, /; Path=\/v1/);
  t.notRegex(set, /Secure/, 'plain http on loopback only');
  t.true(Number(/Max-Age=(\d+)/.exec(set)![1]) <= 12 * 3600);
  t.regex(session, /^kses_/);

  const me = await sessionCall(browser, gateway, 'GET', '/v1/session');
  t.is(me.status, 200);
  t.is(me.body.member.email, 'ada@acme.test');
  t.is(me.body.member.role, 'admin');
  t.is(me.body.org.id, org.id);
  t.regex(me.body.csrf, /^[0-9a-f]{64}$/);

  const without = await sessionCall(browser, gateway, 'GET', '/v1/members');
  t.is(without.status, 403);
  t.is(without.body.error.code, 'csrf_required');
  const wrong = await sessionCall(browser, gateway, 'GET', '/v1/members', { csrf: 'f'.repeat(64) });
  t.is(wrong.status, 403);
  const members = await sessionCall(browser, gateway, 'GET', '/v1/members', { csrf: me.body.csrf });
  t.is(members.status, 200);
  t.deepEqual(members.body.data.map((m: { email: string }) => m.email), ['ada@acme.test']);
  const self = await sessionCall(browser, gateway, 'GET', '/v1/orgs/self', { csrf: me.body.csrf });
  t.is(self.body.caller.role, 'admin');
  t.is(self.body.caller.id, me.body.member.id);

  // A second sign-in of the same person is the same member.
  const again = await signIn(gateway, org.id);
  const me2 = await sessionCall(again.browser, gateway, 'GET', '/v1/session');
  t.is(me2.body.member.id, me.body.member.id);

  const out = await sessionCall(browser, gateway, 'DELETE', '/v1/session', { csrf: me.body.csrf });
  t.is(out.status, 200);
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/session')).status, 401);
});

test('a member whose groups map to nothing gets `member`: GET /v1/orgs/self yes, the organisation\'s records no', async (t) => {
  const { gateway, provider, org } = await ssoSetup(t);
  provider.nextPerson = { sub: 'bob', email: 'bob@ACME.test', name: 'Bob', groups: ['engineers'] };
  const { browser } = await signIn(gateway, org.id);
  const me = await sessionCall(browser, gateway, 'GET', '/v1/session');
  t.is(me.body.member.role, 'member');
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/orgs/self', { csrf: me.body.csrf })).status, 200);
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/credentials', { csrf: me.body.csrf })).status, 403);
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/members', { csrf: me.body.csrf })).status, 403);
});

test('refused: a wrong state, a replayed code, a callback without its cookie, a disallowed e-mail domain', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const browser = new Browser();
  const { url: callback } = await browser.follow(`${gateway}/v1/sso/start?org=${org.id}`, `${gateway}/v1/sso/callback`);
  const url = new URL(callback);
  const forged = new URL(callback);
  forged.searchParams.set('state', 'not-the-state');
  const wrongState = await sessionCall(browser, gateway, 'GET', forged.pathname + forged.search);
  t.is(wrongState.status, 400);
  t.is(wrongState.body.error.code, 'sign_in_failed');
  t.regex(wrongState.body.error.message, /state/);

  const flow = browser.cookies(gateway).get('keyward_sso')!;
  const first = await browser.request(callback);
  t.is(first.status, 302);
  // The same code and state again, with the same sign-in cookie (an attacker who captured both): the provider refuses the code.
  const replay = new Browser();
  replay.cookies(gateway).set('keyward_sso', flow);
  const replayed = await sessionCall(replay, gateway, 'GET', url.pathname + url.search);
  t.is(replayed.status, 400);
  t.is(replayed.body.error.code, 'sign_in_failed');
  t.is(replay.cookies(gateway).get('keyward_session'), undefined);

  const noCookie = await sessionCall(new Browser(), gateway, 'GET', url.pathname + url.search);
  t.is(noCookie.status, 400);

  provider.nextPerson = { sub: 'eve', email: 'eve@evil.test', name: 'Eve', groups: ['admins'] };
  const outsider = await signIn(gateway, org.id);
  t.is(outsider.response.status, 400);
  t.is(((await outsider.response.json()) as { error: { code: string } }).error.code, 'sign_in_failed');
  t.is(outsider.session, '');
  provider.nextPerson = { sub: 'mallory', email: 'mallory@acme.test', name: 'Mallory', groups: ['admins'], emailVerified: false };
  t.is((await signIn(gateway, org.id)).response.status, 400, 'an unverified address never counts');
  const members = await api(app, 'GET', '/v1/members', { token: org.token });
  t.deepEqual(members.body.data.map((m: { email: string }) => m.email), ['alice@acme.test']);
});

test('a session ends after 12 hours on the gateway\'s clock; a forged or bearer-presented cookie value is refused', async (t) => {
  const clock = new ManualClock(Date.now());
  const { gateway, org } = await ssoSetup(t, { clock });
  const { browser, session } = await signIn(gateway, org.id);
  const me = await sessionCall(browser, gateway, 'GET', '/v1/session');
  t.is(me.status, 200);
  clock.advance(12 * 3_600_000 - 1000);
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/orgs/self', { csrf: me.body.csrf })).status, 200);
  clock.advance(1000);
  const expired = await sessionCall(browser, gateway, 'GET', '/v1/orgs/self', { csrf: me.body.csrf });
  t.is(expired.status, 401);
  // The browser's cookie value is not a CLI session.
  const asBearer = await api(gateway, 'GET', '/v1/orgs/self', { token: session });
  t.is(asBearer.status, 401);
  const forged = new Browser();
  forged.cookies(gateway).set('keyward_session', session.slice(0, -1) + (session.endsWith('a') ? 'b' : 'a'));
  t.is((await sessionCall(forged, gateway, 'GET', '/v1/session')).status, 401);
});
