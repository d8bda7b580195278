/**
 * The `keyward` CLI as users run it: the built dist/src/cli/main.js in its own
 * process, on a temp KEYWARD_DATA_DIR (`npm test` builds dist/ first).
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isWellFormedToken, randomBase62 } from '../../src/ids.js';
import { HELD_MEANS } from '../../src/api/schemas/usage.js';
import { api, startApp, tempDir } from '../support/app.js';
import { cli, cliAll } from '../support/cli.js';
import { RFC3339_MS_UTC } from '../support/clocks.js';

const KEK = randomBytes(32).toString('base64');
const envFor = (dataDir: string, extra: Record<string, string> = {}) => ({ KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, ...extra });
const secretKey = (label: string) => `sk-${label}-${randomBase62(32)}`;

async function newOrg(env: Record<string, string>, name = 'acme'): Promise<{ id: string; token: string }> {
  const r = await cli(['org', 'create', name, '--json'], { env });
  if (r.code !== 0) throw new Error(`org create: ${r.code} ${r.stderr}`);
  return { id: r.json.id, token: r.json.token };
}

test('--help on every command prints usage on stdout, exits 0 and touches no store', async (t) => {
  const dataDir = path.join(tempDir(t), 'never-created');
  const env = { KEYWARD_DATA_DIR: dataDir };
  const commands = [
    [], ['org'], ['credentials'], ['tokens'], ['keys'],
    ['org', 'create'], ['credentials', 'list'], ['credentials', 'get'], ['credentials', 'create'], ['credentials', 'rotate'], ['credentials', 'delete'],
    ['tokens', 'list'], ['tokens', 'get'], ['tokens', 'create'], ['tokens', 'revoke'], ['usage'], ['keys', 'rewrap'],
  ];
  const results = await cliAll(commands.map((words) => ({ args: [...words, '--help'], env })));
  commands.forEach((words, i) => {
    const r = results[i]!;
    const label = words.join(' ') || '(none)';
    t.is(r.code, 0, label);
    t.regex(r.stdout, /^Usage: keyward/, label);
    if (words.length) t.true(r.stdout.includes(`keyward ${words.join(' ')}`), label);
    t.true(r.stdout.includes('--json'), label);
    t.is(r.stderr, '', label);
  });
  t.true(results[0]!.stdout.includes('keys rewrap'));
  t.true(results.find((_, i) => commands[i]!.join(' ') === 'credentials create')!.stdout.includes('stdin'));
  t.is((await cli(['-h'], { env })).code, 0);
  t.is((await cli(['tokens', 'create', '--org', 'org_x', '-h'], { env })).code, 0);
  t.false(existsSync(dataDir), 'help never opens the store');
});

test('usage errors exit 2, on stderr, with nothing on stdout', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir);
  const org = await newOrg(env);
  const cases: string[][] = [
    [],
    ['bogus'],
    ['credentials'],
    ['credentials', 'frobnicate'],
    ['org', 'create'],
    ['org', 'create', 'a', 'b'],
    ['org', 'create', ' bad name'],
    ['credentials', 'list'],
    ['credentials', 'list', '--org'],
    ['credentials', 'list', '--org', 'acme'],
    ['credentials', 'list', '--org', org.id, '--limit', '0'],
    ['credentials', 'list', '--org', org.id, '--limit', '101'],
    ['credentials', 'list', '--org', org.id, '--starting-after', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA'],
    ['credentials', 'list', '--org', org.id, '--ttl', '5m'],
    ['credentials', 'list', '--org', org.id, '--frobnicate'],
    ['credentials', 'get', '--org', org.id],
    ['credentials', 'get', 'not-an-id', '--org', org.id],
    ['tokens', 'create', '--org', org.id],
    ['tokens', 'revoke', '--org', org.id],
    ['usage'],
  ];
  const results = await cliAll(cases.map((args) => ({ args, env })));
  cases.forEach((args, i) => {
    const r = results[i]!;
    t.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    t.true(r.stderr.length > 0, args.join(' '));
    if (args.length) t.is(r.stdout, '', args.join(' '));
  });
  // --json errors are JSON too (on stderr).
  const j = await cli(['credentials', 'list', '--json'], { env });
  t.is(j.code, 2, j.stderr);
  t.is(j.stdout, '');
  t.is(JSON.parse(j.stderr).error.code, 'usage');
});

test('org create prints the id and a working token; --json prints exactly {id, name, token, created_at}', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir, { KEYWARD_LOG_LEVEL: 'debug' });
  const text = await cli(['org', 'create', 'Acme Labs'], { env });
  t.is(text.code, 0, text.stderr);
  const id = /org_[0-9A-Za-z]{24}/.exec(text.stdout)?.[0];
  const token = /otok_[0-9A-Za-z]{38}/.exec(text.stdout)?.[0];
  t.truthy(id);
  t.truthy(token);
  t.true(text.stdout.includes('Acme Labs'));

  const json = await cli(['--json', 'org', 'create', 'Beta'], { env });
  t.is(json.code, 0, json.stderr);
  t.deepEqual(Object.keys(json.json).sort(), ['created_at', 'id', 'name', 'token']);
  t.regex(json.json.id, /^org_[0-9A-Za-z]{24}$/);
  t.is(json.json.name, 'Beta');
  t.true(isWellFormedToken('otok', json.json.token));
  t.regex(json.json.created_at, RFC3339_MS_UTC);
  // Logs (debug level here) go to stderr only: stdout is exactly the JSON.
  t.is(json.stdout.trim(), JSON.stringify(json.json, null, 2));
  t.false(json.stderr.includes(json.json.token), 'the token is not logged');

  // Both tokens work against a server on the same store.
  const app = await startApp(t, { dataDir, env: { KEYWARD_LOCAL_KEK: KEK } });
  for (const tok of [token!, json.json.token]) t.is((await api(app, 'GET', '/v1/credentials', { token: tok })).status, 200);
  t.is((await api(app, 'GET', '/v1/usage', { token: token! })).status, 200);
});

test('usage prints the period, proxy requests (and what held means) and credentials against the free tier', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir, { KEYWARD_FREE_CREDENTIALS: '3', KEYWARD_FREE_PROXY_REQUESTS: '500' });
  const org = await newOrg(env);
  await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai'], { env, input: secretKey('u') });
  const r = await cli(['usage', '--org', org.id, '--json'], { env });
  t.is(r.code, 0, r.stderr);
  const now = new Date();
  t.is(r.json.period, `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}`);
  t.deepEqual(r.json.proxy_requests, { used: 0, held: 0, limit: 500 });
  t.deepEqual(r.json.credentials, { used: 1, limit: 3 });
  const human = await cli(['usage', '--org', org.id], { env });
  t.is(human.code, 0, human.stderr);
  t.regex(human.stdout, /1 of 3/);
  t.regex(human.stdout, /^proxy requests: +0 of 500 \(0 held\)$/m);
  // What `held` is, in one line where it shows: the same words as the API's document.
  t.is(human.stdout.trim().split('\n').at(-1), HELD_MEANS);
  t.regex(HELD_MEANS, /^Held: set aside by running instances, not spent/);
  // The same numbers as the API's.
  const app = await startApp(t, { dataDir, env: { KEYWARD_LOCAL_KEK: KEK, KEYWARD_FREE_CREDENTIALS: '3', KEYWARD_FREE_PROXY_REQUESTS: '500' } });
  const viaApi = await api(app, 'GET', '/v1/usage', { token: org.token });
  t.is(viaApi.body.period, r.json.period);
  t.deepEqual(viaApi.body.proxy_requests, r.json.proxy_requests);
  t.deepEqual(viaApi.body.credentials, r.json.credentials);
});

test('runtime failures exit 1: the free-tier limit, an unusable data dir, a bad KEK', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir, { KEYWARD_FREE_CREDENTIALS: '1' });
  const org = await newOrg(env);
  t.is((await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai'], { env, input: secretKey('a') })).code, 0);
  const over = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', '--json'], { env, input: secretKey('b') });
  t.is(over.code, 1, over.stderr);
  t.is(JSON.parse(over.stderr.trim().split('\n').pop()!).error.code, 'limit_exceeded');

  const file = path.join(tempDir(t), 'not-a-dir');
  writeFileSync(file, 'x');
  const bad = await cli(['org', 'create', 'acme'], { env: { KEYWARD_DATA_DIR: file } });
  t.is(bad.code, 1, bad.stderr);
  t.is(bad.stdout, '');
  t.true(bad.stderr.length > 0);

  const cfg = await cli(['org', 'create', 'acme'], { env: { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: 'short' } });
  t.is(cfg.code, 2, 'a bad configuration value is a usage error');
  t.true(cfg.stderr.includes('KEYWARD_LOCAL_KEK'));
});

test('the CLI\'s own actions are audited (actor cli) and `keyward audit` lists them', async (t) => {
  const env = envFor(tempDir(t));
  const org = await newOrg(env, 'audited');
  const key = secretKey('audit');
  const cred = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', '--json'], { env, input: `${key}\n` });
  t.is(cred.code, 0, cred.stderr);
  const listed = await cli(['audit', '--org', org.id, '--json'], { env });
  t.is(listed.code, 0, listed.stderr);
  const events = listed.json.data as Array<{ action: string; actor: string; target: string }>;
  t.deepEqual(events.map((e) => `${e.action}:${e.actor}`), ['credential.create:cli', 'org.create:cli']);
  t.is(events[0]!.target, cred.json.id);
  t.false(listed.stdout.includes(key));
});
