/**
 * Names in the `keyward` CLI (the built dist/src/cli/main.js, its own process): --name on create, the NAME
 * column of lists and --name as a prefix filter there, `rename` (with --name '' removing it), revoked tokens
 * listed with --status revoked, and the audit trail's target names, all through the services the API uses.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { randomBase62 } from '../../src/ids.js';
import { tempDir } from '../support/app.js';
import { cli } from '../support/cli.js';

const KEK = randomBytes(32).toString('base64');

test('credentials, tokens and admin keys take --name, list and filter by it, rename; revoked tokens are listed with --status revoked', async (t) => {
  // Two dozen CLI processes in a row, each a cold start: on a machine whose cores are busy that passes ava's 60 s.
  t.timeout(600_000);
  const env = { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: KEK };
  const org = (await cli(['org', 'create', 'acme', '--json'], { env })).json.id as string;
  const key = `sk-names-${randomBase62(32)}`;
  const made = await cli(['credentials', 'create', '--org', org, '--provider', 'openai', '--name', 'Prod OpenAI'], { env, input: key });
  t.is(made.code, 0, made.stderr);
  t.regex(made.stdout, /Stored credential cred_\w+ "Prod OpenAI" \(openai/);
  const cred = /cred_[0-9A-Za-z]{24}/.exec(made.stdout)![0];
  const other = await cli(['credentials', 'create', '--org', org, '--provider', 'anthropic', '--json'], { env, input: `${key}x` });
  t.false('name' in other.json);

  const list = await cli(['credentials', 'list', '--org', org], { env });
  t.regex(list.stdout, /ID\s+NAME\s+PROVIDER\s+KEY\s+CREATED/);
  t.regex(list.stdout, new RegExp(`${cred}\\s+Prod OpenAI\\s+openai`));
  const filtered = await cli(['credentials', 'list', '--org', org, '--name', 'prod', '--json'], { env });
  t.deepEqual(filtered.json.data.map((c: any) => c.id), [cred]);

  const tok = await cli(['tokens', 'create', '--org', org, '--credential', cred, '--name', 'evals agent', '--json'], { env });
  t.is(tok.code, 0, tok.stderr);
  t.is(tok.json.name, 'evals agent');
  const renamed = await cli(['tokens', 'rename', tok.json.id, '--org', org, '--name', 'Evals (eu)', '--json'], { env });
  t.is(renamed.code, 0, renamed.stderr);
  t.is(renamed.json.name, 'Evals (eu)');
  t.false(renamed.stdout.includes(tok.json.token));
  t.regex((await cli(['tokens', 'get', tok.json.id, '--org', org], { env })).stdout, /name:\s+Evals \(eu\)/);
  const unnamed = await cli(['credentials', 'rename', cred, '--org', org, '--name', ''], { env });
  t.is(unnamed.code, 0, unnamed.stderr);
  t.regex(unnamed.stdout, /Removed the name of credential/);
  t.deepEqual((await cli(['credentials', 'list', '--org', org, '--name', 'prod', '--json'], { env })).json.data, []);

  t.is((await cli(['tokens', 'revoke', tok.json.id, '--org', org], { env })).code, 0);
  t.deepEqual((await cli(['tokens', 'list', '--org', org, '--json'], { env })).json.data, []);
  const revoked = await cli(['tokens', 'list', '--org', org, '--status', 'revoked'], { env });
  t.regex(revoked.stdout, /ID\s+NAME\s+BOUND TO\s+STATUS\s+REVOKED/);
  t.regex(revoked.stdout, new RegExp(`${tok.json.id}\\s+Evals \\(eu\\)\\s+${cred}\\s+revoked`));
  const revokedJson = await cli(['tokens', 'list', '--org', org, '--status', 'revoked', '--json'], { env });
  t.like(revokedJson.json.data[0], { id: tok.json.id, status: 'revoked', revoked_by: 'cli' });

  const akey = await cli(['admin-keys', 'create', '--org', org, '--role', 'viewer', '--json'], { env });
  t.is(akey.code, 0, akey.stderr);
  t.false('name' in akey.json);
  t.is((await cli(['admin-keys', 'rename', akey.json.id, '--org', org, '--name', 'dashboard'], { env })).code, 0);
  t.deepEqual((await cli(['admin-keys', 'list', '--org', org, '--name', 'DASH', '--json'], { env })).json.data.map((k: any) => k.name), ['dashboard']);

  const audit = await cli(['audit', '--org', org, '--json'], { env });
  const named = audit.json.data.map((e: any) => [e.action, e.target_name]).reverse();
  t.deepEqual(named.filter(([, n]: [string, string | undefined]) => n !== undefined), [
    ['org.create', 'acme'],
    ['credential.create', 'Prod OpenAI'],
    ['token.create', 'evals agent'],
    ['token.update', 'Evals (eu)'],
    ['token.revoke', 'Evals (eu)'],
    ['admin_key.update', 'dashboard'],
  ]);
  t.false(audit.stdout.includes(tok.json.token) || audit.stdout.includes(akey.json.token) || audit.stdout.includes(key));

  // Refusals: a bad name (exit 2), an unknown id (exit 3), --status other than revoked (exit 2), rename without --name (exit 2).
  const refusals: Array<[string[], number]> = [
    [['tokens', 'create', '--org', org, '--credential', cred, '--name', ' lead'], 2],
    [['credentials', 'rename', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA', '--org', org, '--name', 'x'], 3],
    [['tokens', 'list', '--org', org, '--status', 'active'], 2],
    [['tokens', 'rename', tok.json.id, '--org', org], 2],
    [['credentials', 'list', '--org', org, '--name', ''], 2],
  ];
  for (const [args, code] of refusals) {
    const r = await cli(args, { env });
    t.is(r.code, code, `${args.join(' ')}: ${r.stderr}`);
  }
  t.regex((await cli(['credentials', 'rename', '--help'], { env })).stdout, /keyward credentials rename <cred_id> --org <org_id> --name <text>/);
});
