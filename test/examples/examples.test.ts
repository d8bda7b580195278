/**
 * The examples of examples/, each loaded from its own folder (KEYWARD_PROVIDERS_DIR or KEYWARD_PLUGINS_DIR) by a
 * started gateway, as a user who copies one would: team-header (middleware), acme-llm (an OpenAI-compatible
 * provider), team-tools-mcp (an MCP server provider with its mcpServers snippet), budget-alert (a webhook at 50, 80
 * and 100 % of a token's, a team's or an organisation's cap, retried with back-off on the injected timers, ids and
 * amounts only in its payload).
 */
import test, { type ExecutionContext } from 'ava';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import OpenAI from 'openai';
import { api, createCredential, createOrg, mintToken, ROOT, startApp, tempDir } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { startFakeMcp } from '../support/mcp-fake.js';
import { providersDir } from '../support/providers-dir.js';
import { eventually } from '../support/wait.js';

const EXAMPLES = path.join(ROOT, 'examples');

function configFile(t: ExecutionContext, content: unknown): string {
  const file = path.join(tempDir(t, 'keyward-plugin-config-'), 'plugins.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
}

const chat = (url: string, token: string, headers: Record<string, string> = {}, model = 'gpt-4o-mini'): Promise<Response> =>
  fetch(`${url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }) });

test('team-header: a request without a listed team is refused 400 team_required before it goes upstream; a listed one is named back', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: {
    KEYWARD_PLUGINS_DIR: path.join(EXAMPLES, 'team-header'), KEYWARD_PLUGINS: 'team-header', KEYWARD_UPSTREAM_OPENAI: fake.url,
    KEYWARD_PLUGIN_CONFIG: configFile(t, { 'team-header': { teams: ['search', 'ads'] } }),
  } });
  const org = await createOrg(app);
  const { token } = await mintToken(app, org, await createCredential(app, org, 'openai', 'sk-team-header-0123456789'));
  for (const headers of [{}, { 'x-team': 'payroll' }] as Record<string, string>[]) {
    const refused = await chat(app.url, token, headers);
    t.is(refused.status, 400);
    const body = await refused.json() as { error: { code: string; param: string; message: string } };
    t.is(body.error.code, 'team_required');
    t.is(body.error.param, 'x-team');
    t.is(body.error.message, 'Name your team in X-Team: one of search, ads.');
  }
  t.is(fake.received.length, 0, 'nothing went upstream');
  const ok = await chat(app.url, token, { 'x-team': 'Search' });
  t.is(ok.status, 200);
  await ok.text();
  t.is(ok.headers.get('x-keyward-team'), 'search');
  await eventually(() => app.logs.some((l) => l.message === 'team request' && l.team === 'search' && l.status === 200), 'the team in the log line');
});

test('acme-llm: an OpenAI-compatible provider from its folder, called with the openai SDK, priced so a budget bounds it', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: path.join(EXAMPLES, 'openai-compatible'), KEYWARD_UPSTREAM_ACME_LLM: fake.url } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'acme-llm', 'sk-acme-llm-0123456789');
  const { token } = await mintToken(app, org, credential, '15m', { budget_usd: '1.00' });
  const client = new OpenAI({ apiKey: token, baseURL: `${app.url}/v1/proxy/v1`, maxRetries: 0 });
  const done = await client.chat.completions.create({ model: 'acme-large', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
  t.is(done.choices[0]?.message.content, 'Hello from the');
  t.is(fake.received[0]?.headers.authorization, 'Bearer sk-acme-llm-0123456789');
  // Under the budget, a model the file does not price is refused before it goes upstream.
  const unpriced = await client.chat.completions.create({ model: 'acme-unknown', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
  t.true(unpriced instanceof OpenAI.PermissionDeniedError);
  t.is(fake.received.length, 1);
});

test('team-tools-mcp: an MCP server from its folder; an MCP client lists and calls its tools through Keyward; the console gets its mcpServers snippet', async (t) => {
  const key = 'mcp-team-tools-secret-0123456789';
  const fake = await startFakeMcp(key);
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: path.join(EXAMPLES, 'mcp-server'), KEYWARD_UPSTREAM_TEAM_TOOLS_MCP: fake.url } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'team-tools-mcp', key);
  const tok = await mintToken(app, org, credential, '15m', { tools: ['get_issue'] });
  const providers = (await api(app, 'GET', '/v1/providers', { token: org.token })).body.data as Array<{ id: string; sdk?: Array<{ code?: string }> }>;
  const snippet = providers.find((p) => p.id === 'team-tools-mcp')?.sdk?.[0]?.code ?? '';
  t.regex(snippet, /"mcpServers": \{"team-tools": \{"type": "http", "url": "\{proxy\}\/mcp"/);

  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/v1/proxy/mcp`), { requestInit: { headers: { Authorization: `Bearer ${tok.token}` } } });
  const client = new Client({ name: 'keyward-example-test', version: '1.0.0' });
  await client.connect(transport);
  t.deepEqual((await client.listTools()).tools.map((x) => x.name), ['get_issue'], 'the token\'s tools scope filters the list');
  const result = await client.callTool({ name: 'get_issue', arguments: { n: 1 } }) as { content: Array<{ text: string }> };
  t.is(result.content[0]?.text, 'ran get_issue with {"n":1}');
  await client.close();
});

interface Receiver {
  url: string;
  bodies: string[];
  /** Status codes to answer with, in order (then 204). */
  plan: number[];
  close(): Promise<void>;
}

async function startReceiver(plan: number[]): Promise<Receiver> {
  const bodies: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(receiver.plan.shift() ?? 204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const receiver: Receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    bodies, plan,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  return receiver;
}

test('budget-alert: 50, 80 and 100 % of an org\'s cap each announced once; a failed delivery retried after its back-off on the host\'s timers; ids and amounts only', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const hook = await startReceiver([500, 500]);
  t.teardown(() => hook.close());
  const clock = new ManualClock();
  // Each request to pm-1 costs 11 input tokens at $2/M and 3 output at $8/M: 46 µ$. A cap of 101 µ$ is passed at 50
  // and 80 % by the second request and at 100 % by the third.
  const app = await startApp(t, { clock, timers: clock, env: {
    KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: fake.url,
    KEYWARD_PLUGINS_DIR: path.join(EXAMPLES, 'budget-alert'), KEYWARD_PLUGINS: 'budget-alert',
    KEYWARD_PLUGIN_CONFIG: configFile(t, { 'budget-alert': { webhook: hook.url, orgs: { '*': 0.000101 }, backoffMs: 1000 } }),
  } });
  const org = await createOrg(app);
  const key = 'sk-priced-budget-alert-0123456789';
  const { token } = await mintToken(app, org, await createCredential(app, org, 'priced', key));
  const spend = async (): Promise<void> => {
    const r = await chat(app.url, token, {}, 'pm-1');
    t.is(r.status, 200);
    await r.text();
  };
  await spend();
  const armed = clock.pending;
  await spend();
  await eventually(() => hook.bodies.length === 2, 'the 50 and 80 % alerts, each answered 500');
  await eventually(() => clock.pending === armed + 2, 'a retry armed for each');
  await clock.tick(999);
  t.is(hook.bodies.length, 2, 'no retry before its back-off');
  await clock.tick(1);
  await eventually(() => hook.bodies.length === 4, 'both retried once, delivered');
  await spend();
  await eventually(() => hook.bodies.length === 5, 'the 100 % alert');
  const at = new Date(clock.now()).toISOString();
  await clock.tick(60_000);
  t.is(hook.bodies.length, 5, 'nothing announced twice, nothing retried once delivered');
  const alerts = hook.bodies.map((b) => JSON.parse(b) as Record<string, unknown>);
  t.deepEqual(alerts.map((a) => a.threshold_percent), [50, 80, 50, 80, 100]);
  t.deepEqual(alerts[4], { type: 'keyward.budget.threshold', level: 'org', id: org.id, org: org.id, threshold_percent: 100, spent_usd: '0.000138', cap_usd: '0.000101', at });
  for (const body of hook.bodies) {
    t.false(body.includes(key) || body.includes(token) || body.includes(org.token), 'no key or token in a payload');
  }
});

test('budget-alert: a team\'s cap counts the spend of the team\'s tokens only, each threshold announced once at the team level', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const hook = await startReceiver([]);
  t.teardown(() => hook.close());
  // 46 µ$ a request (above): a team cap of 92 µ$ is at 50 % after one request of a team token, 80 and 100 % after two.
  const app = await startApp(t, { env: {
    KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: fake.url,
    KEYWARD_PLUGINS_DIR: path.join(EXAMPLES, 'budget-alert'), KEYWARD_PLUGINS: 'budget-alert',
    KEYWARD_PLUGIN_CONFIG: configFile(t, { 'budget-alert': { webhook: hook.url, teams: { '*': 0.000092 } } }),
  } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'priced', 'sk-priced-budget-team-0123456789');
  const team = await api(app, 'POST', '/v1/teams', { token: org.token, body: { name: 'search', credentials: [credential], max_ttl: '1h' } });
  t.is(team.status, 201, team.text);
  const member = await mintToken(app, org, credential, '15m', { team_id: team.body.id });
  const outsider = await mintToken(app, org, credential);
  const spend = async (token: string): Promise<void> => {
    const r = await chat(app.url, token, {}, 'pm-1');
    t.is(r.status, 200);
    await r.text();
  };
  await spend(outsider.token);
  await spend(outsider.token);
  await spend(member.token);
  await eventually(() => hook.bodies.length === 1, 'the 50 % alert of the team');
  await spend(member.token);
  await eventually(() => hook.bodies.length === 3, 'its 80 and 100 % alerts');
  const alerts = hook.bodies.map((b) => JSON.parse(b) as Record<string, unknown>);
  t.deepEqual(alerts.map((a) => [a.level, a.id, a.org, a.threshold_percent]), [['team', team.body.id, org.id, 50], ['team', team.body.id, org.id, 80], ['team', team.body.id, org.id, 100]]);
  t.deepEqual(alerts.map((a) => a.spent_usd), ['0.000046', '0.000092', '0.000092']);
});
