/**
 * Every proxy error of the contract, through real HTTP to a real gateway and
 * the fake provider: status, `{"error": {type, code, message}}`, and the
 * `x-keyward-request-id` header; and for every refusal, proof that the fake
 * upstream received nothing. Paths the gateway must refuse are sent with raw
 * HTTP (http.request with a pre-built path, or a bare socket), since fetch
 * normalises dot segments before they leave the client.
 */
import test, { type ExecutionContext } from 'ava';
import http from 'node:http';
import net from 'node:net';
import { BackendUnavailable } from '../../src/errors.js';
import { Symbols } from '../../src/symbols.js';
import type { Store } from '../../src/store/ports.js';
import { newToken } from '../../src/ids.js';
import { api, createCredential, mintToken, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { eventually, quiet, sleep } from '../support/wait.js';

/** Keep the (future) per-IP auth-failure limiter out of the way: these tests fail auth on purpose. */
const QUIET = { KEYWARD_AUTH_FAILURES: '1000000' };
const CHAT = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** One request with the path sent byte for byte as given (not request(): a URL would normalise the path first). */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const framed = body === undefined ? headers : { 'content-length': String(Buffer.byteLength(body)), ...headers };
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: framed, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any;
        try {
          parsed = JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request written straight to a socket (bytes request() cannot send); resolves with the parsed response once the server closes. */
function rawSocket(port: number, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const split = raw.indexOf('\r\n\r\n');
      const head = raw.slice(0, split === -1 ? raw.length : split).split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0);
      const headers: http.IncomingHttpHeaders = {};
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const text = split === -1 ? '' : raw.slice(split + 4);
      let body: any;
      try {
        body = JSON.parse(text);
      } catch { /* not JSON */ }
      resolve({ status, headers, text, body });
    });
    socket.end(request);
  });
}

/** The contract's error shape, from the gateway itself. */
function isGatewayError(t: ExecutionContext, r: RawResponse | { status: number; headers: Headers; body: any }, status: number, type: string, code: string, label = `${status} ${code}`, requestIdHeader = 'x-keyward-request-id'): void {
  t.is(r.status, status, label);
  const header = (name: string) => (r.headers instanceof Headers ? r.headers.get(name) ?? undefined : (r.headers[name] as string | undefined));
  t.regex(header('content-type') ?? '', /^application\/json/, label);
  t.regex(header(requestIdHeader) ?? '', /^req_[0-9a-f]{32}$/, `${label}: ${requestIdHeader}`);
  t.deepEqual(Object.keys(r.body ?? {}), ['error'], label);
  t.is(r.body?.error?.type, type, label);
  t.is(r.body?.error?.code, code, label);
  t.is(typeof r.body?.error?.message, 'string', label);
  t.true((r.body?.error?.message ?? '').length > 0, label);
  for (const k of Object.keys(r.body?.error ?? {})) t.true(['type', 'code', 'message', 'param'].includes(k), `${label}: unexpected field ${k}`);
}

async function usedRequests(app: TestApp, orgToken: string): Promise<number> {
  const r = await api(app, 'GET', '/v1/usage', { token: orgToken });
  return r.body.proxy_requests.used;
}

const chatHeaders = (token?: string, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  ...(token !== undefined ? { 'x-proxy-token': token } : {}),
  ...extra,
});

test('401 invalid_token: missing, malformed, unknown, wrong prefix or an org token; nothing reaches the provider', async (t) => {
  const f = await proxyFixture(t, { env: QUIET });
  const { port } = f.app;
  const good = f.tokens.openai.token;
  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === 'A' ? 'B' : 'A') + s.slice(i + 1);
  const cases: Array<[string, Record<string, string>]> = [
    ['no token at all', chatHeaders()],
    ['empty X-Proxy-Token', chatHeaders('')],
    ['prefix only', chatHeaders('ptok_')],
    ['one character of the body flipped', chatHeaders(flip(good, 10))],
    ['one character of the checksum flipped', chatHeaders(flip(good, good.length - 1))],
    ['truncated', chatHeaders(good.slice(0, -1))],
    ['one character too many', chatHeaders(good + 'A')],
    ['upper-case prefix', chatHeaders('PTOK_' + good.slice(5))],
    ['mixed-case prefix', chatHeaders('Ptok_' + good.slice(5))],
    ['leading space kept by a quoted value', chatHeaders(`"${good}"`)],
    ['10 KB value', chatHeaders('ptok_' + 'A'.repeat(10 * 1024))],
    ['unknown but well-formed', chatHeaders(newToken('ptok'))],
    ['org token in X-Proxy-Token', chatHeaders(f.org.token)],
    ['org token as Authorization: Bearer', chatHeaders(undefined, { authorization: `Bearer ${f.org.token}` })],
    ['org token as x-api-key', chatHeaders(undefined, { 'x-api-key': f.org.token })],
    ['unknown token as Authorization: Bearer', chatHeaders(undefined, { authorization: `Bearer ${newToken('ptok')}` })],
    ['a provider key as Authorization', chatHeaders(undefined, { authorization: `Bearer ${f.keys.openai}` })],
    ['X-Proxy-Token wins over a good Authorization', chatHeaders(newToken('ptok'), { authorization: `Bearer ${good}` })],
  ];
  for (const [label, headers] of cases) {
    const r = await send(port, 'POST', '/v1/proxy/v1/chat/completions', headers, CHAT);
    isGatewayError(t, r, 401, 'authentication', 'invalid_token', label);
    t.false(r.text.includes(good), `${label}: the token is never echoed`);
  }
  // The same good token sent twice (two header lines) is not a token.
  const doubled = await rawSocket(port, [
    'POST /v1/proxy/v1/chat/completions HTTP/1.1', 'Host: x', `X-Proxy-Token: ${good}`, `X-Proxy-Token: ${good}`,
    'Content-Type: application/json', `Content-Length: ${CHAT.length}`, 'Connection: close', '', CHAT,
  ].join('\r\n'));
  isGatewayError(t, doubled, 401, 'authentication', 'invalid_token', 'doubled X-Proxy-Token');
  // A token on a GET with no body is refused the same way.
  isGatewayError(t, await send(port, 'GET', '/v1/proxy/v1/models', { 'x-proxy-token': newToken('ptok') }), 401, 'authentication', 'invalid_token', 'GET');

  t.is(f.fake.received.length, 0, 'the provider saw none of them');
  t.is(await usedRequests(f.app, f.org.token), 0, 'refusals never count');
  // The control: the same gateway forwards the good token.
  const ok = await send(port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(good), CHAT);
  t.is(ok.status, 200);
  t.is(f.fake.received.length, 1);
});

test('401 invalid_token once a token expires (valid while now < expires_at)', async (t) => {
  const clock = new ManualClock();
  const f = await proxyFixture(t, { clock, env: QUIET });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '1m');
  const call = () => send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(tok.token), CHAT);
  t.is((await call()).status, 200);
  clock.advance(59_999);
  t.is((await call()).status, 200, 'one millisecond before expiry it still works (and is cached)');
  clock.advance(1);
  isGatewayError(t, await call(), 401, 'authentication', 'invalid_token', 'at expires_at');
  clock.advance(3_600_000);
  isGatewayError(t, await call(), 401, 'authentication', 'invalid_token', 'an hour later');
  t.is(f.fake.received.length, 2);
  const listed = await api(f.app, 'GET', `/v1/tokens/${tok.id}`, { token: f.org.token });
  t.is(listed.body.status, 'expired');
});

test('401 invalid_token at once after the token is revoked or its credential deleted, even when cached', async (t) => {
  const f = await proxyFixture(t, { env: QUIET });
  const call = (token: string) => send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(token), CHAT);
  const a = await mintToken(f.app, f.org, f.credentials.openai);
  const b = await mintToken(f.app, f.org, f.credentials.openai);
  t.is((await call(a.token)).status, 200);
  t.is((await call(b.token)).status, 200);
  t.is((await api(f.app, 'DELETE', `/v1/tokens/${a.id}`, { token: f.org.token })).status, 200);
  isGatewayError(t, await call(a.token), 401, 'authentication', 'invalid_token', 'revoked');
  t.is((await call(b.token)).status, 200, 'the other token of the credential still works');

  // Anthropic's token, through its SDK header: works, then its credential goes.
  const viaApiKey = () => send(f.app.port, 'POST', '/v1/proxy/v1/messages', { 'content-type': 'application/json', 'x-api-key': f.tokens.anthropic.token }, JSON.stringify({ model: 'claude', max_tokens: 5, messages: [] }));
  t.is((await viaApiKey()).status, 200);
  t.is((await api(f.app, 'DELETE', `/v1/credentials/${f.credentials.anthropic}`, { token: f.org.token })).status, 200);
  isGatewayError(t, await viaApiKey(), 401, 'authentication', 'invalid_token', 'credential deleted');
  t.is((await api(f.app, 'DELETE', `/v1/credentials/${f.credentials.openai}`, { token: f.org.token })).status, 200);
  isGatewayError(t, await call(b.token), 401, 'authentication', 'invalid_token', 'credential deleted (openai)');
  t.is(f.fake.received.length, 4, 'only the accepted requests reached the provider');
});

test('403 path_not_allowed: off the allow-list, a method not on it, or any form that tries to leave the path; nothing is sent', async (t) => {
  const f = await proxyFixture(t);
  const { port } = f.app;
  const openai = f.tokens.openai.token;
  const cases: Array<[string, string, string]> = [
    // [method, raw path after /v1/proxy/, label]
    ['POST', 'v1/files', 'not on the list'],
    ['POST', 'v1/organization/admin_api_keys', 'admin API'],
    ['DELETE', 'v1/chat/completions', 'method not on the list'],
    ['GET', 'v1/chat/completions', 'GET of a POST route'],
    ['PUT', 'v1/chat/completions', 'PUT'],
    ['PATCH', 'v1/chat/completions', 'PATCH'],
    ['OPTIONS', 'v1/chat/completions', 'OPTIONS'],
    ['POST', 'v1/../v1/chat/completions', 'dot-dot'],
    ['POST', 'v1/./chat/completions', 'dot'],
    ['POST', '%2e%2e/v1/chat/completions', 'encoded dot-dot'],
    ['POST', 'v1/%2E%2E/v1/chat/completions', 'encoded upper-case dot-dot'],
    ['POST', '%252e%252e/v1/chat/completions', 'double-encoded dot-dot'],
    ['POST', '..%2fv1/chat/completions', 'dot-dot with encoded slash'],
    ['POST', 'v1%2fchat/completions', 'encoded slash'],
    ['POST', 'v1%2Fchat%2Fcompletions', 'upper-case encoded slashes'],
    ['POST', 'v1/chat%252fcompletions', 'double-encoded slash'],
    ['POST', '/evil.test/x', '//host'],
    ['POST', '/evil.test/v1/chat/completions', '//host with a real path'],
    ['POST', 'v1//chat/completions', 'empty segment'],
    ['POST', 'v1/chat/completions/', 'trailing slash'],
    ['POST', 'v1/chat/completions;x', 'matrix parameter'],
    ['POST', 'v1\\chat\\completions', 'backslashes'],
    ['POST', 'v1/%5cchat/completions', 'encoded backslash'],
    ['POST', 'v1/chat/completions%00', 'NUL'],
    ['POST', 'v1/chat/completions%0d%0aX-Injected:%201', 'CRLF'],
    ['POST', 'http://evil.test/v1/chat/completions', 'absolute URL in the path'],
    ['POST', '', 'no provider path'],
  ];
  for (const [method, path, label] of cases) {
    const r = await send(port, method, `/v1/proxy/${path}`, chatHeaders(openai), CHAT);
    isGatewayError(t, r, 403, 'permission', 'path_not_allowed', `${label} (${method} ${path})`);
  }
  // Anthropic: GET of its POST-only messages route.
  isGatewayError(t, await send(port, 'GET', '/v1/proxy/v1/messages', { 'x-proxy-token': f.tokens.anthropic.token }), 403, 'permission', 'path_not_allowed', 'GET v1/messages');
  // An openai token on an anthropic path.
  isGatewayError(t, await send(port, 'POST', '/v1/proxy/v1/messages', chatHeaders(openai), CHAT), 403, 'permission', 'path_not_allowed', 'openai token on v1/messages');
  // Gemini: an action no route has.
  isGatewayError(t, await send(port, 'POST', '/v1/proxy/v1beta/models/gemini-2.0-flash:deleteAll', chatHeaders(f.tokens.gemini.token), '{}'), 403, 'permission', 'path_not_allowed', 'gemini action');

  t.is(f.fake.received.length, 0, 'the provider saw none of them');
  t.is(await usedRequests(f.app, f.org.token), 0);
  // Control: an escape the allow-list can express is decoded once and sent as matched.
  const ok = await send(port, 'POST', '/v1/proxy/v1/ch%61t/completions', chatHeaders(openai), CHAT);
  t.is(ok.status, 200);
  t.is(f.fake.received.at(-1)?.url, '/v1/chat/completions');
});

test('an absolute-form request target is never forwarded', async (t) => {
  const f = await proxyFixture(t);
  for (const target of ['http://evil.test/v1/proxy/v1/chat/completions', `http://127.0.0.1:${f.fake.port}/v1/proxy/v1/chat/completions`, `http://127.0.0.1:${f.fake.port}/v1/chat/completions`]) {
    const r = await rawSocket(f.app.port, [
      `POST ${target} HTTP/1.1`, 'Host: evil.test', `X-Proxy-Token: ${f.tokens.openai.token}`,
      'Content-Type: application/json', `Content-Length: ${CHAT.length}`, 'Connection: close', '', CHAT,
    ].join('\r\n'));
    t.true([400, 403, 404].includes(r.status), `${target}: ${r.status}`);
    if (target.includes('/v1/proxy/')) t.true(r.status === 403 || r.status === 400, target);
    t.truthy(r.body?.error?.code, target);
    if (r.status === 403) t.is(r.body.error.code, 'path_not_allowed');
  }
  t.is(f.fake.received.length, 0);
});

test('413 payload_too_large by content-length before any upstream byte; a body of exactly the limit passes', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_MAX_BODY: '1kb' } });
  const big = JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'x'.repeat(2000) }] });
  const r = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token), big);
  isGatewayError(t, r, 413, 'invalid_request', 'payload_too_large');
  // Declared but not sent: the gateway answers from the header alone.
  const declaredOnly = await rawSocket(f.app.port, [
    'POST /v1/proxy/v1/chat/completions HTTP/1.1', 'Host: x', `X-Proxy-Token: ${f.tokens.openai.token}`,
    'Content-Type: application/json', 'Content-Length: 100000000', 'Connection: close', '', '',
  ].join('\r\n'));
  isGatewayError(t, declaredOnly, 413, 'invalid_request', 'payload_too_large', 'declared 100 MB');
  t.is(f.fake.received.length, 0);
  t.is(await usedRequests(f.app, f.org.token), 0, '413 by content-length never counts');

  const exact = JSON.stringify({ model: 'gpt-test', pad: 'x'.repeat(1024 - 29) });
  t.is(Buffer.byteLength(exact), 1024);
  t.is((await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token), exact)).status, 200);
  t.is(f.fake.received.length, 1);
  t.is(f.fake.received[0]!.body, exact);
});

test('413 for a chunked body that grows past the limit: upstream aborted, never a complete request; it counted', async (t) => {
  // An upstream of our own that records whether a request body ever completed.
  const seen: Array<{ bytes: number; complete: boolean; aborted: boolean }> = [];
  const upstream = http.createServer((req, res) => {
    const record = { bytes: 0, complete: false, aborted: false };
    seen.push(record);
    req.on('data', (c: Buffer) => (record.bytes += c.length));
    req.on('end', () => {
      record.complete = true;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    req.on('error', () => (record.aborted = true));
    req.on('close', () => {
      if (!record.complete) record.aborted = true;
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    upstream.closeAllConnections();
    upstream.close(() => r());
  }));
  const f = await proxyFixture(t, { env: { KEYWARD_MAX_BODY: '1kb', KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${(upstream.address() as net.AddressInfo).port}` } });

  const outcome = await new Promise<{ status?: number; body?: any; error?: string }>((resolve) => {
    const req = http.request({
      host: '127.0.0.1', port: f.app.port, method: 'POST', path: '/v1/proxy/v1/chat/completions', agent: false,
      headers: { 'content-type': 'application/json', 'x-proxy-token': f.tokens.openai.token, 'transfer-encoding': 'chunked' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
      res.on('error', (e) => resolve({ status: res.statusCode, error: e.message }));
    });
    req.on('error', (e) => resolve({ error: e.message }));
    void (async () => {
      for (let i = 0; i < 32 && !req.destroyed; i++) {
        req.write('x'.repeat(256));
        await sleep(10); // pacing: a slow caller's body
      }
      if (!req.destroyed) req.end();
    })();
  });
  if (outcome.status !== undefined) {
    t.is(outcome.status, 413);
    t.is(outcome.body?.error?.code, 'payload_too_large');
    t.is(outcome.body?.error?.type, 'invalid_request');
  } else {
    t.truthy(outcome.error, 'or the connection was closed');
  }
  // Wait for the upstream side to see the abort.
  await eventually(() => !seen.some((s) => !s.complete && !s.aborted), 'the upstream saw the abort');
  t.true(seen.length <= 1);
  t.false(seen.some((s) => s.complete), 'the upstream never received a complete request');
  for (const s of seen) t.true(s.bytes <= 1024, `upstream got ${s.bytes} bytes, no more than the limit`);
  t.is(await usedRequests(f.app, f.org.token), 1, 'forwarded, so it counted');
});

test('429 quota_exceeded with Retry-After = whole seconds to the next UTC month, once the free requests are used', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 15, 12, 0, 0));
  const f = await proxyFixture(t, { clock, env: { KEYWARD_FREE_PROXY_REQUESTS: '2' } });
  const tok = await mintToken(f.app, f.org, f.credentials.openai, '30d');
  const call = () => send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(tok.token), CHAT);
  const first = await call();
  t.is(first.status, 200);
  t.is(first.headers['x-keyward-quota-remaining'], '1');
  const second = await call();
  t.is(second.status, 200);
  t.is(second.headers['x-keyward-quota-remaining'], '0');
  for (let i = 0; i < 3; i++) {
    const r = await call();
    isGatewayError(t, r, 429, 'rate_limit', 'quota_exceeded');
    t.regex(String(r.headers['retry-after']), /^[1-9][0-9]*$/);
    t.is(Number(r.headers['retry-after']), (Date.UTC(2026, 11, 1) - clock.now()) / 1000, '15.5 days to 1 December');
  }
  // Other providers of the same organisation share the quota.
  isGatewayError(t, await send(f.app.port, 'POST', '/v1/proxy/v1/messages', chatHeaders(f.tokens.anthropic.token), '{}'), 429, 'rate_limit', 'quota_exceeded', 'anthropic');
  t.is(f.fake.received.length, 2);
  const usage = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
  t.deepEqual(usage.body.proxy_requests, { used: 2, held: 0, limit: 2 });
  t.is(usage.body.period, '2026-11');
  // Near the end of the month, Retry-After shrinks with it.
  clock.set(Date.UTC(2026, 10, 30, 23, 59, 58, 500));
  const late = await call();
  t.is(late.status, 429);
  t.is(late.headers['retry-after'], '2', 'rounded up, never 0');
});

test('502 upstream_unreachable when the provider cannot be reached; it counted', async (t) => {
  // Port 1 on loopback: nothing listens there (a port freed by a test could be taken by another test in parallel).
  const port = 1;
  const f = await proxyFixture(t, { env: { KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${port}` } });
  const r = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token), CHAT);
  isGatewayError(t, r, 502, 'upstream', 'upstream_unreachable');
  t.truthy(r.headers['x-keyward-quota-remaining']);
  t.false(r.text.includes(f.keys.openai));
  t.is(await usedRequests(f.app, f.org.token), 1, 'a forwarded request counts whatever happens after');
  // The other providers, pointed at the fake, still work.
  t.is((await send(f.app.port, 'POST', '/v1/proxy/v1/messages', chatHeaders(f.tokens.anthropic.token), '{"model":"c","max_tokens":1,"messages":[]}')).status, 200);
});

test('504 upstream_timeout after KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS of silence; a long stream with shorter gaps is not cut', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '1000' } });
  const started = performance.now();
  const r = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token, { 'x-fake-hang': '1' }), CHAT);
  const elapsed = performance.now() - started;
  isGatewayError(t, r, 504, 'upstream', 'upstream_timeout');
  t.true(elapsed >= 950, `waited ${elapsed} ms`);
  t.true(elapsed < 10_000, `waited ${elapsed} ms`);
  await eventually(() => f.fake.received[0]?.aborted === true, 'the hung upstream request was closed');

  const streamStarted = performance.now();
  const stream = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions',
    chatHeaders(f.tokens.openai.token, { 'x-fake-events': '10', 'x-fake-delay-ms': '150' }),
    JSON.stringify({ model: 'gpt-test', stream: true, messages: [] }));
  const streamMs = performance.now() - streamStarted;
  t.is(stream.status, 200);
  t.true(streamMs > 1000, `the stream lasted ${streamMs} ms, longer than the idle timeout`);
  t.is(stream.text.match(/"content":"[^"]+"/g)?.length, 10, 'every event arrived');
  t.true(stream.text.endsWith('data: [DONE]\n\n'));
  t.is(await usedRequests(f.app, f.org.token), 2);
});

test('provider errors (4xx/5xx) pass through with the provider status, body and headers', async (t) => {
  const f = await proxyFixture(t);
  for (const status of [400, 401, 403, 404, 409, 422, 429, 500, 502, 503, 529]) {
    const r = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token, { 'x-fake-status': String(status) }), CHAT);
    t.is(r.status, status);
    t.deepEqual(r.body, { error: { message: `fake error ${status}`, type: 'fake_error', code: 'fake' } }, String(status));
    t.is(r.headers['x-request-id'], 'upstream-req-1', 'the provider request id is kept');
    t.regex(String(r.headers['x-keyward-request-id']), /^req_/);
  }
  t.is(f.fake.received.length, 11);
  t.is(await usedRequests(f.app, f.org.token), 11, 'provider errors were forwarded, so they count');
});

test('a 307 redirect is passed back with its Location, never followed', async (t) => {
  const f = await proxyFixture(t);
  const target = await startFakeProvider();
  t.teardown(() => target.close());
  const location = `${target.url}/v1/chat/completions`;
  const r = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(f.tokens.openai.token, { 'x-fake-redirect': location }), CHAT);
  t.is(r.status, 307);
  t.is(r.headers.location, location);
  t.regex(String(r.headers['x-keyward-request-id']), /^req_/);
  await quiet(f.app);
  t.is(target.received.length, 0, 'the redirect target got nothing');
  t.is(f.fake.received.length, 1);
});

/**
 * The store stops answering: every port method rejects as an adapter does when
 * its backend is unreachable. (Closing the SQLite handle under the running app
 * is not used: cached prepared statements then fail with a plain error, which
 * the adapter does not map to BackendUnavailable, so that path answers 500.)
 */
function storeDown(app: TestApp): void {
  const store = app.server.container.resolve<Store>(Symbols.Store) as unknown as Record<string, unknown>;
  // The port methods a proxy request, a usage flush and /readyz use.
  for (const name of ['ping', 'findTokenByHash', 'getCredential', 'getOrg', 'findOrgToken', 'writeHolder', 'readHolder', 'leaseLedger', 'putUsageShards', 'getUsage']) {
    if (typeof store[name] !== 'function') throw new Error(`the store has no ${name}()`);
    store[name] = () => Promise.reject(new BackendUnavailable('sqlite'));
  }
}

test('503 unavailable when the store is down: an uncached token, and quota fails closed; nothing is forwarded', async (t) => {
  // A limit under 32 makes every request lease its own unit from the store.
  const f = await proxyFixture(t, { env: { KEYWARD_FREE_PROXY_REQUESTS: '20', ...QUIET } });
  const call = (token: string) => send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(token), CHAT);
  const warm = f.tokens.openai.token;
  const r1 = await call(warm);
  t.is(r1.status, 200, 'token and key are now cached');
  t.is(r1.headers['x-keyward-quota-remaining'], '19');
  const cold = await mintToken(f.app, f.org, f.credentials.openai);

  storeDown(f.app);

  isGatewayError(t, await call(cold.token), 503, 'unavailable', 'unavailable', 'token not cached');
  const r = await call(warm);
  isGatewayError(t, r, 503, 'unavailable', 'unavailable', 'quota lease needed: fails closed');
  t.is(f.fake.received.length, 1, 'nothing was forwarded while the store was down');
  const ready = await fetch(`${f.app.url}/readyz`);
  t.is(ready.status, 503);
});

test('the same refusals happen for a second credential of another provider created after start-up', async (t) => {
  // A credential and token made at run time resolve like the fixture's: guards against stale caches.
  const f = await proxyFixture(t);
  const cred = await createCredential(f.app, f.org, 'openai', 'sk-second-openai-key-0123456789');
  const tok = await mintToken(f.app, f.org, cred);
  isGatewayError(t, await send(f.app.port, 'DELETE', '/v1/proxy/v1/chat/completions', chatHeaders(tok.token)), 403, 'permission', 'path_not_allowed');
  const ok = await send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(tok.token), CHAT);
  t.is(ok.status, 200);
  t.is(f.fake.received.at(-1)?.headers.authorization, 'Bearer sk-second-openai-key-0123456789');
});

test('429 too_many_failures: past KEYWARD_AUTH_FAILURES bad tokens from one IP, bad tokens are refused for the cool-down; a good token is not', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_AUTH_FAILURES: '3', KEYWARD_AUTH_COOLDOWN_S: '60' } });
  const call = (token: string) => send(f.app.port, 'POST', '/v1/proxy/v1/chat/completions', chatHeaders(token), CHAT);
  const statuses: number[] = [];
  for (let i = 0; i < 6 && !statuses.includes(429); i++) statuses.push((await call(newToken('ptok'))).status);
  t.deepEqual(statuses.slice(0, 3), [401, 401, 401], 'the first failures are plain 401s');
  t.true(statuses.includes(429), `cool-down within a failure or two past the limit: ${statuses}`);
  const r = await call(newToken('ptok'));
  isGatewayError(t, r, 429, 'rate_limit', 'too_many_failures', 'bad token while cooling down');
  const retryAfter = Number(r.headers['retry-after']);
  t.true(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, String(r.headers['retry-after']));
  t.is(f.fake.received.length, 0);
  // A valid token is never refused by the cool-down (contract, Hardening).
  t.is((await call(f.tokens.openai.token)).status, 200);
});

test('400 bad_request for malformed HTTP on a proxy path (invalid header bytes, smuggling forms); nothing forwarded', async (t) => {
  const f = await proxyFixture(t);
  const head = (extra: string[]) => [
    'POST /v1/proxy/v1/chat/completions HTTP/1.1', 'Host: x', `X-Proxy-Token: ${f.tokens.openai.token}`, 'Content-Type: application/json', ...extra, '', '',
  ].join('\r\n');
  const cases: Array<[string, string]> = [
    ['control byte in a header value', head(['X-Bad: a\x01b', `Content-Length: ${CHAT.length}`]) + CHAT],
    ['bare LF inside a header value', head(['X-Bad: a\nb', `Content-Length: ${CHAT.length}`]) + CHAT],
    ['NUL in the request target', head([`Content-Length: ${CHAT.length}`]).replace('completions HTTP', 'completions\x00 HTTP') + CHAT],
    ['Content-Length and Transfer-Encoding together', head([`Content-Length: ${CHAT.length}`, 'Transfer-Encoding: chunked']) + `${CHAT.length.toString(16)}\r\n${CHAT}\r\n0\r\n\r\n`],
    ['two different Content-Lengths', head(['Content-Length: 5', `Content-Length: ${CHAT.length}`]) + CHAT],
  ];
  for (const [label, request] of cases) {
    const r = await rawSocket(f.app.port, request);
    t.is(r.status, 400, label);
    t.is(r.body?.error?.code, 'bad_request', label);
    t.is(r.body?.error?.type, 'invalid_request', label);
  }
  t.is(f.fake.received.length, 0);
  t.is(await usedRequests(f.app, f.org.token), 0);
});

test('silence mid-stream past the idle timeout cuts the caller\'s connection (no clean end), after the events already sent', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '1000' } });
  let upstreamClosed = false;
  f.fake.handler = async (_req, res) => {
    res.once('close', () => (upstreamClosed = true));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"n":1}\n\n');
    // …and nothing more, ever.
  };
  const started = performance.now();
  const outcome = await new Promise<{ status?: number; text: string; error?: string; ended: boolean }>((resolve) => {
    let text = '';
    const req = http.request({ host: '127.0.0.1', port: f.app.port, method: 'POST', path: '/v1/proxy/v1/chat/completions', agent: false, headers: { ...chatHeaders(f.tokens.openai.token), 'content-length': String(CHAT.length) } }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, text, ended: true }));
      res.on('error', (e) => resolve({ status: res.statusCode, text, error: e.message, ended: false }));
      res.on('aborted', () => resolve({ status: res.statusCode, text, error: 'aborted', ended: false }));
    });
    req.on('error', (e) => resolve({ text, error: e.message, ended: false }));
    req.end(CHAT);
  });
  const elapsed = performance.now() - started;
  t.is(outcome.status, 200, 'the provider status had been sent');
  t.is(outcome.text, 'data: {"n":1}\n\n', 'what arrived before the silence arrived');
  t.false(outcome.ended, 'the stream did not end cleanly');
  t.true(elapsed >= 950, `cut after ${elapsed} ms`);
  await eventually(() => upstreamClosed, 'the upstream request was closed too');
});
