/**
 * Pools in the `keyward` CLI (the built dist/src/cli/main.js, its own process): create with named members
 * and weights, list (and by a name prefix), rename, a token minted for the pool, delete (its tokens with it),
 * the audit trail's target names; refusals as the API's (two providers, a bad strategy or weight).
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { randomBase62 } from '../../src/ids.js';
import { tempDir } from '../support/app.js';
import { cli } from '../support/cli.js';

test('pools: create, list by name, rename, mint for, delete; refusals; audited with their names', async (t) => {
  // A dozen CLI processes in a row, each a cold start: a busy machine's cores make that slow.
  t.timeout(600_000);
  const env = { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64') };
  const org = (await cli(['org', 'create', 'acme', '--json'], { env })).json.id as string;
  const cred = async (provider: string) => (await cli(['credentials', 'create', '--org', org, '--provider', provider, '--json'], { env, input: `sk-pool-${randomBase62(32)}` })).json.id as string;
  const [a, b, c] = [await cred('openai'), await cred('openai'), await cred('anthropic')];

  const made = await cli(['pools', 'create', '--org', org, '--credential', a, '--credential', `${b}:2`, '--strategy', 'ordered', '--name', 'openai keys', '--json'], { env });
  t.is(made.code, 0, made.stderr);
  t.like(made.json, { object: 'pool', name: 'openai keys', provider: 'openai', strategy: 'ordered' });
  t.deepEqual(made.json.members, [{ credential_id: a, weight: 1 }, { credential_id: b, weight: 2 }]);
  const pool = made.json.id as string;

  const list = await cli(['pools', 'list', '--org', org], { env });
  t.regex(list.stdout, /ID\s+NAME\s+PROVIDER\s+STRATEGY\s+MEMBERS/);
  t.regex(list.stdout, new RegExp(`${pool}\\s+openai keys\\s+openai\\s+ordered\\s+2`));
  t.deepEqual((await cli(['pools', 'list', '--org', org, '--name', 'OPENAI', '--json'], { env })).json.data.map((p: any) => p.id), [pool]);
  t.deepEqual((await cli(['pools', 'list', '--org', org, '--name', 'anthropic', '--json'], { env })).json.data, []);

  const renamed = await cli(['pools', 'rename', pool, '--org', org, '--name', 'openai (eu)'], { env });
  t.is(renamed.code, 0, renamed.stderr);
  t.regex(renamed.stdout, /Named pool pool_\w+ "openai \(eu\)"/);

  const tok = await cli(['tokens', 'create', '--org', org, '--pool', pool, '--json'], { env });
  t.is(tok.code, 0, tok.stderr);
  t.is(tok.json.pool_id, pool);

  // Refusals: members of two providers (the API's 400, exit 2), a bad strategy or weight (usage, exit 2), an unknown pool (exit 3).
  const refusals: Array<[string[], number]> = [
    [['pools', 'create', '--org', org, '--credential', a, '--credential', c], 2],
    [['pools', 'create', '--org', org, '--credential', a, '--strategy', 'random'], 2],
    [['pools', 'create', '--org', org, '--credential', `${a}:0`], 2],
    [['pools', 'rename', 'pool_AAAAAAAAAAAAAAAAAAAAAAAA', '--org', org, '--name', 'x'], 3],
  ];
  for (const [args, code] of refusals) {
    const r = await cli(args, { env });
    t.is(r.code, code, `${args.join(' ')}: ${r.stderr}`);
  }

  const gone = await cli(['pools', 'delete', pool, '--org', org], { env });
  t.is(gone.code, 0, gone.stderr);
  t.deepEqual((await cli(['pools', 'list', '--org', org, '--json'], { env })).json.data, []);
  t.deepEqual((await cli(['tokens', 'list', '--org', org, '--json'], { env })).json.data, [], 'its token went with it');

  const audit = await cli(['audit', '--org', org, '--json'], { env });
  const named = audit.json.data.filter((e: any) => e.action.startsWith('pool.')).map((e: any) => [e.action, e.target, e.target_name]).reverse();
  t.deepEqual(named, [['pool.create', pool, 'openai keys'], ['pool.update', pool, 'openai (eu)'], ['pool.delete', pool, 'openai (eu)']]);
});
