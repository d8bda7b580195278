/**
 * Request smuggling, over raw sockets: every ambiguous framing (CL and TE
 * together, duplicate or malformed Content-Length, obfuscated Transfer-Encoding,
 * bad chunk sizes, CR/LF games) is a 400 from the client-error handler, and the
 * fake upstream's log proves no request was smuggled through; a request hidden
 * in a body is a body, and a caller who aborts mid-body cannot desync the
 * gateway's keep-alive connection to the upstream.
 */
import test from 'ava';
import net from 'node:net';
import { createCredential } from '../support/app.js';
import { adversary, call, canary, rawRequest } from './_harness.js';
import { quiet } from '../support/wait.js';
import { sleep } from '../support/wait.js';

const HIDDEN = 'GET /v1/models/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';

test('ambiguous framing → 400 bad_request, connection closed, nothing smuggled upstream', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  const body = `0\r\n\r\n${HIDDEN}`;
  const start = `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nContent-Type: application/json\r\n`;
  const cases: Array<[string, string]> = [
    ['CL then TE', `Content-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`],
    ['TE then CL', `Transfer-Encoding: chunked\r\nContent-Length: ${body.length}\r\n\r\n${body}`],
    ['CL 0 and TE', `Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n${body}`],
    ['two different CLs', `Content-Length: 5\r\nContent-Length: ${body.length}\r\n\r\n${body}`],
    ['a CL list', `Content-Length: 5, ${body.length}\r\n\r\n${body}`],
    ['negative CL', `Content-Length: -1\r\n\r\n${body}`],
    ['signed CL', `Content-Length: +5\r\n\r\n${body}`],
    ['hex CL', `Content-Length: 0x5\r\n\r\n${body}`],
    ['CL with junk', `Content-Length: 5a\r\n\r\n${body}`],
    ['CL overflow', `Content-Length: 99999999999999999999999\r\n\r\n${body}`],
    ['TE xchunked', `Transfer-Encoding: xchunked\r\n\r\n${body}`],
    ['TE chunked, identity', `Transfer-Encoding: chunked, identity\r\n\r\n${body}`],
    ['TE identity', `Transfer-Encoding: identity\r\nContent-Length: 5\r\n\r\n${body}`],
    ['space before the colon', `Transfer-Encoding : chunked\r\n\r\n${body}`],
    ['folded TE', `X-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n${body}`],
    ['TE folded onto a new line', `Transfer-Encoding:\r\n chunked\r\n\r\n${body}`],
    ['two TE headers, then CL', `Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\nContent-Length: 3\r\n\r\n${body}`],
    ['TE with a vertical tab', `Transfer-Encoding:\x0bchunked\r\n\r\n${body}`],
    ['chunk size overflow', `Transfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\nx\r\n0\r\n\r\n`],
    ['negative chunk size', `Transfer-Encoding: chunked\r\n\r\n-1\r\nx\r\n0\r\n\r\n`],
    ['hex-prefixed chunk size', `Transfer-Encoding: chunked\r\n\r\n0x2\r\nxx\r\n0\r\n\r\n`],
    ['chunk data longer than its size', `Transfer-Encoding: chunked\r\n\r\n2\r\nxxxx\r\n0\r\n\r\n${HIDDEN}`],
    ['bare LF chunk lines', `Transfer-Encoding: chunked\r\n\r\n2\nxx\n0\n\n`],
    ['bare LF between headers', `X-A: 1\nContent-Length: 2\r\n\r\n{}`],
    ['bare CR between headers', `X-A: 1\rContent-Length: 2\r\n\r\n{}`],
    ['CR inside a value', `X-A: a\rb\r\nContent-Length: 2\r\n\r\n{}`],
    ['LF inside a value', `X-A: a\nb: c\r\nContent-Length: 2\r\n\r\n{}`],
    ['CRLF smuggled into a header name', `X-A\r\n: 1\r\nContent-Length: 2\r\n\r\n{}`],
    ['NUL in a header', `X-A: \x00\r\nContent-Length: 2\r\n\r\n{}`],
  ];
  for (const [label, rest] of cases) {
    const r = await rawRequest(a.app.port, start + rest, { w: a.w, waitMs: 30_000 }); // answered and closed: a generous bound
    t.true(r.status === 400, `${label}: ${r.status} ${r.raw.slice(0, 120)}`);
    t.is(r.body?.error?.code, 'bad_request', label);
    t.is(r.body?.error?.type, 'invalid_request', label);
    t.true(r.closed, `${label}: closed`);
    t.false(r.raw.includes('fake-model'), `${label}: no second response`);
  }
  t.is(a.fake.received.length, 0, 'not one request reached the provider');
  // Well-formed equivalents still work: chunked alone, CL alone, chunk extensions, trailers.
  const good = [
    `Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
    `Transfer-Encoding: CHUNKED\r\n\r\n2;ext=1\r\n{}\r\n0\r\nX-Trailer: 1\r\n\r\n`,
    `Content-Length: 2\r\n\r\n{}`,
  ];
  for (const rest of good) {
    const r = await rawRequest(a.app.port, start + 'Connection: close\r\n' + rest, { w: a.w });
    t.is(r.status, 200, rest);
  }
  t.is(a.fake.received.length, 3);
  for (const r of a.fake.received) {
    t.is(r.url, '/v1/chat/completions');
    t.is(r.body, '{}');
    t.is(r.headers['x-trailer'], undefined);
  }
  a.assertNoLeaks(t);
});

test('a request hidden in a body is a body: refused or forwarded, it is never executed', async (t) => {
  const a = await adversary(t);
  const victimKey = canary('victim');
  const victim = await createCredential(a.app, a.org, 'openai', victimKey);
  const hiddenAdmin = `DELETE /v1/credentials/${victim} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${a.org.token}\r\nContent-Length: 0\r\n\r\n`;
  // 1: refused (bad token) with the hidden request as its declared body, then a real request on the same connection.
  const refused = `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ptok_bad\r\nContent-Length: ${hiddenAdmin.length}\r\n\r\n${hiddenAdmin}`;
  const next = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  const r1 = await rawRequest(a.app.port, refused + next, { w: a.w });
  t.regex(r1.raw, /^HTTP\/1\.1 401 /);
  t.is((r1.raw.match(/HTTP\/1\.1 /g) ?? []).length, 2, 'two responses: the refusal and /healthz');
  t.regex(r1.raw, /HTTP\/1\.1 200 [\s\S]*"status":"ok"/);
  // 2: the same hidden request in the body of a forwarded request reaches upstream as body bytes only.
  const forwarded = `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${a.tokens.openai.token}\r\nContent-Length: ${hiddenAdmin.length}\r\nConnection: close\r\n\r\n${hiddenAdmin}`;
  const r2 = await rawRequest(a.app.port, forwarded, { w: a.w });
  t.regex(r2.raw, /^HTTP\/1\.1 200 /);
  t.is((r2.raw.match(/HTTP\/1\.1 /g) ?? []).length, 1);
  t.is(a.fake.received.length, 1);
  t.is(a.fake.received[0]!.body, hiddenAdmin);
  // 3: a refusal with a large chunked body closes the connection rather than reading on.
  const big = `POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ptok_bad\r\nTransfer-Encoding: chunked\r\n\r\n10000\r\n${'x'.repeat(0x10000)}\r\n0\r\n\r\n${hiddenAdmin}`;
  const r3 = await rawRequest(a.app.port, big, { w: a.w });
  t.regex(r3.raw, /^HTTP\/1\.1 401 /);
  t.is((r3.raw.match(/HTTP\/1\.1 /g) ?? []).length, 1, 'nothing after the refusal was read as a request');
  // The victim credential is intact.
  const got = await call(a.w, `${a.app.url}/v1/credentials/${victim}`, { headers: { authorization: `Bearer ${a.org.token}` } });
  t.is(got.status, 200);
  a.assertNoLeaks(t, { canaries: [victimKey] });
});

test('pipelined requests are each authenticated on their own; one token does not carry to the next', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  const first = `GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\n\r\n`;
  const second = 'GET /v1/proxy/v1/models HTTP/1.1\r\nHost: x\r\n\r\n';
  const third = 'GET /v1/credentials HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';
  const r = await rawRequest(a.app.port, first + second + third, { w: a.w });
  const statuses = [...r.raw.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  t.deepEqual(statuses, [200, 401, 401]);
  t.is(a.fake.received.length, 1);
  a.assertNoLeaks(t);
});

test('a caller that dies mid-body cannot desync the upstream keep-alive connection for the next caller', async (t) => {
  const a = await adversary(t);
  const tok = a.tokens.openai.token;
  for (let round = 0; round < 5; round++) {
    // Declares 200 bytes, sends 60 that look like the end of a body plus a request, then vanishes.
    const socket = net.connect(a.app.port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    const partial = `{"model":"m"}\r\n\r\n${HIDDEN}`.slice(0, 60);
    socket.write(`POST /v1/proxy/v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Proxy-Token: ${tok}\r\nContent-Length: 200\r\n\r\n${partial}`);
    await sleep(60); // pacing: the partial request sits a moment before the cut
    socket.destroy();
    // The gateway has seen it vanish and closed its request (and the upstream leg) before the next caller comes.
    await quiet(a.app);
    // The next caller's request arrives whole and alone.
    const body = JSON.stringify({ model: 'next', round });
    const r = await call(a.w, a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': tok, 'content-type': 'application/json' }, body });
    t.is(r.status, 200, `round ${round}`);
    const got = a.fake.received.at(-1)!;
    t.is(got.body, body, `round ${round}: the upstream got exactly the next caller's body`);
    t.is(got.url, '/v1/chat/completions');
  }
  t.false(a.fake.received.some((r) => r.url.includes('smuggled')));
  // Every aborted request either never reached upstream or reached it aborted, never as a complete 200-byte body.
  for (const r of a.fake.received) t.not(r.body.length, 200);
  a.assertNoLeaks(t);
});
