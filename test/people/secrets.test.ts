/**
 * After a whole sign-in (the console's code flow, the CLI's device flow, a refresh, a personal token, a sign-out)
 * no session cookie, CLI session, refresh value, ID token or client secret is anywhere it should not be: the
 * SQLite files, the log, or any answer after the one that created it.
 */
import test from 'ava';
import { assertNoLeaks } from '../adversarial/_harness.js';
import { api, createCredential } from '../support/app.js';
import { approveDevice, Browser, sessionCall, signIn } from '../support/sign-in.js';
import { ssoSetup } from './_setup.js';

test('no session, refresh value, ID token or client secret in the store, the logs or a later answer', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const idTokens: string[] = [];
  provider.provider.on('grant.success', (ctx: { body?: { id_token?: string } }) => {
    if (ctx.body?.id_token) idTokens.push(ctx.body.id_token);
  });
  const cred = await createCredential(app, org, 'openai', 'sk-people-secrets-0123456789');
  provider.nextPerson = { sub: 'ada', email: 'ada@acme.test', name: 'Ada', groups: ['admins'] };
  const answers: string[] = [];

  const browserSignIn = await signIn(gateway, org.id);
  const me = await sessionCall(browserSignIn.browser, gateway, 'GET', '/v1/session');
  answers.push(JSON.stringify(me.body));
  const personal = await sessionCall(browserSignIn.browser, gateway, 'POST', '/v1/members/self/tokens', { csrf: me.body.csrf, body: { credential_id: cred } });
  t.is(personal.status, 201);

  const device = await api(gateway, 'POST', '/v1/sso/device', { body: { org: org.id } });
  t.is((await approveDevice(new Browser(), device.body.verification_uri_complete)).status, 200);
  const cli = await api(gateway, 'POST', '/v1/sso/device/token', { body: { device_handle: device.body.device_handle } });
  t.is(cli.status, 201, cli.text);
  const renewed = await api(gateway, 'POST', '/v1/session/refresh', { body: { refresh_token: cli.body.refresh_token } });
  t.is(renewed.status, 201);
  const reused = await api(gateway, 'POST', '/v1/session/refresh', { body: { refresh_token: cli.body.refresh_token } });
  t.is(reused.status, 401, 'a refresh value works once');
  t.is((await api(gateway, 'GET', '/v1/session', { token: renewed.body.session })).status, 200);

  for (const path of ['/v1/orgs/self/sso', '/v1/members', '/v1/audit?limit=100', '/v1/tokens']) answers.push((await api(app, 'GET', path, { token: org.token })).text);
  answers.push((await sessionCall(browserSignIn.browser, gateway, 'GET', '/v1/members', { csrf: me.body.csrf })).body && JSON.stringify(me.body));
  t.is((await sessionCall(browserSignIn.browser, gateway, 'DELETE', '/v1/session', { csrf: me.body.csrf })).status, 200);

  t.true(idTokens.length >= 2, 'the provider issued the ID tokens searched for');
  const secrets = [browserSignIn.session, cli.body.session, cli.body.refresh_token, renewed.body.session, renewed.body.refresh_token, ...idTokens];
  for (const s of secrets) t.truthy(s);
  assertNoLeaks(t, { canaries: [provider.clientSecret], tokens: secrets }, { dataDir: app.dataDir, logs: app.logText(), extra: answers });
});
