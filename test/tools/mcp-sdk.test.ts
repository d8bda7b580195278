/**
 * The official MCP client (@modelcontextprotocol/sdk, Streamable HTTP transport) through Keyward with a proxy
 * token as its bearer token, against a fake MCP server built with the same SDK that requires the stored key and
 * records every request and call: initialize, tools/list filtered to the token's `tools`, an allowed call's
 * result, a JSON-RPC error for a disallowed one (which never reaches the server), the stored key masked where
 * the server echoes it, the ptok never upstream, GET's event stream and DELETE with Mcp-Session-Id, each call
 * counted once and audited by name. Run with the server answering in event streams and in JSON.
 */
import test, { type ExecutionContext } from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { startFakeMcp } from '../support/mcp-fake.js';
import { eventually, quiet } from '../support/wait.js';

const textOf = (result: unknown): string => ((result as { content: Array<{ text: string }> }).content[0]!.text);

async function sdkThroughKeyward(t: ExecutionContext, json: boolean): Promise<void> {
  const key = canaryKey('ghmcp');
  const fake = await startFakeMcp(key, { json });
  t.teardown(() => fake.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: fake.url, KEYWARD_AUDIT_TOOL_CALLS: '1' } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'github-mcp', key);
  const tok = await mintToken(app, org, credential, '15m', { tools: ['get_issue', 'list_*', 'echo_key'] });

  const transport = new StreamableHTTPClientTransport(new URL(`${app.url}/v1/proxy/mcp/`), { requestInit: { headers: { Authorization: `Bearer ${tok.token}` } } });
  const client = new Client({ name: 'keyward-test', version: '1.0.0' });
  await client.connect(transport);
  const session = transport.sessionId;
  t.truthy(session, 'the server\'s Mcp-Session-Id came back through the proxy');

  const listed = await client.listTools();
  t.deepEqual(listed.tools.map((x) => x.name), ['get_issue', 'list_issues', 'list_pulls', 'echo_key'], 'tools/list is filtered to the scope');
  t.is(listed.tools[0]!.description, 'the get_issue tool', 'the kept entries are whole');

  const result = await client.callTool({ name: 'get_issue', arguments: { n: 7 } });
  t.is(textOf(result), 'ran get_issue with {"n":7}');

  const refused = await t.throwsAsync(client.callTool({ name: 'delete_repo', arguments: {} }), { instanceOf: McpError });
  t.is(refused.code, -32602);
  t.regex(refused.message, /not allowed/i);

  const echoed = textOf(await client.callTool({ name: 'echo_key', arguments: {} }));
  t.false(echoed.includes(key), 'the stored key is masked in the answer');
  t.true(echoed.includes('*'.repeat(key.length)));

  await transport.terminateSession();
  await client.close();
  await quiet(app);

  t.deepEqual(fake.calls, ['get_issue', 'echo_key'], 'the disallowed call never reached the server');
  t.false(fake.requests.some((r) => r.body.includes('delete_repo')), 'no byte of the refused message went upstream');
  const methods = new Set(fake.requests.map((r) => r.method));
  t.deepEqual([...methods].sort(), ['DELETE', 'GET', 'POST'], 'POST, GET (the server\'s event stream) and DELETE reached the server');
  t.true(fake.requests.slice(1).every((r) => r.headers['mcp-session-id'] === session), 'every request after initialize carried the session id');
  t.true(fake.requests.some((r) => r.method === 'DELETE'), 'DELETE ended the session');
  for (const r of fake.requests) {
    t.is(r.headers.authorization, `Bearer ${key}`, 'upstream saw the stored key, once');
    t.false(JSON.stringify(r).includes(tok.token), 'the ptok never reached the server');
  }

  // Two forwarded tools/call: two requests; initialize, list, notifications, GET and DELETE count none.
  await eventually(async () => (await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).body?.usage?.requests === 2, 'two tool calls counted');
  await eventually(async () => (await api(app, 'GET', '/v1/usage', { token: org.token })).body?.proxy_requests?.used === 2, 'the monthly quota counted the two calls');
  await eventually(async () => {
    const audit = await api(app, 'GET', '/v1/audit?limit=100', { token: org.token });
    const targets = (audit.body?.data ?? []).filter((r: { action: string }) => r.action === 'mcp.tool_call').map((r: { target: string }) => r.target).sort();
    return JSON.stringify(targets) === JSON.stringify(['github-mcp:echo_key', 'github-mcp:get_issue']);
  }, 'each forwarded tool call audited by name');
  const audit = await api(app, 'GET', '/v1/audit?limit=100', { token: org.token });
  t.false(audit.text.includes('"n":7') || audit.text.includes(key), 'no argument or result in the audit trail');
  const metrics = await fetch(`${app.url}/metrics`).then((r) => r.text());
  t.regex(metrics, /keyward_mcp_tool_calls_total\{provider="github-mcp",tool="get_issue"\} 1/);
}

test('the MCP SDK client with a ptok: event-stream answers', (t) => sdkThroughKeyward(t, false));
test('the MCP SDK client with a ptok: JSON answers', (t) => sdkThroughKeyward(t, true));
