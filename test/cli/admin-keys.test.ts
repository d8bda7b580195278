/**
 * `keyward admin-keys create|list|delete` as users run it (the built CLI in its own process) on the
 * store a running server shares: a key it creates works on the server with its role, list never shows
 * a value, delete is refused by the server at once, and refusals exit 2 (usage) or 3 (not found).
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { isWellFormedToken } from '../../src/ids.js';
import { api, createCredential, startApp, tempDir } from '../support/app.js';
import { cli, cliAll } from '../support/cli.js';

const KEK = randomBytes(32).toString('base64');

test('admin-keys: create (a minter limited to credentials), use on the server, list without values, delete; audited as cli', async (t) => {
  const dataDir = tempDir(t);
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK };
  const made = await cli(['org', 'create', 'acme', '--json'], { env });
  const org = { id: made.json.id as string, token: made.json.token as string };
  const app = await startApp(t, { dataDir, env: { KEYWARD_LOCAL_KEK: KEK } });
  const credA = await createCredential(app, org, 'openai', 'sk-cli-admin-keys-a-0123456789');
  const credB = await createCredential(app, org, 'openai', 'sk-cli-admin-keys-b-0123456789');

  const minter = await cli(['admin-keys', 'create', '--org', org.id, '--name', 'ci', '--role', 'minter', '--credential', credA, '--ttl', '30d', '--json'], { env });
  t.is(minter.code, 0, minter.stderr);
  t.regex(minter.json.id, /^akey_[0-9A-Za-z]{24}$/);
  t.true(isWellFormedToken('otok', minter.json.token));
  t.like(minter.json, { role: 'minter', name: 'ci', credential_ids: [credA], created_by: 'cli', status: 'active' });
  t.is(Date.parse(minter.json.expires_at) - Date.parse(minter.json.created_at), 30 * 86_400_000);

  // The server takes it at once, with its role and credential list.
  t.is((await api(app, 'POST', '/v1/tokens', { token: minter.json.token, body: { credential_id: credA, ttl: '5m' } })).status, 201);
  t.is((await api(app, 'POST', '/v1/tokens', { token: minter.json.token, body: { credential_id: credB, ttl: '5m' } })).status, 403);
  t.is((await api(app, 'GET', '/v1/credentials', { token: minter.json.token })).status, 403);

  const viewer = await cli(['admin-keys', 'create', '--org', org.id, '--name', 'dash board', '--role', 'viewer'], { env });
  t.is(viewer.code, 0, viewer.stderr);
  const viewerToken = /otok_[0-9A-Za-z]{38}/.exec(viewer.stdout)![0];
  const viewerId = /akey_[0-9A-Za-z]{24}/.exec(viewer.stdout)![0];
  t.regex(viewer.stdout, /shown once/);
  t.regex(viewer.stdout, /expires_at:\s+never/);

  const list = await cli(['admin-keys', 'list', '--org', org.id], { env });
  t.is(list.code, 0, list.stderr);
  t.regex(list.stdout, /ID\s+NAME\s+ROLE\s+STATUS\s+EXPIRES/);
  t.true(list.stdout.includes(viewerId) && list.stdout.includes(minter.json.id));
  t.false(list.stdout.includes(viewerToken) || list.stdout.includes(minter.json.token), 'never a key value');
  const listJson = await cli(['admin-keys', 'list', '--org', org.id, '--json'], { env });
  t.deepEqual(listJson.json.data.map((k: { id: string }) => k.id), [viewerId, minter.json.id]);
  t.false(JSON.stringify(listJson.json).includes('otok_'));

  t.is((await api(app, 'GET', '/v1/usage', { token: viewerToken })).status, 200);
  const del = await cli(['admin-keys', 'delete', viewerId, '--org', org.id, '--json'], { env });
  t.is(del.code, 0, del.stderr);
  t.deepEqual(del.json, { id: viewerId, revoked: true });
  t.is((await api(app, 'GET', '/v1/usage', { token: viewerToken })).status, 401, 'the server refuses it at once');

  const audit = (await api(app, 'GET', '/v1/audit', { token: org.token })).body.data as Array<Record<string, string>>;
  t.like(audit.find((e) => e.action === 'admin_key.revoke'), { actor: 'cli', target: viewerId });
  t.is(audit.filter((e) => e.action === 'admin_key.create' && e.actor === 'cli').length, 2);
});

test('admin-keys: refusals exit 2 (usage) or 3 (not found), creating nothing', async (t) => {
  const dataDir = tempDir(t);
  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK };
  const org = (await cli(['org', 'create', 'acme', '--json'], { env })).json.id as string;
  const runs: Array<[string[], number]> = [
    [['admin-keys', 'create', '--org', org, '--name', 'x'], 2],
    // A name is optional (Round 4), but an empty or over-long one is refused.
    [['admin-keys', 'create', '--org', org, '--name', '', '--role', 'viewer'], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x'.repeat(65), '--role', 'viewer'], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x', '--role', 'owner'], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x', '--role', 'viewer', '--ttl', '400d'], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x', '--role', 'viewer', '--credential', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA'], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x', '--role', 'minter', '--credential', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA'], 3],
    [['admin-keys', 'create', '--org', 'org_AAAAAAAAAAAAAAAAAAAAAAAA', '--name', 'x', '--role', 'viewer'], 3],
    [['admin-keys', 'delete', 'akey_AAAAAAAAAAAAAAAAAAAAAAAA', '--org', org], 3],
    [['admin-keys', 'delete', 'tok_AAAAAAAAAAAAAAAAAAAAAAAA', '--org', org], 2],
    [['admin-keys', 'create', '--org', org, '--name', 'x', '--role', 'viewer', '--token', 'otok_x'], 2],
  ];
  const results = await cliAll(runs.map(([args]) => ({ args, env })));
  runs.forEach(([args, code], i) => t.is(results[i]!.code, code, `${args.join(' ')}: ${results[i]!.stderr}`));
  const list = await cli(['admin-keys', 'list', '--org', org, '--json'], { env });
  t.deepEqual(list.json.data, []);
  const help = await cli(['admin-keys', '--help'], { env });
  t.regex(help.stdout, /admin-keys create/);
  t.regex(help.stdout, /admin-keys delete <akey_id>/);
});
