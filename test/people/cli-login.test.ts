/**
 * `keyward login` (the device authorization grant through the gateway and the organisation's confidential
 * client, against oidc-provider) and `keyward token`: the session file is 0600 in a 0700 folder, the
 * personal token is printed alone, bound to the member, cached until 5 minutes before it ends, and a
 * removed member's cached session can mint no more.
 */
import { eventually } from '../support/wait.js';
import test from 'ava';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { run } from '../../src/cli/main.js';
import { api, createCredential } from '../support/app.js';
import { approveDevice, Browser } from '../support/sign-in.js';
import { ssoSetup } from './_setup.js';

function io() {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write(c, _e, cb) { into.push(c.toString()); cb(); } });
  return { io: { stdin: new PassThrough(), stdout: sink(out), stderr: sink(err) }, stdout: () => out.join(''), stderr: () => err.join('') };
}

test.serial('keyward login signs in by device code; keyward token prints a cached personal token bound to the member', async (t) => {
  const { app, gateway, provider, org } = await ssoSetup(t);
  const dir = mkdtempSync(path.join(tmpdir(), 'keyward-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  process.env.KEYWARD_CONFIG_DIR = path.join(dir, 'keyward');
  process.env.KEYWARD_LOGIN_POLL_MS = '100';
  const cred = await createCredential(app, org, 'openai', 'sk-people-0123456789abcdef');
  provider.nextPerson = { sub: 'grace', email: 'grace@acme.test', name: 'Grace', groups: ['engineers'] };

  const login = io();
  const done = run(['login', '--gateway', gateway, '--org', org.id], login.io);
  // The person opens the printed link and confirms the code.
  // Awaited on what the command prints (it asks the gateway first: on a busy machine that takes a while).
  let printed: RegExpExecArray | null = null;
  await eventually(() => (printed = /open (\S+)/.exec(login.stderr())) !== null, 'the login command prints the link to open');
  t.truthy(printed, login.stderr());
  const approved = await approveDevice(new Browser(), printed![1]!);
  t.is(approved.status, 200);
  t.regex(approved.html, /Sign-in Success/i);
  t.is(await done, 0, login.stderr());
  t.regex(login.stderr(), /Signed in as grace@acme\.test/);

  const file = path.join(dir, 'keyward', 'session.json');
  t.is(statSync(file).mode & 0o777, 0o600);
  t.is(statSync(path.dirname(file)).mode & 0o777, 0o700);
  const stored = JSON.parse(readFileSync(file, 'utf8'));
  t.regex(stored.session, /^kses_/);
  t.regex(stored.refresh_token, /^kref_/);

  const first = io();
  t.is(await run(['token', '--credential', cred], first.io), 0, first.stderr());
  const token = first.stdout().trim();
  t.regex(token, /^ptok_[0-9A-Za-z]+$/, 'the token alone on stdout');
  const again = io();
  t.is(await run(['token', '--credential', cred], again.io), 0);
  t.is(again.stdout().trim(), token, 'cached');
  t.is(statSync(path.join(dir, 'keyward', 'token-cache.json')).mode & 0o777, 0o600);

  const listed = await api(app, 'GET', '/v1/tokens', { token: org.token });
  const record = listed.body.data.find((x: { created_by: string }) => x.created_by?.startsWith('usr_'));
  t.is(record.member_id, stored.member.id);
  t.is(Date.parse(record.expires_at) - Date.parse(record.created_at), 3_600_000, 'one hour by default');
  const audit = await api(app, 'GET', '/v1/audit', { token: org.token });
  const minted = audit.body.data.find((e: { action: string }) => e.action === 'token.create');
  t.is(minted.actor, stored.member.id, 'the audit names the person');

  // The member removed: its session mints no more, its personal token is revoked.
  t.is((await api(app, 'DELETE', `/v1/members/${stored.member.id}`, { token: org.token })).status, 200);
  const proxied = await fetch(`${app.url}/v1/proxy/openai/v1/models`, { headers: { 'x-proxy-token': token } });
  t.is(proxied.status, 401);
  rmSync(path.join(dir, 'keyward', 'token-cache.json'));
  const refused = io();
  t.not(await run(['token', '--credential', cred], refused.io), 0);
  t.false(refused.stdout().includes('ptok_'));
});
