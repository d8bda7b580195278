/**
 * The `keyward` CLI as users run it: the built dist/src/cli/main.js in its own
 * process, on a temp KEYWARD_DATA_DIR (`npm test` builds dist/ first).
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { isWellFormedToken, randomBase62 } from '../../src/ids.js';
import { TokenService } from '../../src/vault/token-service.js';
import { api, createCredential, createOrg, mintToken, startApp, tempDir } from '../support/app.js';
import { cli, cliAll } from '../support/cli.js';
import { ManualClock } from '../support/clocks.js';
import { budgetSetup, chat, chatBody, worstCase } from '../support/budget.js';
import { formatUsd } from '../../src/pricing/money.js';
import { eventually } from '../support/wait.js';

const KEK = randomBytes(32).toString('base64');
const envFor = (dataDir: string, extra: Record<string, string> = {}) => ({ KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, ...extra });
const secretKey = (label: string) => `sk-${label}-${randomBase62(32)}`;

async function newOrg(env: Record<string, string>, name = 'acme'): Promise<{ id: string; token: string }> {
  const r = await cli(['org', 'create', name, '--json'], { env });
  if (r.code !== 0) throw new Error(`org create: ${r.code} ${r.stderr}`);
  return { id: r.json.id, token: r.json.token };
}

test('tokens: create (default ttl 15m), list without values, get, revoke; exit codes 0/2/3', async (t) => {
  const dataDir = tempDir(t);
  const env = envFor(dataDir);
  const org = await newOrg(env);
  const made = await cli(['credentials', 'create', '--org', org.id, '--provider', 'openai', '--json'], { env, input: secretKey('tok') });
  const cred = made.json.id;

  const t1 = await cli(['tokens', 'create', '--org', org.id, '--credential', cred, '--json'], { env });
  t.is(t1.code, 0, t1.stderr);
  t.regex(t1.json.id, /^tok_[0-9A-Za-z]{24}$/);
  t.true(isWellFormedToken('ptok', t1.json.token));
  t.is(t1.json.credential_id, cred);
  t.is(Date.parse(t1.json.expires_at) - Date.parse(t1.json.created_at), 15 * 60_000);
  const t2 = await cli(['tokens', 'create', '--org', org.id, '--credential', cred, '--ttl', '2h'], { env });
  t.is(t2.code, 0, t2.stderr);
  const t2token = /ptok_[0-9A-Za-z]{38}/.exec(t2.stdout)![0];
  const t2id = /tok_[0-9A-Za-z]{24}/.exec(t2.stdout)![0];
  t.true(isWellFormedToken('ptok', t2token));

  const refusals: Array<[string[], number]> = [
    ...['0m', '15', '1w', '31d', '015m'].map((ttl): [string[], number] => [['tokens', 'create', '--org', org.id, '--credential', cred, '--ttl', ttl], 2]),
    [['tokens', 'create', '--org', org.id, '--credential', 'cred_AAAAAAAAAAAAAAAAAAAAAAAA'], 3],
    [['tokens', 'create', '--org', 'org_AAAAAAAAAAAAAAAAAAAAAAAA', '--credential', cred], 3],
    [['tokens', 'create', '--org', org.id, '--credential', cred, '--max-requests', '0'], 2],
  ];
  const refused = await cliAll(refusals.map(([args]) => ({ args, env })));
  refusals.forEach(([args, code], i) => t.is(refused[i]!.code, code, `${args.join(' ')}: ${refused[i]!.stderr}`));

  const list = await cli(['tokens', 'list', '--org', org.id, '--json'], { env });
  t.is(list.code, 0, list.stderr);
  t.deepEqual(list.json.data.map((x: any) => x.id).sort(), [t1.json.id, t2id].sort());
  t.true(list.json.data.every((x: any) => x.status === 'active' && !('token' in x)));
  t.false(list.stdout.includes('ptok_'));
  const human = await cli(['tokens', 'list', '--org', org.id], { env });
  t.false(human.stdout.includes('ptok_'));
  t.true(human.stdout.includes(t2id));
  const got = await cli(['tokens', 'get', t2id, '--org', org.id, '--json'], { env });
  t.is(got.json.id, t2id);
  t.false(got.stdout.includes('ptok_'));

  const rev = await cli(['tokens', 'revoke', t2id, '--org', org.id, '--json'], { env });
  t.is(rev.code, 0, rev.stderr);
  t.deepEqual(rev.json, { id: t2id, revoked: true });
  t.is((await cli(['tokens', 'revoke', t2id, '--org', org.id], { env })).code, 3);
  t.is((await cli(['tokens', 'get', t2id, '--org', org.id], { env })).code, 3);
  t.deepEqual((await cli(['tokens', 'list', '--org', org.id, '--json'], { env })).json.data.map((x: any) => x.id), [t1.json.id]);

  // Scopes go through the same validation as the API.
  const scoped = await cli(['tokens', 'create', '--org', org.id, '--credential', cred, '--model', 'gpt-4o*', '--model', 'o3', '--max-requests', '5', '--json'], { env });
  t.is(scoped.code, 0, scoped.stderr);
  t.deepEqual(scoped.json.models, ['gpt-4o*', 'o3']);
  t.is(scoped.json.max_requests, 5);
  const budgeted = await cli(['tokens', 'create', '--org', org.id, '--credential', cred, '--budget-usd', '25', '--json'], { env });
  t.is(budgeted.code, 0, budgeted.stderr);
  t.is(budgeted.json.budget_usd, '25.00');
  t.is((await cli(['tokens', 'create', '--org', org.id, '--credential', cred, '--budget-usd', '0'], { env })).code, 2);
});

test('a token revoked with the CLI is refused by a running server within a second', async (t) => {
  const dataDir = tempDir(t);
  // The server's feed polls and cache ages run on these timers: "within a second" is one the test moves.
  const timers = new ManualClock();
  const app = await startApp(t, { timers, dataDir, env: { KEYWARD_LOCAL_KEK: KEK } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', secretKey('feed'));
  const doomed = await mintToken(app, org, cred);
  const kept = await mintToken(app, org, cred);
  const orphan = await createCredential(app, org, 'anthropic', secretKey('feed2'));
  const orphanTok = await mintToken(app, org, orphan);
  const tokens = app.server.container.resolve(TokenService);
  // The server has them cached.
  t.truthy(await tokens.resolve(doomed.token));
  t.truthy(await tokens.resolve(orphanTok.token));

  const env = envFor(dataDir);
  const [rev, del] = await Promise.all([
    cli(['tokens', 'revoke', doomed.id, '--org', org.id], { env }),
    cli(['credentials', 'delete', orphan, '--org', org.id], { env }),
  ]);
  t.is(rev.code, 0, rev.stderr);
  t.is(del.code, 0, del.stderr);
  await timers.tick(1000);
  t.is(await tokens.resolve(doomed.token), undefined, 'the revoked token is refused a second after the CLI exited');
  t.is(await tokens.resolve(orphanTok.token), undefined, 'and the deleted credential\'s');
  t.truthy(await tokens.resolve(kept.token), 'other tokens are unaffected');
  t.is((await api(app, 'GET', `/v1/tokens/${doomed.id}`, { token: org.token })).status, 404);
});

test('tokens get shows each cap from its ledger, as GET /v1/tokens/:id does: budget_usd used, held and limit; max_requests likewise', async (t) => {
  const dataDir = tempDir(t);
  const s = await budgetSetup(t, { KEYWARD_LOCAL_KEK: KEK }, { dataDir });
  const w = worstCase(chatBody(0));
  const tok = await mintToken(s.app, s.org, s.credential, '1h', { budget_usd: formatUsd(2 * w), max_requests: 7 });
  for (let i = 0; i < 3; i++) await chat(s.app.url, tok.token, chatBody(i));
  t.is(s.up.received.length, 2, 'two worst cases fit the budget; the third was refused');
  const env = envFor(dataDir, { KEYWARD_PROVIDERS_DIR: s.app.config.providersDir! });
  // The server writes its usage within a second or so: then the CLI, on the same store, reads what the API shows.
  let shown: any;
  await eventually(async () => {
    shown = (await cli(['tokens', 'get', tok.id, '--org', s.org.id, '--json'], { env })).json;
    return shown?.usage?.spend_usd === formatUsd(2 * w);
  }, 'the server\'s usage written');
  const viaApi = (await api(s.app, 'GET', `/v1/tokens/${tok.id}`, { token: s.org.token })).body;
  t.deepEqual(shown.caps, viaApi.caps);
  t.deepEqual(shown.caps.budget_usd, { used: formatUsd(2 * w), held: formatUsd(0), limit: formatUsd(2 * w) });
  t.is(shown.caps.max_requests.used, 2);
  t.is(shown.caps.max_requests.limit, 7);
  const human = await cli(['tokens', 'get', tok.id, '--org', s.org.id], { env });
  t.is(human.code, 0, human.stderr);
  const line = (name: string) => human.stdout.split('\n').find((l) => l.startsWith(`${name}:`))?.replace(/^[a-z_]+: +/, '');
  t.is(line('budget_usd'), `${formatUsd(2 * w)} used, 0.00 held of ${formatUsd(2 * w)}`);
  t.is(line('max_requests'), `2 used, ${shown.caps.max_requests.held} held of 7`);
});
