/**
 * Single sign-on refusals that need more than a browser: an ID token issued to another client (a tampering
 * proxy in front of the provider's token endpoint answers Keyward's code exchange with another client's genuine,
 * correctly signed tokens, nonce included) is refused at the callback with no session; and what the sign-in pages
 * may learn of an organisation (GET /v1/sso/provider, by id or name) and sign-in by name.
 */
import test from 'ava';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as oidc from 'openid-client';
import { api, createOrg } from '../support/app.js';
import { Browser, sessionCall, signIn } from '../support/sign-in.js';
import { ssoSetup } from './_setup.js';

const OTHER = { id: 'another-app', secret: 'another-app-secret-5b1c9e0d7f2a' };

test('an ID token issued to another client (wrong audience) is refused at the callback: 400 sign_in_failed, no session, no member', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t, { otherClients: [OTHER] });
  provider.nextPerson = { sub: 'audrey', email: 'audrey@acme.test', name: 'Audrey', groups: ['admins'] };
  const callbackPrefix = `${gateway}/v1/sso/callback`;

  // Keyward's sign-in, up to the provider's redirect back (its nonce read off the authorization request).
  const browser = new Browser();
  const started = await browser.request(`${gateway}/v1/sso/start?org=${org.id}`);
  const authorize = new URL(started.headers.get('location')!);
  const nonce = authorize.searchParams.get('nonce')!;
  const { url: callback } = await browser.follow(authorize.href, callbackPrefix);
  t.true(callback.startsWith(callbackPrefix));

  // The other client's own sign-in with the same nonce, and its genuine tokens.
  const verifier = oidc.randomPKCECodeVerifier();
  const other = new URL(`${provider.issuer}/auth`);
  for (const [k, v] of Object.entries({
    client_id: OTHER.id, response_type: 'code', scope: 'openid email profile', redirect_uri: callbackPrefix, nonce, state: 'other-state',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  })) other.searchParams.set(k, v);
  const { url: otherBack } = await new Browser().follow(other.href, callbackPrefix);
  const otherCode = new URL(otherBack).searchParams.get('code')!;
  const exchanged = await fetch(`${provider.issuer}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${OTHER.id}:${OTHER.secret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: otherCode, redirect_uri: callbackPrefix, code_verifier: verifier }).toString(),
  });
  t.is(exchanged.status, 200);
  const otherTokens = await exchanged.text();
  const idToken = JSON.parse(otherTokens).id_token as string;
  const claims = JSON.parse(Buffer.from(idToken.split('.')[1]!, 'base64url').toString());
  t.is(claims.aud, OTHER.id, 'a genuine token, for the other client');
  t.is(claims.nonce, nonce);

  // The proxy: Keyward's code exchange answered with the other client's tokens.
  let swapped = 0;
  provider.intercept = (req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/token') return false;
    swapped++;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(otherTokens);
    return true;
  };
  const refused = await browser.request(callback);
  t.is(swapped, 1);
  t.is(refused.status, 400);
  const body = (await refused.json()) as { error: { code: string; message: string } };
  t.is(body.error.code, 'sign_in_failed');
  t.regex(body.error.message, /aud/);
  t.false(body.error.message.includes(idToken), 'the token is never quoted');
  t.is(browser.cookies(gateway).get('keyward_session'), undefined);
  t.is((await sessionCall(browser, gateway, 'GET', '/v1/session')).status, 401);
  const members = await api(app, 'GET', '/v1/members', { token: org.token });
  t.false(members.body.data.some((m: { email: string }) => m.email === 'audrey@acme.test'));
});

test('GET /v1/sso/provider says whether an organisation (id or name) signs in by single sign-on, and nothing else; sign-in by name works', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const byId = await api(gateway, 'GET', `/v1/sso/provider?org=${org.id}`);
  t.is(byId.status, 200);
  t.deepEqual(byId.body, { object: 'sso_provider', provider: new URL(provider.issuer).host, device_grant: true });
  const name = (await api(app, 'GET', '/v1/orgs/self', { token: org.token })).body.name as string;
  const byName = await api(gateway, 'GET', `/v1/sso/provider?org=${encodeURIComponent(name.toUpperCase())}`);
  t.is(byName.status, 200, 'names match ignoring case');
  // An organisation without single sign-on and one that does not exist answer alike.
  const plain = await createOrg(app, 'No SSO Here');
  const without = await api(gateway, 'GET', `/v1/sso/provider?org=${plain.id}`);
  const unknown = await api(gateway, 'GET', '/v1/sso/provider?org=org_000000000000000000000000');
  const unknownName = await api(gateway, 'GET', '/v1/sso/provider?org=Nobody%20Inc');
  t.deepEqual([without.status, unknown.status, unknownName.status], [404, 404, 404]);
  t.is(without.text, unknown.text);
  t.is((await api(gateway, 'GET', '/v1/sso/provider?org=No%20SSO%20Here')).status, 404);
  t.is((await api(gateway, 'GET', '/v1/sso/provider?org=%00bad')).status, 404);

  provider.nextPerson = { sub: 'nia', email: 'nia@acme.test', name: 'Nia', groups: ['viewers'] };
  const signed = await signIn(gateway, encodeURIComponent(name));
  t.is(signed.response.status, 302);
  const me = await sessionCall(signed.browser, gateway, 'GET', '/v1/session');
  t.is(me.body.org.id, org.id);
  t.is(me.body.member.email, 'nia@acme.test');
});
