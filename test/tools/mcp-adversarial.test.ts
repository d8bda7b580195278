/**
 * An MCP server's `tools` scope under attack, over raw HTTP: a disallowed `tools/call` hidden in a JSON-RPC batch,
 * a duplicated or case-variant `name` (or `method`) key, method-name case variants, escapes, a call with no
 * readable name, an oversized body, a body trickled past KEYWARD_BODY_TIMEOUT_MS, and an event-stream answer that
 * echoes the stored key. Each is answered per the contract (a JSON-RPC error with HTTP 200, a 400, 413, 408 or a
 * closed connection, the key masked), nothing refused reaches the upstream, and the gateway keeps serving.
 */
import test, { type ExecutionContext } from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { request } from '../support/request.js';
import { startRecordingUpstream } from '../support/mcp-fake.js';
import { trickle } from '../support/trickle.js';

const ALLOWED = ['get_issue', 'list_*'];
const call = (id: number | null, name: string, method = 'tools/call') => ({ jsonrpc: '2.0', ...(id === null ? {} : { id }), method, params: { name, arguments: {} } });

async function setup(t: ExecutionContext, env: Record<string, string> = {}) {
  const key = canaryKey('mcp');
  const upstream = await startRecordingUpstream((r) => (r.method === 'GET'
    ? { type: 'text/event-stream', body: `id: 5\ndata: {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"delete_repo"},{"name":"get_issue"}]}}\n\ndata: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n` }
    : r.body.includes('echo')
    ? { type: 'text/event-stream', body: `event: message\ndata: {"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"key ${key} here"}]}}\n\n` }
    : { type: 'application/json', body: '{"jsonrpc":"2.0","id":1,"result":{}}' }));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_GITHUB_MCP: upstream.url, ...env } });
  const org = await createOrg(app);
  const tok = await mintToken(app, org, await createCredential(app, org, 'github-mcp', key), '15m', { tools: ALLOWED });
  const post = (body: string, extra: { chunked?: number } = {}) => request(`${app.url}/v1/proxy/mcp/`, {
    headers: { authorization: `Bearer ${tok.token}`, accept: 'application/json, text/event-stream' }, body, ...extra,
  });
  return { key, upstream, app, tok, post };
}

test('a disallowed tools/call hidden in a batch: the whole batch is answered with JSON-RPC errors, nothing forwarded', async (t) => {
  const s = await setup(t);
  const batch = [{ jsonrpc: '2.0', id: 1, method: 'tools/list' }, call(2, 'get_issue'), call(3, 'delete_repo'), call(null, 'list_issues')];
  const r = await s.post(JSON.stringify(batch));
  t.is(r.status, 200);
  t.true(Array.isArray(r.body));
  t.deepEqual(r.body.map((e: { id: unknown }) => e.id), [1, 2, 3], 'one error per request of the batch; the notification gets none');
  t.true(r.body.every((e: { jsonrpc: string; error: { code: number } }) => e.jsonrpc === '2.0' && e.error.code === -32602));
  t.regex(r.body[2].error.message, /delete_repo.*outside/);
  // A refused notification alone is answered with id null.
  const lone = await s.post(JSON.stringify(call(null, 'delete_repo')));
  t.deepEqual([lone.status, lone.body.id, lone.body.error.code], [200, null, -32602]);
  t.is(s.upstream.started, 0, 'the upstream never saw a request');
  // An all-allowed batch goes through byte for byte, counted per call.
  const fine = JSON.stringify([call(4, 'get_issue'), call(5, 'list_pulls')]);
  t.is((await s.post(fine)).status, 200);
  t.is(s.upstream.requests.at(-1)!.body, fine);
});

test('a duplicated or case-variant key (name, method, params, id) is refused with 400, never guessed', async (t) => {
  const s = await setup(t);
  const bodies = [
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue","Name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_issue"},"params":{"name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","PARAMS":{"name":"delete_repo"},"params":{"name":"get_issue"}}',
    '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"ID":3,"method":"tools/call","params":{"name":"get_issue"}}]',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"\\u004eame":"delete_repo"}}',
  ];
  for (const body of bodies) {
    const r = await s.post(body);
    t.is(r.status, 400, body);
    t.is(r.body.error.code, 'invalid_request', body);
  }
  t.is(s.upstream.started, 0);
});

test('method names are case-sensitive: a variant of tools/call or tools/list is refused (method not found), escapes are decoded first', async (t) => {
  const s = await setup(t);
  for (const method of ['Tools/Call', 'TOOLS/CALL', 'tools/Call', 'Tools/List', 'tools/liſt', 'toolſ/call']) {
    const r = await s.post(JSON.stringify(call(1, 'get_issue', method)));
    t.deepEqual([r.status, r.body.error?.code], [200, -32601], method);
  }
  for (const body of [
    '{"jsonrpc":"2.0","id":1,"method":"tools\\/call","params":{"name":"delete_repo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"\\u0074ools/call","params":{"name":"delete_\\u0072epo"}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"get_issue"}}}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["get_issue"]}',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"x":"get_issue"}}}',
  ]) {
    const r = await s.post(body);
    t.deepEqual([r.status, r.body.error?.code], [200, -32602], body);
  }
  t.is(s.upstream.started, 0);
  // Not JSON, or a batch of something else: 400.
  for (const body of ['{"jsonrpc":"2.0","method":"tools/call"', '[1,2]', '"tools/call"']) t.is((await s.post(body)).status, 400, body);
  t.is(s.upstream.started, 0);
});

test('an oversized body → 413, declared or chunked; nothing forwarded', async (t) => {
  const s = await setup(t, { KEYWARD_MAX_BODY: '16kb' });
  const big = JSON.stringify({ ...call(1, 'get_issue'), params: { name: 'get_issue', arguments: { pad: 'x'.repeat(40_000) } } });
  t.is((await s.post(big)).status, 413);
  const chunked = await s.post(big, { chunked: 4096 });
  t.is(chunked.status, 413);
  t.is(chunked.body.error.code, 'payload_too_large');
  t.is(s.upstream.started, 0);
});

test('a body trickled past KEYWARD_BODY_TIMEOUT_MS is cut off and never reaches the upstream', async (t) => {
  const s = await setup(t, { KEYWARD_HEADERS_TIMEOUT_MS: '800', KEYWARD_BODY_TIMEOUT_MS: '800' });
  const body = JSON.stringify(call(1, 'get_issue'));
  const head = `POST /v1/proxy/mcp/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${s.tok.token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
  const pieces = body.match(/[\s\S]{1,4}/g)!; // ~20 pieces 150 ms apart: 3 s if allowed to finish
  const result = await trickle(s.app.port, [head, ...pieces], 150);
  t.true(result.sent <= pieces.length, `cut off mid-body (${result.sent}/${pieces.length + 1} parts sent)`);
  if (result.raw) t.regex(result.raw, /^HTTP\/1\.1 408 [\s\S]*"code":"request_timeout"/);
  t.is(s.upstream.started, 0, 'nothing was forwarded');
  t.is((await s.post(JSON.stringify(call(2, 'get_issue')))).status, 200, 'the gateway keeps serving');
});

test('an event-stream answer that echoes the stored key reaches the caller masked', async (t) => {
  const s = await setup(t);
  const r = await s.post(JSON.stringify(call(9, 'list_echo')));
  t.is(r.status, 200);
  t.regex(String(r.headers['content-type']), /text\/event-stream/);
  t.false(r.text.includes(s.key));
  t.true(r.text.includes(`key ${'*'.repeat(s.key.length)} here`));
});

test('a tools/list answer resumed on the server\'s event stream (GET, Last-Event-ID) is filtered too; other events pass', async (t) => {
  const s = await setup(t);
  const r = await request(`${s.app.url}/v1/proxy/mcp/`, { method: 'GET', headers: { authorization: `Bearer ${s.tok.token}`, accept: 'text/event-stream', 'last-event-id': '4' } });
  t.is(r.status, 200);
  t.false(r.text.includes('delete_repo'));
  t.true(r.text.includes('id: 5\ndata: {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"get_issue"}]}}\n\n'));
  t.true(r.text.includes('data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n'));
  t.is(s.upstream.requests[0]!.headers['last-event-id'], '4');
});
