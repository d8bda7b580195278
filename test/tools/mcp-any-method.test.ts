/**
 * An MCP server's `tools` scope holds whatever the method carries a body: a GET or DELETE whose body is a
 * JSON-RPC `tools/call` of a disallowed tool (alone or hidden in a batch) is answered with the JSON-RPC error
 * and never reaches the server, over HTTP/1.1 and h2c, with and without content-length; one whose body is not
 * JSON is refused 400; an allowed call in a GET body is forwarded byte for byte and counted; a GET or DELETE
 * without a body (the event stream, ending a session) passes as before.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';
import { send } from '../support/transport.js';
import { eventually } from '../support/wait.js';

const call = (id: number, name: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } });

test('a disallowed tools/call in a GET or DELETE body: the JSON-RPC error, nothing forwarded (HTTP/1.1 and h2c); an allowed one is forwarded and counted', async (t) => {
  const upstream = await startRecordingUpstream((r) => (r.method === 'GET'
    ? { type: 'text/event-stream', body: 'data: {"jsonrpc":"2.0","method":"notifications/message"}\n\n' }
    : { type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', canaryKey('mcp')), '15m', { tools: ['get_issue'] });
  const headers = { authorization: `Bearer ${tok.token}`, accept: 'application/json, text/event-stream', 'mcp-session-id': 'sess-1' };
  const refusedBodies = [JSON.stringify(call(7, 'delete_repo')), JSON.stringify([call(1, 'get_issue'), call(2, 'delete_repo')])];

  for (const transport of ['h1', 'h2c'] as const) {
    for (const method of ['GET', 'DELETE']) {
      for (const length of [true, false]) {
        const label = `${transport} ${method} ${length ? 'content-length' : 'no length'}`;
        for (const body of refusedBodies) {
          const r = await send(app.url, { transport, method, length, path: '/v1/proxy/mcp/', headers, body });
          t.is(r.status, 200, `${label}: ${r.text}`);
          const errors = Array.isArray(r.body) ? r.body : [r.body];
          t.true(errors.every((e: { error?: { code?: number } }) => e.error?.code === -32602), `${label}: a JSON-RPC "tool not allowed" error for ${body}`);
        }
        const garbage = await send(app.url, { transport, method, length, path: '/v1/proxy/mcp/', headers, body: 'tools/call delete_repo' });
        t.is(garbage.status, 400, `${label}: a body the scan cannot read is refused`);
        t.is(garbage.body.error.code, 'invalid_request');
      }
    }
  }
  t.is(upstream.started, 0, 'no refused request reached the server, not even its head');

  // Without a body, GET (the event stream) and DELETE (ending the session) pass as before, counting nothing.
  for (const transport of ['h1', 'h2c'] as const) {
    for (const method of ['GET', 'DELETE']) t.is((await send(app.url, { transport, method, path: '/v1/proxy/mcp/', headers })).status, 200, `${transport} ${method}`);
  }
  t.is(upstream.requests.length, 4);
  // An allowed call in a GET body is read like a POST's: forwarded unchanged and counted as one request.
  const allowed = JSON.stringify(call(3, 'get_issue'));
  t.is((await send(app.url, { transport: 'h2c', method: 'GET', path: '/v1/proxy/mcp/', headers, body: allowed })).status, 200);
  t.is(upstream.requests.at(-1)!.body, allowed);
  t.is(upstream.requests.at(-1)!.method, 'GET');
  await eventually(async () => (await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).body?.usage?.requests === 1, 'the allowed call counted once');
});
