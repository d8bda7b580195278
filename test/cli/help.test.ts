/**
 * Every command's help, walked from the CLI's own command table (src/cli/main.ts COMMANDS, not a hand list),
 * read against what the command does: each flag the command takes is listed once, with words that name what it
 * sets for that command (a rule per flag and kind of command below: a flag or command added without one fails
 * here), and the commands are run to show they do what their help says: each create command prints its new id
 * alone with --quiet (a secret shown once on stderr instead) and takes --name as the new record's name; each list
 * command's --name keeps the names starting with it; a pool's --credential makes its members; `org list` lists
 * the organisations; `tokens list` says what a token is bound to, pool or credential.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { randomBase62 } from '../../src/ids.js';
import { COMMANDS } from '../../src/cli/main.js';
import { OPTION_HELP, type Command, type OptionName } from '../../src/cli/command-kit.js';
import { tempDir } from '../support/app.js';
import { cli, cliInProcess } from '../support/cli.js';

const KEK = randomBytes(32).toString('base64');

/** What a flag's description must say for this command: what it sets. */
function mustSay(c: Command, o: OptionName): RegExp | undefined {
  const [group, verb] = c.words;
  const thing = { credentials: 'credential', tokens: 'token', 'admin-keys': 'key', pools: 'pool', 'trust-policies': undefined }[group!];
  switch (o) {
    case 'org': return /^the organisation \(org_…\)$/;
    case 'name':
      if (verb === 'list') return /^list only those whose name starts with this \(any case\)$/;
      if (verb === 'create' && thing) return new RegExp(`^the new ${thing}'s name \\(optional\\)$`);
      if (verb === 'rename') return new RegExp(`^the ${{ credentials: 'credential', tokens: 'token', 'admin-keys': 'admin key', pools: 'pool' }[group!]}'s new name \\('' removes it\\)$`);
      return undefined;
    case 'gateway': return /^the gateway's public URL \(https\)$/;
    case 'credential':
      if (group === 'token') return /^the credential the personal token uses$/;
      return { tokens: /^the credential the new token is bound to$/, pools: /^a member credential of the new pool, cred_… or cred_…:weight \(repeat it/, 'admin-keys': /^a credential a minter may mint tokens for/, 'trust-policies': /^the credential the exchanged tokens are bound to$/ }[group!];
    case 'pool': return group === 'tokens' || group === 'token' ? /^the pool the new token spreads over/ : undefined;
    case 'ttl': return { token: /^the personal token's lifetime.*\(default 1h\)$/, tokens: /^the new token's lifetime/, 'admin-keys': /^how long the new key lasts/, 'trust-policies': /^each exchanged token's lifetime/ }[group!];
    case 'role': return /^the new key's role: admin, minter or viewer$/;
    case 'provider': return /^the provider the key belongs to/;
    case 'limit': return /^how many to list, 1 to 100/;
    case 'starting-after': return /^list the page after this id$/;
    case 'status': return /^list the revoked tokens instead/;
    case 'strategy': return /^how the pool picks a member/;
    case 'by': return /^what to break usage down by: token, credential or model$/;
    case 'from': return /^the first day/;
    case 'to': return /^the last day/;
    case 'activate-in': return /^how long a new signing key is published before it signs/;
    case 'issuer': case 'audience': case 'subject': case 'claim': return group === 'trust-policies' ? /OIDC|token/ : undefined;
    case 'model': case 'path': case 'max-requests': case 'rate-limit': case 'tools':
      return group === 'tokens' ? /./ : group === 'trust-policies' ? /exchanged token/ : undefined;
    case 'budget-usd': case 'tokens-per-minute': case 'max-concurrent': return group === 'tokens' ? /token|at most/ : undefined;
    default: return undefined;
  }
}

test('every command\'s help lists each of its flags once, saying what it sets for that command', async (t) => {
  t.true(COMMANDS.length >= 30, `${COMMANDS.length} commands`);
  const top = await cliInProcess(['--help'], {});
  for (const c of COMMANDS) {
    const label = c.words.join(' ');
    t.true(top.stdout.includes(`  ${[...c.words, ...c.args].join(' ')}`), `${label} is in the top help`);
    const r = await cliInProcess([...c.words, '--help'], {});
    t.is(r.code, 0, label);
    t.true(r.stdout.startsWith(`Usage: keyward ${c.words.join(' ')}`), label);
    const options = r.stdout.split('\nOptions:\n')[1]!.split('\n').filter(Boolean);
    for (const o of c.options) {
      const lines = options.filter((l) => l.trimStart().startsWith(`--${o} `));
      t.is(lines.length, 1, `${label} --${o} is listed once`);
      const [, says] = /^\s+--\S+(?: \S+)?\s{2,}(.+)$/.exec(lines[0] ?? '') ?? [];
      const rule = mustSay(c, o);
      t.truthy(rule, `${label} --${o}: a rule for what it sets (add one to mustSay)`);
      if (rule) t.regex(says ?? '', rule, `${label} --${o}`);
      // A create command's --name is the new record's, never the list filter's words.
      if (c.words[1] !== 'list') t.false(/starts with/.test(says ?? ''), `${label} --${o}: no list filter's words`);
    }
    t.is(options.some((l) => l.trimStart().startsWith('--quiet')), c.creates === true, `${label}: --quiet only on create commands`);
  }
  t.false(Object.values(OPTION_HELP).some((h) => /\ba [aeiou]/.test(h)), 'no "a admin key"');
  t.false(top.stdout.includes('name a admin key'));
  t.true(top.stdout.includes('name an admin key'));
});

test('the commands do what their help says: --quiet ids, --name, list filters, pool members, org list, tokens bound to pools', async (t) => {
  const env = { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: KEK };
  const run = async (args: string[], input?: string) => {
    const r = await cli(args, { env, ...(input !== undefined ? { input } : {}) });
    if (r.code !== 0) throw new Error(`keyward ${args.join(' ')}: ${r.code} ${r.stderr}`);
    return r;
  };
  const quietId = async (prefix: string, args: string[], input?: string) => {
    const r = await run([...args, '--quiet'], input);
    t.regex(r.stdout, new RegExp(`^${prefix}_[0-9A-Za-z]{24}\\n$`), `${args.slice(0, 2).join(' ')} --quiet: the id alone`);
    // The line saying which store and key the command opened comes first on stderr (opened-store.ts): the rest is the command's.
    return { id: r.stdout.trim(), stderr: r.stderr.replace(/^keyward: store [^\n]*\n/, '') };
  };

  // Each create command, --quiet: the id alone on stdout; a secret shown once on stderr, not lost.
  const org = await quietId('org', ['org', 'create', 'help-co']);
  t.regex(org.stderr, /^token: otok_[0-9A-Za-z]+\nThis token is shown once: store it now\.\n$/);
  const key = () => `sk-help-${randomBase62(32)}`;
  const cred = await quietId('cred', ['credentials', 'create', '--org', org.id, '--provider', 'openai', '--name', 'Prod openai'], key());
  const cred2 = await quietId('cred', ['credentials', 'create', '--org', org.id, '--provider', 'openai', '--name', 'backup'], key());
  const pool = await quietId('pool', ['pools', 'create', '--org', org.id, '--credential', cred.id, '--credential', `${cred2.id}:3`, '--name', 'prod pool']);
  const tok = await quietId('tok', ['tokens', 'create', '--org', org.id, '--credential', cred.id, '--name', 'agent one']);
  t.regex(tok.stderr, /^token: ptok_[0-9A-Za-z]+\n/);
  const pooled = await quietId('tok', ['tokens', 'create', '--org', org.id, '--pool', pool.id, '--name', 'pooled agent']);
  const akey = await quietId('akey', ['admin-keys', 'create', '--org', org.id, '--role', 'minter', '--credential', cred.id, '--name', 'ci minter']);
  t.regex(akey.stderr, /^token: otok_/);
  const tp = await quietId('tp', ['trust-policies', 'create', '--org', org.id, '--issuer', 'https://token.actions.githubusercontent.com', '--audience', 'help',
    '--subject', 'repo:acme/app:*', '--credential', cred.id]);
  // Every create command of the table was run here (a new one needs a line above).
  const ran = ['org create', 'credentials create', 'pools create', 'tokens create', 'admin-keys create', 'trust-policies create'];
  t.deepEqual(COMMANDS.filter((c) => c.creates).map((c) => c.words.join(' ')).sort(), [...ran].sort());
  t.truthy(tp.id);
  const both = await cli(['org', 'create', 'x', '--quiet', '--json'], { env });
  t.is(both.code, 2, 'one of --quiet and --json');
  t.is((await cli(['credentials', 'list', '--org', org.id, '--quiet'], { env })).code, 2, '--quiet is a create command\'s');

  // --name on a create command names the record; on a list it keeps the names starting with it (any case).
  const creds = (await run(['credentials', 'list', '--org', org.id, '--name', 'prod', '--json'])).json.data;
  t.deepEqual(creds.map((c: { id: string; name: string }) => [c.id, c.name]), [[cred.id, 'Prod openai']]);
  t.deepEqual((await run(['tokens', 'list', '--org', org.id, '--name', 'AGENT', '--json'])).json.data.map((x: { id: string }) => x.id), [tok.id]);
  t.deepEqual((await run(['admin-keys', 'list', '--org', org.id, '--name', 'ci', '--json'])).json.data.map((x: { name: string; credential_ids: string[] }) => [x.name, x.credential_ids]), [['ci minter', [cred.id]]]);
  // A pool's --credential made its members, in order, with the weight given.
  const pools = (await run(['pools', 'list', '--org', org.id, '--name', 'prod', '--json'])).json.data;
  t.deepEqual(pools[0].members, [{ credential_id: cred.id, weight: 1 }, { credential_id: cred2.id, weight: 3 }]);
  t.is(pools[0].name, 'prod pool');

  // tokens list says what each token is bound to: a pool's token shows its pool under BOUND TO.
  const listed = (await run(['tokens', 'list', '--org', org.id])).stdout;
  t.regex(listed, /^ID +NAME +BOUND TO +STATUS +EXPIRES/);
  t.regex(listed, new RegExp(`${pooled.id} +pooled agent +${pool.id} +active`));
  t.regex(listed, new RegExp(`${tok.id} +agent one +${cred.id} +active`));

  // org list: every organisation on the store, newest first, never a token.
  const second = await quietId('org', ['org', 'create', 'second-co']);
  const orgs = await run(['org', 'list', '--json']);
  t.deepEqual(orgs.json.data.map((o: { id: string; name: string }) => [o.id, o.name]), [[second.id, 'second-co'], [org.id, 'help-co']]);
  t.false(orgs.stdout.includes('otok_'));
  const page = await run(['org', 'list', '--limit', '1']);
  t.regex(page.stdout, new RegExp(`^ID +NAME +CREATED +MONTHLY LIMIT\\n${second.id} +second-co +`));
  t.regex(page.stdout, new RegExp(`\\(more: --starting-after ${second.id}\\)\\n$`));
  t.regex((await run(['org', 'list', '--starting-after', second.id])).stdout, new RegExp(`^ID.*\\n${org.id} +help-co`));
  t.is((await cli(['org', 'list', '--limit', '0'], { env })).code, 2);
});
