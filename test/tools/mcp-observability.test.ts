/**
 * Spans name the tool: an MCP tools/call's span carries `mcp.method.name` and `gen_ai.tool.name` (a batch's
 * calls, comma-separated), a refused call's span its error code, and no export holds the ptok or the stored key.
 */
import test from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { startOtlpReceiver } from '../support/otlp-receiver.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';

test('an MCP request\'s span names its tool calls', async (t) => {
  const otlp = await startOtlpReceiver();
  t.teardown(() => otlp.close());
  const upstream = await startRecordingUpstream(() => ({ type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url, OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url } });
  const org = await createOrg(app);
  const key = canaryKey('mcp');
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', key), '15m', { tools: ['get_issue', 'list_*'] });
  const post = (body: unknown) => request(`${app.url}/v1/proxy/mcp/`, { headers: { authorization: `Bearer ${tok.token}` }, body: JSON.stringify(body) });
  const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { q: 'x' } } });
  const one = await post(call(1, 'get_issue'));
  const batch = await post([call(2, 'get_issue'), call(3, 'list_pulls')]);
  const refused = await post(call(4, 'delete_repo'));
  t.deepEqual([one.status, batch.status, refused.status], [200, 200, 200]);
  await app.stop();
  const span = (r: typeof one) => otlp.spans().find((s) => s.attributes['keyward.request_id'] === r.headers['x-keyward-request-id'])!;
  t.like(span(one).attributes, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'get_issue', 'keyward.provider': 'github-mcp' });
  t.is(span(batch).attributes['gen_ai.tool.name'], 'get_issue,list_pulls');
  t.is(span(refused).attributes['keyward.error_code'], 'tool_not_allowed');
  t.false('gen_ai.tool.name' in span(refused).attributes, 'a refused call was not made');
  const exported = otlp.exports.map((e) => e.body).join('\n');
  t.false(exported.includes(tok.token) || exported.includes(key));
});
