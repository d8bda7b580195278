/**
 * Plugins' streaming body hooks on HTTP (pipeline/body-hooks.ts), over HTTP/1.1 and h2c: a piece passes, is
 * changed or held back; the request's changed body goes upstream with a true framing and is what the core's scans
 * read; the response head waits for the hooks' first bytes; a refusal before any byte is the refusal's JSON error
 * and status, after bytes a cut (HTTP/1.1 reset, HTTP/2 RST_STREAM INTERNAL_ERROR) past which nothing passes; a hook
 * holding more than its maxBuffer, or failing, refuses through the exit (the request is still logged and counted);
 * a provider's stream cut mid-way stays a cut; masking runs after the hooks, so no hook can un-mask a key.
 */
import test from 'ava';
import http2 from 'node:http2';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { api, mintToken, startApp, tempDir, type TestApp } from '../support/app.js';
import { HOLD_ALL, hookFixture, replace } from '../support/body-hook-plugins.js';
import { send, type Transport } from '../support/transport.js';
import { quiet, sleep } from '../support/wait.js';

/** The logging plugin's line of each proxied request. */
const requestLines = (app: TestApp): any[] => app.logs.filter((l: any) => l.message === 'proxy request');
const TRANSPORTS: Transport[] = ['h1', 'h2c'];
const CHAT = 'v1/chat/completions';
const body = (extra: Record<string, unknown> = {}): string => JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi there' }], ...extra });
const REFUSE = (marker: string, status = 400): string =>
  `if (piece && Buffer.from(piece).includes(${JSON.stringify(marker)})) throw new host.GatewayError(${status}, 'invalid_request', 'content_refused', 'refused by the test plugin');`;

test('a hook changes request and response bodies, JSON and SSE, over HTTP/1.1 and h2c: the upstream gets a true framing, the caller no stale content-length, and usage is the provider\'s', async (t) => {
  const f = await hookFixture(t, [{ name: 'swap', request: replace('hi there', 'HELLO THERE, LONGER'), response: replace('fake', 'FAKE') }]);
  const token = f.tokens.openai.token;
  for (const transport of TRANSPORTS) {
    for (const length of [true, false]) {
      const json = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': token }, body: body(), length, pieces: 3 });
      t.is(json.status, 200, `${transport} ${length}: ${json.text}`);
      t.is(json.body.id, 'chatcmpl-FAKE');
      t.is(json.headers['content-length'], undefined, 'the provider\'s content-length is not kept');
      const got = f.fake.received.at(-1)!;
      t.is(JSON.parse(got.body).messages[0].content, 'HELLO THERE, LONGER', 'the upstream got the changed body whole');
      t.is(got.headers['content-length'], undefined, 'the caller\'s content-length is not sent with a changed body');
      t.is(got.headers['transfer-encoding'], 'chunked');
    }
    const sse = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': token, 'x-fake-events': '4' }, body: body({ stream: true, stream_options: { include_usage: true } }) });
    t.is(sse.status, 200);
    t.true(sse.complete);
    t.regex(sse.text, /FAKE/);
    t.notRegex(sse.text, /fake/);
    t.regex(sse.text, /data: \[DONE\]/);
  }
  await quiet(f.app);
  const usage = await api(f.app, 'GET', `/v1/tokens/${f.tokens.openai.id}`, { token: f.org.token });
  t.is(usage.body.usage.requests, 6);
  t.is(usage.body.usage.output_tokens, 4 * 3 + 2 * 4, 'usage read from what the provider sent');
});

test('the core\'s body scans read the body the hooks send: a models-scoped token is judged on the changed model', async (t) => {
  const f = await hookFixture(t, [{ name: 'remodel', request: replace('"gpt-asked"', '"gpt-allowed"') }]);
  const scoped = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['gpt-allowed'] });
  for (const transport of TRANSPORTS) {
    const r = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': scoped.token }, body: body({ model: 'gpt-asked' }) });
    t.is(r.status, 200, r.text);
    t.is(JSON.parse(f.fake.received.at(-1)!.body).model, 'gpt-allowed');
  }
});

test('a hook holding the whole body within its maxBuffer: the response head waits for it, and the bodies arrive whole', async (t) => {
  const f = await hookFixture(t, [{ name: 'holder', maxBuffer: 1 << 20, request: HOLD_ALL, response: HOLD_ALL }]);
  for (const transport of TRANSPORTS) {
    let ended = false;
    f.fake.handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      // The provider's pace, not the gateway's: without the hook the head would be out long before this.
      await sleep(50); // paces the fake provider's stream
      res.write('data: {"n":2}\n\n');
      ended = true;
      res.end('data: [DONE]\n\n');
    };
    let endedAtHead: boolean | undefined;
    const r = await send(f.app.url, {
      transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body({ stream: true }), pieces: 4, length: false,
      onHead: () => (endedAtHead = ended),
    });
    t.is(r.status, 200);
    t.true(r.complete);
    t.true(endedAtHead, 'the head went out with the hook\'s first bytes: at the end');
    t.is(r.text, 'data: {"n":1}\n\ndata: {"n":2}\n\ndata: [DONE]\n\n');
    t.is(JSON.parse(f.fake.received.at(-1)!.body).messages[0].content, 'hi there');
  }
});

test('holding more than maxBuffer is a refusal: 413 for a request body (nothing forwarded), 502 for a response before any byte', async (t) => {
  const f = await hookFixture(t, [
    { name: 'tightreq', maxBuffer: 16, request: HOLD_ALL },
    { name: 'tightres', priority: 390, maxBuffer: 16, response: HOLD_ALL },
  ]);
  for (const transport of TRANSPORTS) {
    const before = f.fake.received.length;
    const r = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body(), length: transport === 'h1' });
    t.is(r.status, 413, r.text);
    t.is(r.body.error.code, 'body_buffer_exceeded');
    t.regex(r.body.error.message, /tightreq.*16 bytes/);
    t.is(f.fake.received.length, before, 'nothing reached the provider');
  }
  const g = await hookFixture(t, [{ name: 'tightres', maxBuffer: 16, response: HOLD_ALL }]);
  for (const transport of TRANSPORTS) {
    const r = await send(g.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': g.tokens.openai.token }, body: body() });
    t.is(r.status, 502, r.text);
    t.is(r.body.error.code, 'body_buffer_exceeded');
  }
});

test('a refusal before any byte reached the caller is the refusal\'s JSON error and status; the request is logged and counted', async (t) => {
  const f = await hookFixture(t, [{ name: 'guard', request: REFUSE('forbidden-word'), response: REFUSE('Hello', 451) }]);
  for (const transport of TRANSPORTS) {
    const before = f.fake.received.length;
    const req = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body({ note: 'forbidden-word' }) });
    t.is(req.status, 400, req.text);
    t.like(req.body.error, { code: 'content_refused', type: 'invalid_request' });
    t.is(f.fake.received.length, before, 'a refused request body is not forwarded');
    const res = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body() });
    t.is(res.status, 451, res.text);
    t.is(res.body.error.code, 'content_refused');
    t.truthy(res.headers['x-keyward-request-id'], 'a refusal carries the stages\' head');
  }
  await quiet(f.app);
  const lines = requestLines(f.app);
  t.deepEqual(lines.map((l) => [l.httpRequest.status, l.keyward.error, l.keyward.forwarded]), [
    [400, 'content_refused', false], [451, 'content_refused', true], [400, 'content_refused', false], [451, 'content_refused', true],
  ]);
  const usage = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
  t.is(usage.body.proxy_requests.used, 2, 'the answered (refused) responses count; the unforwarded requests do not');
});

test('a refusal after bytes went out is a cut (HTTP/1.1 reset, HTTP/2 RST_STREAM INTERNAL_ERROR): nothing after it passes', async (t) => {
  const f = await hookFixture(t, [{ name: 'late', response: REFUSE('poison') }]);
  for (const transport of TRANSPORTS) {
    let sentFirst!: () => void;
    const firstSent = new Promise<void>((r) => (sentFirst = r));
    f.fake.handler = async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      await firstSent;
      res.write('data: {"n":2,"text":"poison"}\n\n');
      res.write('data: {"n":3}\n\n');
      res.end('data: [DONE]\n\n');
    };
    const r = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body({ stream: true }), onData: () => sentFirst() });
    t.is(r.status, 200);
    t.false(r.complete, `${transport}: never a clean end`);
    if (transport === 'h2c') t.is(r.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR);
    t.regex(r.text, /"n":1/);
    t.notRegex(r.text, /poison|"n":3|DONE/, 'no piece after the refusal');
  }
  await quiet(f.app);
  t.deepEqual(requestLines(f.app).map((l) => l.keyward.error), ['content_refused', 'content_refused']);
});

test('a hook that throws anything else refuses cleanly with 502 plugin_failed: no 500, no crash, its message never logged, the request still logged', async (t) => {
  const f = await hookFixture(t, [
    { name: 'buggy', response: 'if (piece) throw new Error("card 4111111111111111 in the message");' },
  ]);
  for (const transport of TRANSPORTS) {
    const r = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body() });
    t.is(r.status, 502);
    t.like(r.body.error, { code: 'plugin_failed', type: 'internal' });
    t.regex(r.body.error.message, /buggy/);
  }
  const g = await hookFixture(t, [{ name: 'wrongtype', request: 'return 42;' }]);
  const r = await send(g.app.url, { transport: 'h1', path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': g.tokens.openai.token }, body: body() });
  t.is(r.status, 502);
  t.is(r.body.error.code, 'plugin_failed');
  await quiet(f.app);
  t.notRegex(f.app.logText(), /4111111111111111/);
  t.is(f.app.logs.filter((l: any) => l.message === 'plugin body hook failed' && l.plugin === 'buggy').length, 2);
  t.deepEqual(requestLines(f.app).map((l) => l.httpRequest.status), [502, 502]);
  t.is((await send(f.app.url, { transport: 'h1', method: 'GET', path: '/readyz' })).status, 200, 'the gateway goes on');
});

test('a provider stream cut mid-way stays a cut through the hooks; cut before the hooks gave anything out, it is a 502', async (t) => {
  const cutting = (f: { fake: { handler: unknown } }, gotFirst: Promise<void>): void => {
    f.fake.handler = async (_req: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"n":1}\n\n');
      await gotFirst;
      res.socket?.destroy();
    };
  };
  const f = await hookFixture(t, [{ name: 'pass', response: 'return undefined;' }]);
  for (const transport of TRANSPORTS) {
    let first!: () => void;
    cutting(f, new Promise<void>((r) => (first = r)));
    const r = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body({ stream: true }), onData: () => first() });
    t.is(r.status, 200);
    t.false(r.complete);
    t.is(r.text, 'data: {"n":1}\n\n');
    if (transport === 'h2c') t.is(r.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR);
  }
  const g = await hookFixture(t, [{ name: 'holder', maxBuffer: 1 << 20, response: HOLD_ALL }]);
  for (const transport of TRANSPORTS) {
    // Nothing reaches the caller while the hook holds: the provider is cut once it had the request.
    let first!: () => void;
    const received = g.fake.nextRequest();
    cutting(g, new Promise<void>((r) => (first = r)));
    void received.then(() => setImmediate(first));
    const r = await send(g.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': g.tokens.openai.token }, body: body({ stream: true }) });
    t.is(r.status, 502, r.text);
    t.is(r.body.error.code, 'upstream_unreachable');
  }
});

test('masking runs after the hooks: a hook that joins a key the provider split, or re-cuts its echo, never shows it', async (t) => {
  const f = await hookFixture(t, [{ name: 'joiner', maxBuffer: 64, response: `
    // Gives out all but the last 5 bytes of each piece (re-cutting every edge), and drops every "|".
    const text = Buffer.concat([...held, Buffer.from(piece ?? [])]).toString('latin1').split('|').join('');
    held.length = 0;
    if (piece === null) return text;
    held.push(Buffer.from(text.slice(-5), 'latin1'));
    return text.slice(0, -5);` }]);
  const key = f.keys.openai;
  for (const transport of TRANSPORTS) {
    f.fake.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ split: `${key.slice(0, 9)}|${key.slice(9)}` }));
    };
    const joined = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token }, body: body() });
    t.is(joined.status, 200);
    t.is(joined.body.split, '*'.repeat(key.length), 'the key the hook made is masked');
    f.fake.handler = undefined;
    const echo = await send(f.app.url, { transport, path: `/v1/proxy/${CHAT}`, headers: { 'x-proxy-token': f.tokens.openai.token, 'x-fake-echo': 'stream' }, body: body() });
    t.is(echo.status, 200);
    t.false(echo.text.includes(key), 'the echoed key is masked, however the hook cut it');
    t.regex(echo.text, /Bearer \*{20}/);
  }
});

test('a body hook without a declared maxBuffer, or with a bad one, stops start-up naming the plugin and the field', async (t) => {
  for (const [maxBuffer, expected] of [['', /undeclared.*`maxBuffer`.*must be declared/], ['maxBuffer: -1,', /undeclared.*`maxBuffer` must be a whole number/]] as const) {
    const dir = tempDir(t, 'keyward-hook-plugins-');
    writeFileSync(path.join(dir, 'undeclared.js'), `export default { apiVersion: 1, name: 'undeclared', priority: 400, ${maxBuffer} create() { return { responseBody() {} }; } };\n`);
    const err = await t.throwsAsync(startApp(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'undeclared' } }));
    t.regex(err!.message, expected);
  }
});
