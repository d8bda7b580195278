/**
 * A `models`-scoped token's body through real HTTP: its `model` is found by a
 * streaming scan, so a body that names it first reaches the provider before
 * the caller has sent the rest; one that names it last still works; a top-level
 * `model` twice (or `Model`) is refused, before forwarding or by cutting the
 * upstream request off; a nested or quoted "model" is not taken; and all bodies
 * held together stay within KEYWARD_BUFFER_BUDGET (503 overloaded, nothing
 * forwarded, nothing counted).
 */
import test from 'ava';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { api, createCredential, createOrg, mintToken, startApp, type Org, type TestApp } from '../support/app.js';
import { request } from '../support/request.js';

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  complete: boolean;
  aborted: boolean;
}

/** A provider that records each request's bytes as they arrive, and answers once the body is whole. */
async function startUpstream(t: import('ava').ExecutionContext) {
  const seen: Seen[] = [];
  const waiters: Array<() => void> = [];
  const notify = () => {
    for (const w of waiters.splice(0)) w();
  };
  const server = http.createServer((req, res) => {
    const rec: Seen = { url: req.url ?? '', headers: req.headers, body: '', complete: false, aborted: false };
    seen.push(rec);
    notify();
    req.on('data', (c: Buffer) => {
      rec.body += c.toString();
      notify();
    });
    req.on('error', () => {});
    req.on('close', () => {
      if (!rec.complete) rec.aborted = true;
      notify();
    });
    req.on('end', () => {
      rec.complete = true;
      notify();
      const text = JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', usage: { prompt_tokens: 1, completion_tokens: 1 } });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  /** Resolves when `check` holds (checked on every upstream event). */
  const until = async (check: () => boolean): Promise<void> => {
    while (!check()) await new Promise<void>((r) => waiters.push(r));
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, until };
}

interface Res {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** A POST whose body the test writes piece by piece (not request(), which sends a whole body); `response` settles with the answer (or the error). */
function open(url: string, headers: Record<string, string>, contentLength?: number) {
  const req = http.request(url, {
    method: 'POST',
    agent: false,
    headers: { 'content-type': 'application/json', ...(contentLength === undefined ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(contentLength) }), ...headers },
  });
  const response = new Promise<Res>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let body: any;
        try {
          body = JSON.parse(text);
        } catch { /* not JSON */ }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
  response.catch(() => {});
  return { req, response };
}

interface Setup {
  app: TestApp;
  org: Org;
  up: Awaited<ReturnType<typeof startUpstream>>;
  scoped: string;
  unscoped: string;
  url: string;
}

async function setup(t: import('ava').ExecutionContext, env: Record<string, string> = {}): Promise<Setup> {
  const up = await startUpstream(t);
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: up.url, ...env } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'openai', 'sk-openai-body-scan-0123456789');
  const scoped = (await mintToken(app, org, cred, '15m', { models: ['gpt-4o'] })).token;
  const unscoped = (await mintToken(app, org, cred)).token;
  return { app, org, up, scoped, unscoped, url: `${app.url}/v1/proxy/v1/chat/completions` };
}

const used = async (s: Setup): Promise<number> => (await api(s.app, 'GET', '/v1/usage', { token: s.org.token })).body.proxy_requests.used;
const pad = (n: number) => 'x'.repeat(n);

test('model first: the provider has the headers and the first bytes before the caller sends the last byte', async (t) => {
  const s = await setup(t);
  const head = `{"model":"gpt-4o","messages":[{"role":"user","content":"${pad(20_000)}`;
  const tail = `${pad(20_000)}"}]}`;
  const { req, response } = open(s.url, { 'x-proxy-token': s.scoped }, Buffer.byteLength(head + tail));
  req.write(head);
  await s.up.until(() => s.up.seen.length === 1 && s.up.seen[0]!.body.length > 0);
  const upstream = s.up.seen[0]!;
  t.false(upstream.complete, 'the body is not whole yet: the caller still holds its end');
  t.true(head.startsWith(upstream.body.slice(0, 17)), 'the first bytes arrived unchanged');
  t.is(upstream.url, '/v1/chat/completions');
  t.is(upstream.headers.authorization, 'Bearer sk-openai-body-scan-0123456789');
  req.end(tail);
  const r = await response;
  t.is(r.status, 200);
  t.is(upstream.body, head + tail, 'forwarded byte for byte');
  t.is(await used(s), 1);

  // The same with a chunked body.
  const chunked = open(s.url, { 'x-proxy-token': s.scoped });
  chunked.req.write(head);
  await s.up.until(() => s.up.seen.length === 2 && s.up.seen[1]!.body.length > 0);
  t.false(s.up.seen[1]!.complete);
  chunked.req.end(tail);
  t.is((await chunked.response).status, 200);
  t.is(s.up.seen[1]!.body, head + tail);
});

test('model last still works, byte for byte; a model outside the scope is refused and nothing is sent', async (t) => {
  const s = await setup(t);
  const body = `{"messages":[{"role":"user","content":"${pad(300_000)}"}],"stream":false,"model":"gpt-4o"}`;
  const r = await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body });
  t.is(r.status, 200);
  t.is(s.up.seen.length, 1);
  t.is(s.up.seen[0]!.body, body);
  const refused = await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body: body.replace('"gpt-4o"', '"gpt-5"') });
  t.is(refused.status, 403);
  t.is(refused.body.error.code, 'model_not_allowed');
  t.is(s.up.seen.length, 1);
  t.is(await used(s), 1);
});

test('`model` twice or a case variant at the top level → 400 invalid_request, nothing forwarded, nothing counted', async (t) => {
  const s = await setup(t);
  for (const body of [
    '{"model":"gpt-4o","Model":"gpt-5"}',
    '{"model":"gpt-4o","model":"gpt-5"}',
    '{"MODEL":"gpt-5","model":"gpt-4o"}',
    '{"model":"gpt-4o","\\u004dodel":"gpt-5"}',
    `{"model":"gpt-4o","messages":[{"content":"${pad(100_000)}"}],"Model":"gpt-5"}`,
  ]) {
    const r = await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body });
    t.is(r.status, 400, body.slice(0, 60));
    t.is(r.body?.error?.code, 'invalid_request');
    t.is(r.body?.error?.param, 'model');
  }
  t.is(s.up.seen.length, 0, 'nothing reached the provider');
  t.is(await used(s), 0);
});

test('a duplicate that arrives after forwarding began: the upstream body never completes, the caller gets 400, nothing counts', async (t) => {
  const s = await setup(t);
  for (const framing of ['content-length', 'chunked']) {
    const head = `{"model":"gpt-4o","messages":[{"content":"${pad(10_000)}"}],`;
    const tail = '"Model":"gpt-5"}';
    const { req, response } = open(s.url, { 'x-proxy-token': s.scoped }, framing === 'chunked' ? undefined : Buffer.byteLength(head + tail));
    req.write(head);
    const index = s.up.seen.length;
    await s.up.until(() => s.up.seen.length === index + 1 && s.up.seen[index]!.body.length > 0);
    req.end(tail);
    const r = await response.catch((e: Error) => ({ status: 0, headers: {}, body: { error: e.message } }));
    t.is(r.status, 400, framing);
    t.is(r.body?.error?.code, 'invalid_request', framing);
    await s.up.until(() => s.up.seen[index]!.aborted);
    t.false(s.up.seen[index]!.complete, `${framing}: the provider never had a whole body`);
    t.false(s.up.seen[index]!.body.includes('gpt-5'), `${framing}: the offending bytes were never passed on`);
  }
  t.is(await used(s), 0, 'cut off before any response: not counted');
  // The token still works.
  t.is((await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body: '{"model":"gpt-4o"}' })).status, 200);
  t.is(await used(s), 1);
});

test('a "model" nested, inside a string, or escaped is read as JSON reads it', async (t) => {
  const s = await setup(t);
  const call = (body: string) => request(s.url, { headers: { 'x-proxy-token': s.scoped }, body });
  for (const body of [
    '{"messages":[{"model":"gpt-4o"}],"model":"gpt-5"}',
    '{"x":{"model":"gpt-4o"}}',
    '{"note":"\\"model\\":\\"gpt-4o\\"","model":"gpt-5"}',
    '{"note":"{\\"model\\":\\"gpt-4o\\"}"}',
    '{"Model":"gpt-4o"}',
  ]) {
    const r = await call(body);
    t.is(r.status, 403, body);
    t.is(r.body.error.code, 'model_not_allowed', body);
  }
  t.is(s.up.seen.length, 0);
  for (const body of ['{"\\u006dodel":"gpt-4o"}', '{"model":"gpt\\u002d4o"}', '{"messages":[{"model":"gpt-5"}],"model":"gpt-4o"}']) {
    t.is((await call(body)).status, 200, body);
  }
  t.is(s.up.seen.length, 3);
  t.deepEqual(s.up.seen.map((x) => x.complete), [true, true, true]);
});

test('KEYWARD_BUFFER_BUDGET: two bodies that together pass it → one 503 overloaded with Retry-After, nothing forwarded or counted for it', async (t) => {
  const s = await setup(t, { KEYWARD_BUFFER_BUDGET: '256kb', KEYWARD_BUFFER_PER_ORG: '256kb' });
  const head = `{"messages":[{"role":"user","content":"${pad(150 * 1024)}`;
  const tail = '"}],"model":"gpt-4o"}';
  const length = Buffer.byteLength(head + tail);
  const a = open(s.url, { 'x-proxy-token': s.scoped }, length);
  const b = open(s.url, { 'x-proxy-token': s.scoped }, length);
  a.req.write(head);
  b.req.write(head);
  // Neither has named its model yet: 300 KiB held against 256 KiB, so whichever passes the budget is refused.
  const first = await Promise.race([a.response.then((r) => ({ r, who: a, other: b })), b.response.then((r) => ({ r, who: b, other: a }))]);
  t.is(first.r.status, 503);
  t.is(first.r.body.error.code, 'overloaded');
  t.is(first.r.body.error.type, 'unavailable');
  t.regex(String(first.r.headers['retry-after']), /^[1-9][0-9]*$/);
  t.regex(String(first.r.headers['x-keyward-request-id']), /^req_/);
  first.who.req.destroy();
  first.other.req.end(tail);
  const second = await first.other.response;
  t.is(second.status, 200, 'the other one, within the budget once the refused one let go, goes through');
  t.is(s.up.seen.length, 1);
  t.is(s.up.seen[0]!.body, head + tail);
  t.is(await used(s), 1, 'the refused request was never counted');
  // Every held byte was given back: a body needing most of the budget passes, twice.
  for (let i = 0; i < 2; i++) {
    t.is((await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body: `{"pad":"${pad(240 * 1024)}","model":"gpt-4o"}` })).status, 200);
  }
  // A token with no models scope never holds its body: far past the budget, it streams straight through.
  const big = `{"pad":"${pad(1024 * 1024)}","model":"gpt-4o"}`;
  t.is((await request(s.url, { headers: { 'x-proxy-token': s.unscoped }, body: big })).status, 200);
  t.is(s.up.seen.at(-1)!.body, big);
});

test('a body of tiny chunks is charged for each chunk, not only its bytes: 3000 one-byte chunks go over a 256kb budget', async (t) => {
  const s = await setup(t, { KEYWARD_BUFFER_BUDGET: '256kb', KEYWARD_BUFFER_PER_ORG: '256kb' });
  const body = `{"pad":"${pad(3000)}","model":"gpt-4o"}`;
  const chunks = [...body].map((ch) => `1\r\n${ch}\r\n`).join('');
  const raw = `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${s.scoped}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`;
  const text = await new Promise<string>((resolve) => {
    const socket = net.connect(s.app.port, '127.0.0.1', () => socket.end(raw));
    let got = '';
    socket.on('data', (d) => (got += d));
    socket.on('close', () => resolve(got));
    socket.on('error', () => resolve(got));
  });
  t.regex(text, /^HTTP\/1\.1 503 /);
  t.regex(text, /"code":"overloaded"/);
  t.is(s.up.seen.length, 0);
  // The same bytes in one piece are far within the budget.
  t.is((await request(s.url, { headers: { 'x-proxy-token': s.scoped }, body })).status, 200);
});
