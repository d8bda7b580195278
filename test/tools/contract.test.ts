/**
 * The tools contract's edges: a provider's `kind` is checked at load (an unknown kind, or prices on a tool, stop
 * start-up naming the file), PUT/PATCH routes and one trailing slash (`mcp/`) are routes of their own, an id's `-`
 * is `_` in KEYWARD_UPSTREAM_<ID>, and the `tools` scope is refused at mint where it can never match (not an MCP
 * server, empty, not a tool name) and echoed where it is taken; GET /v1/providers names each provider's kind.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { cli } from '../support/cli.js';
import { loadConfig } from '../../src/settings/config.js';
import { validateProvider } from '../../src/catalog/registry.js';
import { matchRoute, normaliseProviderPath } from '../../src/catalog/path.js';
import { api, ADMIN_TOKEN, createCredential, createOrg, mintToken, startApp, tempDir } from '../support/app.js';
import { request } from '../support/request.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';

const base = { id: 'acme-mcp', upstream: 'https://mcp.acme.example', auth: { kind: 'header', header: 'authorization' }, routes: [{ method: 'POST', path: 'mcp/' }, { method: 'PATCH', path: 'items/{id}' }] };

test('kind is checked at load; PATCH and a trailing-slash route are routes; mcp// is refused', (t) => {
  const p = validateProvider('acme-mcp.js', { ...base, kind: 'mcp' });
  t.is(p.kind, 'mcp');
  t.is(validateProvider('x.js', { ...base, id: 'x' }).kind, 'llm', 'the default kind');
  t.throws(() => validateProvider('bad.js', { ...base, kind: 'agent' }), { message: /bad\.js: `kind` must be one of llm, tool, mcp/ });
  t.throws(() => validateProvider('priced.js', { ...base, kind: 'tool', prices: { m: { input: 1, output: 1 } }, pricesAsOf: '2026-01-01' }), { message: /declares no `prices`/ });
  t.is(normaliseProviderPath('mcp/'), 'mcp/');
  t.is(normaliseProviderPath('mcp//'), undefined);
  t.is(normaliseProviderPath('/'), undefined);
  t.truthy(matchRoute(p.routes, 'POST', 'mcp/'));
  t.is(matchRoute(p.routes, 'POST', 'mcp'), undefined, 'mcp and mcp/ are different routes');
  t.deepEqual(matchRoute(p.routes, 'PATCH', 'items/7')?.params, { id: '7' });
});

test('KEYWARD_UPSTREAM_<ID>: a - in an id is _ in the variable', (t) => {
  const config = loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_UPSTREAM_GITHUB_MCP: 'http://127.0.0.1:9', KEYWARD_UPSTREAM_BRAVE_SEARCH: 'http://127.0.0.1:8' });
  t.is(config.upstreamOverrides['github-mcp'], 'http://127.0.0.1:9');
  t.is(config.upstreamOverrides['brave-search'], 'http://127.0.0.1:8');
});

test('the tools scope: MCP servers only, a non-empty list of tool names or prefix*; echoed on the token', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const mcp = await createCredential(app, org, 'github-mcp', 'ghp_0123456789abcdefghij');
  const rest = await createCredential(app, org, 'github', 'ghp_0123456789abcdefghij');
  const mint = (credential_id: string, tools: unknown) => api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id, ttl: '5m', tools } });
  for (const [credential, tools] of [[rest, ['get_issue']], [mcp, []], [mcp, ['has space']], [mcp, ['x'.repeat(129)]], [mcp, 'get_issue'], [mcp, [7]]] as const) {
    const r = await mint(credential, tools);
    t.is(r.status, 400, JSON.stringify(tools));
    t.is(r.body.error.code, 'invalid_scope', JSON.stringify(tools));
  }
  const ok = await mint(mcp, ['get_issue', 'list_*', 'get_issue']);
  t.is(ok.status, 201);
  t.deepEqual(ok.body.tools, ['get_issue', 'list_*']);
  t.deepEqual((await api(app, 'GET', `/v1/tokens/${ok.body.id}`, { token: org.token })).body.tools, ['get_issue', 'list_*']);
  const providers = (await api(app, 'GET', '/v1/providers', { token: org.token })).body.data as Array<{ id: string; kind: string; credential_fields: Array<{ label: string }> }>;
  const kinds = Object.fromEntries(providers.map((p) => [p.id, p.kind]));
  t.like(kinds, { openai: 'llm', github: 'tool', tavily: 'tool', 'brave-search': 'tool', 'github-mcp': 'mcp', 'huggingface-mcp': 'mcp' });
  t.is(providers.find((p) => p.id === 'github-mcp')!.credential_fields[0]!.label, 'Personal access token', 'the console\'s credential form reads the label');
});

test('a spend cap is for model APIs: an organisation with spend_limit_usd still reaches its tool APIs and MCP servers', async (t) => {
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"results":[]}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_TAVILY: upstream.url, KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  t.is((await api(app, 'PATCH', '/v1/orgs/self', { token: org.token, body: { spend_limit_usd: '5' } })).status, 200);
  const tavily = await mintToken(app, org, await createCredential(app, org, 'tavily', 'tvly-0123456789abcdef'));
  const mcp = await mintToken(app, org, await createCredential(app, org, 'github-mcp', 'ghp_0123456789abcdefghij'), '5m', { tools: ['get_issue'] });
  const search = await request(`${app.url}/v1/proxy/search`, { headers: { authorization: `Bearer ${tavily.token}` }, body: '{"query":"keyward"}' });
  t.is(search.status, 200, search.text);
  const called = await request(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${mcp.token}` }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue"}}' });
  t.is(called.status, 200, called.text);
  t.is(upstream.requests.length, 2);
});

test('CLI: tokens create --tools (comma-separated, repeatable) for an MCP credential; refused for another', async (t) => {
  const env = { KEYWARD_DATA_DIR: tempDir(t), KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64') };
  const org = (await cli(['org', 'create', 'acme', '--json'], { env })).json;
  const mcp = (await cli(['credentials', 'create', '--org', org.id, '--provider', 'github-mcp', '--json'], { env, input: 'ghp_0123456789abcdefghijklmn' })).json.id;
  const made = await cli(['tokens', 'create', '--org', org.id, '--credential', mcp, '--tools', 'get_issue,list_*', '--tools', 'search_code', '--json'], { env });
  t.is(made.code, 0, made.stderr);
  t.deepEqual(made.json.tools, ['get_issue', 'list_*', 'search_code']);
  const shown = await cli(['tokens', 'get', made.json.id, '--org', org.id], { env });
  t.regex(shown.stdout, /tools:\s+get_issue, list_\*, search_code/);
  const rest = (await cli(['credentials', 'create', '--org', org.id, '--provider', 'tavily', '--json'], { env, input: 'tvly-0123456789abcdefghij' })).json.id;
  const refused = await cli(['tokens', 'create', '--org', org.id, '--credential', rest, '--tools', 'search'], { env });
  t.is(refused.code, 2);
  t.regex(refused.stderr, /not an MCP server/);
});

test('counting: each forwarded tools/call is one request (a case variant too, for a server that folds case); other methods none', async (t) => {
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', 'ghp_0123456789abcdefghij'), '5m', { max_requests: 3 });
  const post = (body: unknown) => request(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${tok.token}` }, body: JSON.stringify(body) });
  const msg = (id: number, method: string) => ({ jsonrpc: '2.0', id, method, params: { name: 'anything' } });
  for (const m of ['initialize', 'tools/list', 'ping', 'notifications/initialized']) t.is((await post(msg(1, m))).status, 200, m);
  t.is((await post([msg(2, 'tools/call'), msg(3, 'Tools/Call')])).status, 200, 'two calls: two of the three');
  t.is((await post(msg(4, 'tools/call'))).status, 200, 'the third');
  const over = await post(msg(5, 'tools/call'));
  t.is(over.status, 429);
  t.is(over.body.error.code, 'token_exhausted');
  t.is((await post(msg(6, 'tools/list'))).status, 200, 'a list still goes: it counts none');
  t.is(upstream.requests.length, 7);
});
