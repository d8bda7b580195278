/**
 * Account-wide routes (contract, Hardening): a provider marks the routes that read or change what
 * the whole provider account shares (batches, stored responses, balance, key info…) `account: true`,
 * and a token reaches one only if its `paths` scope names that route exactly: the route's pattern,
 * or one concrete path of it. Unscoped, model-scoped and `prefix*` tokens get 403
 * path_not_allowed; nothing is forwarded and nothing counts. The list per provider is pinned here,
 * so a route added to a provider file is a conscious decision either way.
 */
import test, { type ExecutionContext } from 'ava';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ProviderPlugin } from '@keyward/sdk';
import { validateProvider } from '../../src/catalog/registry.js';
import { api, mintToken, ROOT } from '../support/app.js';
import { proxyFixture, type ProxyFixture } from '../support/proxy-fixture.js';
import { request, type Reply } from '../support/request.js';

const BUILT_PROVIDERS = path.join(ROOT, 'dist/providers');

/** Every route of every provider file that reads or changes what the whole account shares. */
const ACCOUNT_ROUTES: Record<string, string[]> = {
  anthropic: [
    'DELETE v1/messages/batches/{id}',
    'GET v1/messages/batches',
    'GET v1/messages/batches/{id}',
    'GET v1/messages/batches/{id}/results',
    'POST v1/messages/batches',
    'POST v1/messages/batches/{id}/cancel',
  ],
  azure: [
    'DELETE openai/responses/{id}',
    'DELETE openai/v1/responses/{id}',
    'GET openai/responses/{id}',
    'GET openai/responses/{id}/input_items',
    'GET openai/v1/responses/{id}',
    'GET openai/v1/responses/{id}/input_items',
    'POST openai/responses/{id}/cancel',
    'POST openai/v1/responses/{id}/cancel',
  ],
  bedrock: [],
  // Tool APIs and MCP servers (kind tool, mcp): Tavily's credit balance is the account's.
  'brave-search': [],
  github: [],
  'github-mcp': [],
  'huggingface-mcp': [],
  tavily: ['GET usage'],
  cohere: [],
  deepseek: ['GET user/balance'],
  fireworks: [],
  gemini: [],
  groq: [],
  mistral: ['POST v1/agents/completions'],
  openai: [
    'DELETE v1/responses/{id}',
    'GET v1/responses/{id}',
    'GET v1/responses/{id}/input_items',
    'POST v1/responses/{id}/cancel',
  ],
  openrouter: ['GET api/v1/generation', 'GET api/v1/key'],
  perplexity: ['GET async/chat/completions', 'GET async/chat/completions/{id}', 'POST async/chat/completions'],
  together: [],
  // Vertex lists only model calls under the credential's own project and location (no batch or tuning jobs).
  vertex: [],
  xai: ['DELETE v1/responses/{id}', 'GET v1/responses/{id}'],
};

test('the account-wide routes of every provider file are exactly the pinned list', async (t) => {
  const found: Record<string, string[]> = {};
  for (const f of readdirSync(BUILT_PROVIDERS).filter((f) => f.endsWith('.js'))) {
    const p = (await import(pathToFileURL(path.join(BUILT_PROVIDERS, f)).href)).default as ProviderPlugin;
    found[p.id] = p.routes.filter((r) => r.account).map((r) => `${r.method} ${r.path}`).sort();
  }
  t.deepEqual(found, ACCOUNT_ROUTES);
});

test('a provider file whose `account` is not a boolean stops start-up naming the route', (t) => {
  const base = { id: 'broken', upstream: 'https://api.broken.test', auth: { kind: 'header', header: 'x-key' } };
  const err = t.throws(() => validateProvider('broken.js', { ...base, allow: [{ method: 'GET', path: 'v1/jobs', account: 'yes' }] }));
  t.regex(err?.message ?? '', /broken\.js.*v1\/jobs.*`account`/);
  const ok = validateProvider('fine.js', { ...base, allow: [{ method: 'GET', path: 'v1/jobs', account: true }, { method: 'POST', path: 'v1/run' }] });
  t.deepEqual(ok.routes.map((r) => r.account), [true, false]);
});

const used = async (f: ProxyFixture): Promise<number> => (await api(f.app, 'GET', '/v1/usage', { token: f.org.token })).body.proxy_requests.used;

function refused(t: ExecutionContext, r: Reply, label: string): void {
  t.is(r.status, 403, label);
  t.is(r.body?.error?.code, 'path_not_allowed', label);
  t.is(r.body?.error?.type, 'permission', label);
}

test('unscoped, model-scoped and prefix* tokens → 403 on GET v1/messages/batches and GET v1/responses/{id}; nothing forwarded, nothing counted', async (t) => {
  const f = await proxyFixture(t);
  const anthropicModels = await mintToken(f.app, f.org, f.credentials.anthropic, '15m', { models: ['claude-sonnet-4*'] });
  const anthropicPrefix = await mintToken(f.app, f.org, f.credentials.anthropic, '15m', { paths: ['v1/*'] });
  const openaiModels = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-4o'] });
  const openaiPrefix = await mintToken(f.app, f.org, f.credentials.openai, '15m', { paths: ['v1/responses*'] });
  const cases: Array<[string, string, string, string, string?]> = [
    ['unscoped anthropic', f.tokens.anthropic.token, 'GET', 'v1/messages/batches'],
    ['unscoped anthropic, results', f.tokens.anthropic.token, 'GET', 'v1/messages/batches/msgbatch_01/results'],
    ['unscoped anthropic, create', f.tokens.anthropic.token, 'POST', 'v1/messages/batches', '{"requests":[]}'],
    ['model-scoped anthropic', anthropicModels.token, 'GET', 'v1/messages/batches'],
    ['prefix v1/* anthropic', anthropicPrefix.token, 'GET', 'v1/messages/batches'],
    ['unscoped openai', f.tokens.openai.token, 'GET', 'v1/responses/resp_1'],
    ['unscoped openai, input items', f.tokens.openai.token, 'GET', 'v1/responses/resp_1/input_items'],
    ['unscoped openai, delete', f.tokens.openai.token, 'DELETE', 'v1/responses/resp_1'],
    ['model-scoped openai', openaiModels.token, 'GET', 'v1/responses/resp_1'],
    ['prefix v1/responses* openai', openaiPrefix.token, 'GET', 'v1/responses/resp_1'],
  ];
  for (const [label, token, method, p, body] of cases) refused(t, await request(f.proxyUrl(p), { method: method, headers: { 'x-proxy-token': token }, body: body }), label);
  t.is(f.fake.received.length, 0, 'nothing reached the provider');
  t.is(await used(f), 0, 'nothing counted');

  // The same tokens still reach what is theirs alone.
  t.is((await request(f.proxyUrl('v1/messages'), { headers: { 'x-api-key': anthropicModels.token }, body: '{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[]}' })).status, 200);
  t.is((await request(f.proxyUrl('v1/responses'), { headers: { 'x-proxy-token': openaiPrefix.token }, body: '{"model":"m","input":"x"}' })).status, 200);
  t.is((await request(f.proxyUrl('v1/chat/completions'), { headers: { 'x-proxy-token': f.tokens.openai.token }, body: '{"model":"m","messages":[]}' })).status, 200);
  t.is(f.fake.received.length, 3);
});

test('a token whose paths name the route reaches it: the pattern, or one concrete path of it (that object only)', async (t) => {
  const f = await proxyFixture(t);
  const list = await mintToken(f.app, f.org, f.credentials.anthropic, '15m', { paths: ['v1/messages/batches'] });
  const h = { 'x-api-key': list.token };
  t.is((await request(f.proxyUrl('v1/messages/batches'), { method: 'GET', headers: h })).status, 200);
  t.is((await request(f.proxyUrl('v1/messages/batches'), { headers: h, body: '{"requests":[]}' })).status, 200, 'paths scopes name paths, whatever the method');
  refused(t, await request(f.proxyUrl('v1/messages/batches/msgbatch_01'), { method: 'GET', headers: h }), 'another account route');
  refused(t, await request(f.proxyUrl('v1/messages'), { headers: h, body: '{}' }), 'outside its paths');

  const byPattern = await mintToken(f.app, f.org, f.credentials.openai, '15m', { paths: ['v1/responses/{id}', 'v1/chat/completions'] });
  t.is((await request(f.proxyUrl('v1/responses/resp_1'), { method: 'GET', headers: { 'x-proxy-token': byPattern.token } })).status, 200);
  t.is((await request(f.proxyUrl('v1/responses/resp_2'), { method: 'DELETE', headers: { 'x-proxy-token': byPattern.token } })).status, 200);
  refused(t, await request(f.proxyUrl('v1/responses/resp_1/input_items'), { method: 'GET', headers: { 'x-proxy-token': byPattern.token } }), 'input items are another route');

  const oneObject = await mintToken(f.app, f.org, f.credentials.openai, '15m', { paths: ['v1/responses/resp_mine'] });
  t.is((await request(f.proxyUrl('v1/responses/resp_mine'), { method: 'GET', headers: { 'x-proxy-token': oneObject.token } })).status, 200);
  refused(t, await request(f.proxyUrl('v1/responses/resp_other'), { method: 'GET', headers: { 'x-proxy-token': oneObject.token } }), 'another response');

  t.deepEqual(f.fake.received.map((r) => `${r.method} ${r.url}`), [
    'GET /v1/messages/batches',
    'POST /v1/messages/batches',
    'GET /v1/responses/resp_1',
    'DELETE /v1/responses/resp_2',
    'GET /v1/responses/resp_mine',
  ]);
  t.is(await used(f), 5);
});
