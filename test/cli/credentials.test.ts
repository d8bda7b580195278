/**
 * The `keyward` CLI as users run it: the built dist/src/cli/main.js in its own
 * process, on a temp KEYWARD_DATA_DIR (`npm test` builds dist/ first).
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { CredentialService } from '../../src/vault/credential-service.js';
import { randomBase62 } from '../../src/ids.js';
import { api, startApp, tempDir } from '../support/app.js';
import { cli } from '../support/cli.js';
import { ManualClock } from '../support/clocks.js';

const KEK = randomBytes(32).toString('base64');
const envFor = (dataDir: string, extra: Record<string, string> = {}) => ({ KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, ...extra });
const secretKey = (label: string) => `sk-${label}-${randomBase62(32)}`;

async function newOrg(env: Record<string, string>, name = 'acme'): Promise<{ id: string; token: string }> {
  const r = await cli(['org', 'create', name, '--json'], { env });
  if (r.code !== 0) throw new Error(`org create: ${r.code} ${r.stderr}`);
  return { id: r.json.id, token: r.json.token };
}

test('credentials: create (key from stdin), list, get, rotate, delete; the key never appears in output', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir);
  const org = await newOrg(env);
  const key1 = secretKey('openai');
  const key2 = secretKey('anthropic');
  const c1 = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', '--json'], { env, input: `${key1}\n` });
  t.is(c1.code, 0, c1.stderr);
  t.regex(c1.json.id, /^cred_[0-9A-Za-z]{24}$/);
  t.is(c1.json.provider, 'openai');
  t.is(c1.json.key_hint, `…${key1.slice(-4)}`);
  const c2 = await cli(['credentials', 'create', '--org', org.id, '--provider', 'anthropic'], { env, input: key2 });
  t.is(c2.code, 0, c2.stderr);
  const c2id = /cred_[0-9A-Za-z]{24}/.exec(c2.stdout)![0];

  const list = await cli(['credentials', 'list', '--org', org.id, '--json'], { env });
  t.is(list.code, 0, list.stderr);
  t.deepEqual(list.json.data.map((c: any) => c.id).sort(), [c1.json.id, c2id].sort());
  t.is(list.json.has_more, false);
  const page = await cli(['credentials', 'list', '--org', org.id, '--limit', '1', '--json'], { env });
  t.is(page.json.data.length, 1);
  t.is(page.json.has_more, true);
  const human = await cli(['credentials', 'list', '--org', org.id], { env });
  t.true(human.stdout.includes(c1.json.id) && human.stdout.includes(c2id));
  t.true(human.stdout.includes('anthropic'));

  const got = await cli(['credentials', 'get', c1.json.id, '--org', org.id, '--json'], { env });
  t.is(got.code, 0, got.stderr);
  t.is(got.json.id, c1.json.id);
  t.is(got.json.key_hint, c1.json.key_hint);

  // The server on the same store decrypts exactly the piped key.
  // Its feed polls and cache ages run on these timers: "within a second" is one the test moves.
  const timers = new ManualClock();
  const app = await startApp(t, { timers, dataDir, env: { KEYWARD_LOCAL_KEK: KEK } });
  const credentials = app.server.container.resolve(CredentialService);
  t.is(await credentials.keyFor({ orgId: org.id, id: c1.json.id, provider: 'openai' }), key1);
  t.is(await credentials.keyFor({ orgId: org.id, id: c2id, provider: 'anthropic' }), key2);

  const key3 = secretKey('rotated');
  const rot = await cli(['credentials', 'rotate', c1.json.id, '--org', org.id, '--json'], { env, input: key3 });
  t.is(rot.code, 0, rot.stderr);
  t.is(rot.json.id, c1.json.id);
  t.is(rot.json.key_hint, `…${key3.slice(-4)}`);
  await timers.tick(1000);
  t.is(await credentials.keyFor({ orgId: org.id, id: c1.json.id, provider: 'openai' }), key3, 'the running server serves the rotated key within a second');

  const del = await cli(['credentials', 'delete', c2id, '--org', org.id, '--json'], { env });
  t.is(del.code, 0, del.stderr);
  t.deepEqual(del.json, { id: c2id, deleted: true });
  const again = await cli(['credentials', 'delete', c2id, '--org', org.id], { env });
  t.is(again.code, 3, again.stderr);
  t.is((await cli(['credentials', 'get', c2id, '--org', org.id], { env })).code, 3);
  t.is((await api(app, 'GET', `/v1/credentials/${c2id}`, { token: org.token })).status, 404);

  for (const r of [c1, c2, list, human, got, rot, del]) {
    for (const k of [key1, key2, key3]) {
      t.false(r.stdout.includes(k));
      t.false(r.stderr.includes(k));
    }
  }
});

test('the API key is never taken from argv, and a refused one is never echoed', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir);
  const org = await newOrg(env);
  const key = secretKey('argv');
  const attempts = [
    ['--api-key', key], [`--api-key=${key}`], ['--api_key', key], ['--key', key], [`--key=${key}`], ['--secret', key], [key],
  ];
  for (const extra of attempts) {
    const r = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', ...extra], { env, input: secretKey('stdin') });
    t.is(r.code, 2, extra.join(' '));
    t.false(r.stderr.includes(key), extra.join(' '));
    t.false(r.stdout.includes(key), extra.join(' '));
  }
  const rot = await cli(['credentials', 'rotate', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA', key, '--org', org.id], { env, input: secretKey('stdin') });
  t.is(rot.code, 2, rot.stderr);
  t.false(rot.stderr.includes(key));
  // An empty stdin, or a key that is not a key, is a usage error too.
  const empty = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai'], { env, input: '' });
  t.is(empty.code, 2, empty.stderr);
  const twoLines = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai'], { env, input: `${key}\nsecond line\n` });
  t.is(twoLines.code, 2, twoLines.stderr);
  t.false(twoLines.stderr.includes(key));
  const unknown = await cli(['credentials', 'create', '--org', org.id, '--provider', 'nope'], { env, input: key });
  t.is(unknown.code, 2, unknown.stderr);
  t.false(unknown.stderr.includes(key));
  // Nothing was stored by any of it.
  t.deepEqual((await cli(['credentials', 'list', '--org', org.id, '--json'], { env })).json.data, []);
});
