/**
 * `keyward login` against a provider without the device authorization grant: the loopback redirect with PKCE
 * (RFC 8252). The person's browser is played by plain HTTP requests that follow the provider's pages; the CLI's
 * 127.0.0.1 listener receives a one-time code that only its verifier redeems, once.
 */
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { run } from '../../src/cli/main.js';
import * as oidc from 'openid-client';
import { api } from '../support/app.js';
import { Browser } from '../support/sign-in.js';
import { eventually } from '../support/wait.js';
import { ssoSetup } from './_setup.js';

function io() {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write(c, _e, cb) { into.push(c.toString()); cb(); } });
  return { io: { stdin: new PassThrough(), stdout: sink(out), stderr: sink(err) }, stdout: () => out.join(''), stderr: () => err.join('') };
}

test.serial('keyward login falls back to a loopback redirect with PKCE when the provider has no device grant', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t, { deviceFlow: false });
  const described = await api(app, 'GET', `/v1/sso/provider?org=${org.id}`);
  t.is(described.status, 200);
  t.false(described.body.device_grant);
  t.is((await api(app, 'POST', '/v1/sso/device', { body: { org: org.id } })).status, 400, 'no device grant at this provider');

  const dir = mkdtempSync(path.join(tmpdir(), 'keyward-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  process.env.KEYWARD_CONFIG_DIR = path.join(dir, 'keyward');
  provider.nextPerson = { sub: 'lin', email: 'lin@acme.test', name: 'Lin', groups: ['viewers'] };

  const login = io();
  const done = run(['login', '--gateway', gateway, '--org', org.id], login.io);
  let printed: RegExpExecArray | null = null;
  await eventually(() => (printed = /open (\S+)/.exec(login.stderr())) !== null, 'the login command prints the link to open');
  const link = new URL(printed![1]!);
  t.is(link.origin + link.pathname, `${gateway}/v1/sso/start`);
  const loopback = link.searchParams.get('cli_redirect')!;
  t.regex(loopback, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
  t.regex(link.searchParams.get('cli_challenge')!, /^[A-Za-z0-9_-]{43}$/);

  // The person's browser: the gateway, the provider's pages, back to the gateway's callback, then to the CLI's listener.
  const browser = new Browser();
  const { url: back } = await browser.follow(link.href, loopback);
  t.true(back.startsWith(`${loopback}?code=`), back);
  t.is(browser.cookies(gateway).get('keyward_session'), undefined, 'no console session for a CLI sign-in');
  const landed = await browser.request(back);
  t.is(landed.status, 200);
  t.regex(await landed.text(), /Signed in/);
  t.is(await done, 0, login.stderr());
  t.regex(login.stderr(), /Signed in as lin@acme\.test/);

  const file = path.join(dir, 'keyward', 'session.json');
  t.is(statSync(file).mode & 0o777, 0o600);
  const stored = JSON.parse(readFileSync(file, 'utf8'));
  t.regex(stored.session, /^kses_/);
  const me = await api(gateway, 'GET', '/v1/session', { token: stored.session });
  t.is(me.status, 200);
  t.is(me.body.member.email, 'lin@acme.test');
  t.is(me.body.member.role, 'viewer');

  // The code the browser carried, with another verifier, or altered: refused (only the CLI's verifier redeems it).
  const code = new URL(back).searchParams.get('code')!;
  const wrongVerifier = await api(gateway, 'POST', '/v1/sso/cli/token', { body: { code, code_verifier: 'x'.repeat(43) } });
  t.is(wrongVerifier.status, 400);
  t.is(wrongVerifier.body.error.code, 'sign_in_failed');
  t.regex(wrongVerifier.body.error.message, /verifier/);
  const forged = await api(gateway, 'POST', '/v1/sso/cli/token', { body: { code: code.slice(0, -2) + 'AA', code_verifier: 'x'.repeat(43) } });
  t.is(forged.status, 400);
});

test('a loopback redirect must be 127.0.0.1 or [::1] over http, with its challenge', async (t) => {
  const { gateway, org } = await ssoSetup(t, { deviceFlow: false });
  const browser = new Browser();
  for (const redirect of ['https://evil.test/callback', 'http://localhost:9/callback', 'http://127.0.0.1.evil.test:9/cb']) {
    const res = await browser.request(`${gateway}/v1/sso/start?${new URLSearchParams({ org: org.id, cli_redirect: redirect, cli_challenge: 'a'.repeat(43) })}`);
    t.is(res.status, 400, redirect);
  }
  const alone = await browser.request(`${gateway}/v1/sso/start?${new URLSearchParams({ org: org.id, cli_redirect: 'http://127.0.0.1:9/callback' })}`);
  t.is(alone.status, 400);
});

test('the loopback code is redeemed once, and only with its verifier', async (t) => {
  const { gateway, org } = await ssoSetup(t, { deviceFlow: false });
  const verifier = oidc.randomPKCECodeVerifier();
  const loopback = 'http://127.0.0.1:9/callback';
  const query = new URLSearchParams({ org: org.id, cli_redirect: loopback, cli_challenge: await oidc.calculatePKCECodeChallenge(verifier) });
  const { url: back } = await new Browser().follow(`${gateway}/v1/sso/start?${query}`, loopback);
  const code = new URL(back).searchParams.get('code')!;
  const first = await api(gateway, 'POST', '/v1/sso/cli/token', { body: { code, code_verifier: verifier } });
  t.is(first.status, 201);
  t.regex(first.body.session, /^kses_/);
  t.is((await api(gateway, 'GET', '/v1/session', { token: first.body.session })).body.member.email, 'alice@acme.test');
  const again = await api(gateway, 'POST', '/v1/sso/cli/token', { body: { code, code_verifier: verifier } });
  t.is(again.status, 400);
  t.is(again.body.error.code, 'sign_in_failed');
  t.regex(again.body.error.message, /already used/);
  t.false(again.text.includes('kses_') || again.text.includes('kref_'));
});
