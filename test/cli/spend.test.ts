/**
 * `keyward usage`, `usage breakdown`, `tokens get` and `credentials get` show spend, the same figures as
 * the API's, read from the store a server flushed its usage counters to.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { api, tempDir } from '../support/app.js';
import { cli } from '../support/cli.js';
import { pricedFixture } from '../support/priced-providers.js';
import { quiet } from '../support/wait.js';

test('keyward usage shows the month\'s spend; tokens get and credentials get their own', async (t) => {
  const dataDir = tempDir(t);
  const KEK = randomBytes(32).toString('base64');
  const f = await pricedFixture(t, { dataDir, env: { KEYWARD_LOCAL_KEK: KEK } });
  const send = async (path: string, body: unknown, token: string) => {
    t.is((await f.spend(path, body, token)).status, 200);
  };
  // 28 + 70 µ$, then 39 + 105 µ$ twice (test/support/priced-providers.ts).
  await send('v1/chat/completions', { model: 'spend-4o', messages: [] }, f.tokens.openai.token);
  for (let i = 0; i < 2; i++) await send('v1/messages', { model: 'spend-claude-3', max_tokens: 5, messages: [] }, f.tokens.anthropic.token);
  await quiet(f.app); // usage is recorded when the response closes
  const viaApi = (await api(f.app, 'GET', '/v1/usage', { token: f.org.token })).body;
  const byModel = (await api(f.app, 'GET', '/v1/usage/breakdown?by=model', { token: f.org.token })).body;
  const byToken = (await api(f.app, 'GET', '/v1/usage/breakdown?by=token', { token: f.org.token })).body;
  await f.app.stop(); // flushes the counters

  const env = { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: KEK, KEYWARD_PROVIDERS_DIR: f.providersDir };
  const json = await cli(['usage', '--org', f.org.id, '--json'], { env });
  t.is(json.code, 0, json.stderr);
  t.deepEqual(json.json.spend_usd, { used: '0.000386', held: '0.00', limit: null });
  t.deepEqual(json.json.spend_usd, viaApi.spend_usd);
  t.deepEqual(json.json.tokens, { input: 11 + 2 * 13, output: 3 * 7 });
  const human = await cli(['usage', '--org', f.org.id], { env });
  t.is(human.code, 0, human.stderr);
  t.regex(human.stdout, /spend:\s+\$0\.000386\n/);

  const models = await cli(['usage', 'breakdown', '--by', 'model', '--org', f.org.id, '--json'], { env });
  t.is(models.code, 0, models.stderr);
  t.deepEqual(models.json, byModel, 'the API\'s answer');
  t.deepEqual(models.json.data.map((r: { key: string; spend_usd: string }) => [r.key, r.spend_usd]), [['spend-claude*', '0.000288'], ['spend-4o*', '0.000098']]);
  t.deepEqual((await cli(['usage', 'breakdown', '--by', 'token', '--org', f.org.id, '--json'], { env })).json, byToken);
  const table = await cli(['usage', 'breakdown', '--by', 'credential', '--org', f.org.id], { env });
  t.regex(table.stdout, new RegExp(`${f.credentials.anthropic}\\s+2\\s+26\\s+14\\s+\\$0\\.000288`));
  const bad = await cli(['usage', 'breakdown', '--by', 'org', '--org', f.org.id], { env });
  t.is(bad.code, 2);
  t.regex(bad.stderr, /--by must be token, credential, model, team or member/);
  t.is((await cli(['usage', 'breakdown', '--by', 'token', '--from', '2026-02-30', '--org', f.org.id], { env })).code, 2, 'a day that is not one: a usage error');
  t.is((await cli(['usage', 'sideways', '--org', f.org.id], { env })).code, 2);

  const tok = await cli(['tokens', 'get', f.tokens.anthropic.id, '--org', f.org.id, '--json'], { env });
  t.is(tok.json.usage.spend_usd, '0.000288');
  t.regex((await cli(['tokens', 'get', f.tokens.anthropic.id, '--org', f.org.id], { env })).stdout, /spend_usd:\s+0\.000288/);
  const cred = await cli(['credentials', 'get', f.credentials.openai, '--org', f.org.id, '--json'], { env });
  t.is(cred.json.usage.spend_usd, '0.000098');
  t.regex((await cli(['credentials', 'get', f.credentials.openai, '--org', f.org.id], { env })).stdout, /spend_usd:\s+0\.000098/);
});
