import test from 'ava';
import net from 'node:net';
import { api, createOrg, startApp, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { request } from '../support/request.js';

/** Sends raw bytes (what request() cannot write) and returns everything the server answers before closing (or 2 s). */
function rawRequest(app: TestApp, bytes: string | Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(app.port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, 2000);
    socket.on('data', (d) => (out += d.toString('latin1')));
    socket.on('error', (err) => {
      clearTimeout(timer);
      if (out) resolve(out);
      else reject(err);
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.write(bytes);
  });
}

function parseRaw(text: string): { status: number; headers: Record<string, string>; body: any } {
  const [head, ...rest] = text.split('\r\n\r\n');
  const lines = head!.split('\r\n');
  const status = Number(lines[0]!.split(' ')[1]);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const bodyText = rest.join('\r\n\r\n');
  let body: any;
  try {
    body = JSON.parse(bodyText);
  } catch {
    body = bodyText;
  }
  return { status, headers, body };
}

test('admin responses carry a fresh x-request-id, errors included', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const ids = new Set<string>();
  const responses = [
    await api(app, 'GET', '/v1/credentials', { token: org.token }),
    await api(app, 'GET', '/v1/credentials'),
    await api(app, 'GET', '/v1/credentials/cred_AAAAAAAAAAAAAAAAAAAAAAAA', { token: org.token }),
    await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: '{', headers: { 'content-type': 'application/json' } }),
    await api(app, 'GET', '/v1/nothing-here'),
    await api(app, 'GET', '/v1/usage', { token: org.token }),
    await api(app, 'POST', '/v1/orgs', { body: { name: 'x' } }),
  ];
  for (const r of responses) {
    const id = r.headers.get('x-request-id');
    t.truthy(id, `${r.status} ${r.text}`);
    t.regex(id!, /^[A-Za-z0-9_-]{8,}$/);
    ids.add(id!);
  }
  t.is(ids.size, responses.length, 'each response has its own id');
});

test('/healthz and /readyz → 200 without a token', async (t) => {
  const app = await startApp(t);
  const h = await api(app, 'GET', '/healthz');
  t.is(h.status, 200);
  const r = await api(app, 'GET', '/readyz');
  t.is(r.status, 200);
  t.regex(r.headers.get('content-type') ?? '', /application\/json/);
});

test('/readyz → 503 when the store stops answering; /healthz stays 200', async (t) => {
  const timers = new ManualClock();
  const app = await startApp(t, { timers });
  t.is((await api(app, 'GET', '/readyz')).status, 200);
  const { Symbols } = await import('../../src/symbols.js');
  const store = app.server.container.resolve<{ close(): Promise<void> }>(Symbols.Store);
  await store.close();
  // Readiness is answered from a result at most 2 s old (contract, Hardening): the next check sees the closed store.
  t.is((await api(app, 'GET', '/readyz')).status, 200, 'the result of a moment ago');
  await timers.tick(2000);
  t.is((await api(app, 'GET', '/readyz')).status, 503);
  t.is((await api(app, 'GET', '/healthz')).status, 200);
});

test('unknown routes and methods → 404 not_found JSON', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const cases: Array<[string, string]> = [
    ['GET', '/'], ['GET', '/v1'], ['GET', '/v1/'], ['GET', '/v2/credentials'], ['GET', '/v1/credential'], ['GET', '/V1/credentials'],
    ['PUT', '/v1/credentials'], ['PATCH', '/v1/credentials'], ['POST', '/v1/usage'],
    ['GET', '/v1/credentials/cred_A/extra'], ['GET', '/v1//credentials'], ['GET', '/v1/credentials/..%2Forgs'],
    ['DELETE', '/v1/orgs'], ['GET', '/healthz/x'], ['POST', '/healthz'],
  ];
  for (const [method, path] of cases) {
    const r = await api(app, method, path, { token: org.token });
    t.is(r.status, 404, `${method} ${path}`);
    t.is(r.body?.error?.code, 'not_found', `${method} ${path}`);
    t.is(r.body.error.type, 'not_found');
    t.is(typeof r.body.error.message, 'string');
    t.regex(r.headers.get('content-type') ?? '', /^application\/json/);
  }
});

test('an admin body over KEYWARD_MAX_ADMIN_BODY → 413 payload_too_large, declared or chunked', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_MAX_ADMIN_BODY: '1kb' } });
  const org = await createOrg(app);
  const big = JSON.stringify({ provider: 'openai', api_key: 'sk-' + 'a'.repeat(1100) });
  const declared = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: big, headers: { 'content-type': 'application/json' } });
  t.is(declared.status, 413);
  t.is(declared.body.error.code, 'payload_too_large');
  t.is(declared.body.error.type, 'invalid_request');
  t.truthy(declared.headers.get('x-request-id'));

  // Chunked: no content-length, the limit is counted as the body streams.
  const piece = '{"pad":"' + 'x'.repeat(200) + '",';
  const chunked = await request(`${app.url}/v1/credentials`, { headers: { authorization: `Bearer ${org.token}` }, body: piece.repeat(8) + '"x":1}', chunked: piece.length });
  t.is(chunked.status, 413);
  t.is(chunked.body.error.code, 'payload_too_large');

  // Exactly at the limit is accepted (and then judged on its content).
  const fits = JSON.stringify({ provider: 'openai', api_key: 'sk-' }).length;
  const atLimit = JSON.stringify({ provider: 'openai', api_key: 'sk-' + 'b'.repeat(1024 - fits) });
  t.is(Buffer.byteLength(atLimit), 1024);
  const ok = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: atLimit, headers: { 'content-type': 'application/json' } });
  t.is(ok.status, 201);
  // Nothing oversized was stored.
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 1);
});

test('deeply nested JSON → 400 invalid_request, before parsing', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const json = { 'content-type': 'application/json' };
  for (const rawBody of [
    '['.repeat(5000) + ']'.repeat(5000),
    '{"a":'.repeat(1000) + '1' + '}'.repeat(1000),
    '{"provider":"openai","api_key":"sk-aaaaaaaaaa","x":' + '['.repeat(60_000),
  ]) {
    const r = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody, headers: json });
    t.is(r.status, 400);
    t.is(r.body.error.code, 'invalid_request');
  }
  // Brackets inside strings are not nesting.
  const inString = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: JSON.stringify({ provider: 'openai', api_key: 'sk-' + '['.repeat(500) }), headers: json });
  t.is(inString.status, 201);
  t.is((await api(app, 'GET', '/healthz')).status, 200, 'the server is still up');
});

test('malformed HTTP → 400 JSON with code bad_request, from a raw socket', async (t) => {
  const app = await startApp(t);
  const cases = [
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Bad: a\x7fb\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\n X-Folded: continuation\r\n\r\n',
    'POST /v1/credentials HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'POST /v1/credentials HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
    'POST /v1/credentials HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n',
    'GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n',
    'G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    // Bare LF or CR line endings: request-smuggling forms.
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\nX-B: 2\r\n\r\n',
    'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: 1\rX-B: 2\r\n\r\n',
    'GET /healthz HTTP/1.1\nHost: x\n\n',
  ];
  for (const bytes of cases) {
    const raw = await rawRequest(app, bytes);
    const r = parseRaw(raw);
    t.is(r.status, 400, JSON.stringify(bytes));
    t.regex(r.headers['content-type'] ?? '', /^application\/json/, JSON.stringify(bytes));
    t.is(r.body?.error?.code, 'bad_request', JSON.stringify(bytes));
    t.is(r.body.error.type, 'invalid_request');
  }
  // The server still answers well-formed requests afterwards.
  const ok = parseRaw(await rawRequest(app, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
  t.is(ok.status, 200);
});
