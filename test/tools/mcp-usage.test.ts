/**
 * MCP tool calls in the usage breakdown: each forwarded tools/call counts under `tool:<provider>:<tool>` (a batch's
 * calls under each of their tools), never as the model `unpriced`; a message that calls nothing (tools/list) counts
 * nothing; a tool name outside the tools grammar is `tool:<provider>:(other)`, as are an organisation's names past
 * its first 32 at a provider (the keys are bounded: a caller names its tools). The token's and credential's totals
 * are the calls, as before.
 */
import test from 'ava';
import { ToolCallKeys } from '../../src/gateway/wire/mcp/tool-calls.js';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { quiet } from '../support/wait.js';

test('tools/call is counted as tool calls by tool, not as an unpriced model', async (t) => {
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'github-mcp', canaryKey('mcp'));
  const tok = await mintToken(app, org, cred, '15m');
  const post = (body: unknown) => request(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${tok.token}` }, body: JSON.stringify(body) });
  const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { q: 'x' } } });
  for (const body of [call(1, 'get_issue'), [call(2, 'get_issue'), call(3, 'list_pulls')], { jsonrpc: '2.0', id: 4, method: 'tools/list' }, call(5, 'not a tool name!')]) {
    t.is((await post(body)).status, 200);
  }
  await quiet(app);
  const breakdown = async (by: string) => (await api(app, 'GET', `/v1/usage/breakdown?by=${by}`, { token: org.token })).body.data as Array<{ key: string; requests: number }>;
  const models = await breakdown('model');
  t.deepEqual(models.map((r) => [r.key, r.requests]), [['tool:github-mcp:get_issue', 2], ['tool:github-mcp:(other)', 1], ['tool:github-mcp:list_pulls', 1]]);
  t.false(models.some((r) => r.key === 'unpriced'), 'no tool call is an unpriced model');
  t.deepEqual((await breakdown('token')).map((r) => [r.key, r.requests]), [[tok.id, 4]], 'the token\'s calls, all of them');
  t.deepEqual((await breakdown('credential')).map((r) => [r.key, r.requests]), [[cred, 4]]);
});

test('the keys are bounded per organisation and provider: 32 names each, then (other); another organisation has its own', (t) => {
  const keys = new ToolCallKeys();
  const names = Array.from({ length: 40 }, (_, i) => `tool_${i}`);
  const a = names.map((n) => keys.key('org_a', 'github-mcp', n));
  t.deepEqual(a.slice(0, 32), names.slice(0, 32).map((n) => `tool:github-mcp:${n}`));
  t.deepEqual(new Set(a.slice(32)), new Set(['tool:github-mcp:(other)']));
  t.is(keys.key('org_a', 'github-mcp', 'tool_3'), 'tool:github-mcp:tool_3', 'a name already counted keeps its key');
  t.is(keys.key('org_b', 'github-mcp', 'tool_39'), 'tool:github-mcp:tool_39');
  t.is(keys.key('org_a', 'huggingface-mcp', 'tool_39'), 'tool:huggingface-mcp:tool_39');
  for (const bad of ['', 'a b', 'x'.repeat(129), 'list_*', 'naïve']) t.is(keys.key('org_c', 'github-mcp', bad), 'tool:github-mcp:(other)', JSON.stringify(bad));
  t.deepEqual([...keys.count('org_d', 'github-mcp', ['a', 'b', 'a', 'c d'])], [['tool:github-mcp:a', 2], ['tool:github-mcp:b', 1], ['tool:github-mcp:(other)', 1]]);
});
