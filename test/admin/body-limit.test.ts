/**
 * KEYWARD_MAX_ADMIN_BODY (default 64kb) on raw sockets: an admin body over it
 * is refused with 413 payload_too_large as soon as its size is known (by
 * content-length before a byte of it is sent; chunked the moment the count
 * passes it) and the connection is closed rather than drained, so the rest is
 * never read. Proxy bodies stay under KEYWARD_MAX_BODY.
 */
import test from 'ava';
import net from 'node:net';
import { loadConfig } from '../../src/settings/config.js';
import { api, createOrg, startApp } from '../support/app.js';
import { proxyFixture } from '../support/proxy-fixture.js';

const LIMIT = 64 * 1024;

interface RawExchange {
  /** Everything the server sent. */
  text: string;
  /** The server closed (or ended) the connection. */
  closed: boolean;
}

/**
 * Sends `head` then `body` on a raw socket (a head request() cannot write) and waits, sending nothing more, until the server has answered and closed, or
 * `waitMs` passes. The request is never finished: an answer can only come from a server that did not need the rest.
 */
function exchange(port: number, head: string, body: Buffer, waitMs = 30_000): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let closed = false;
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(done, waitMs);
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('end', () => {
      closed = true;
      done();
    });
    socket.on('close', () => {
      closed = true;
      done();
    });
    socket.on('error', () => {});
    socket.write(head);
    if (body.length > 0) socket.write(body);
  });
}

const status = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
const errorCode = (text: string): string | undefined => /"code":"([a-z_]+)"/.exec(text)?.[1];

test('declared content-length over 64kb → 413 before a byte of the body is sent, and the connection closes', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  for (const [path, auth] of [['/v1/credentials', org.token], ['/v1/tokens', org.token], ['/v1/orgs', 'test-admin-token-0123456789abcdef']] as const) {
    for (const declared of [LIMIT + 1, 30 * 1024 * 1024]) {
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`;
      const r = await exchange(app.port, head, Buffer.alloc(0));
      t.is(status(r.text), 413, `${path} ${declared}: ${r.text.slice(0, 120)}`);
      t.is(errorCode(r.text), 'payload_too_large');
      t.regex(r.text, /\r\nconnection: close\r\n/i);
      t.true(r.closed, `${path}: the connection was closed, not kept waiting for the body`);
    }
  }
  // `Expect: 100-continue` over the admin limit: the body is never invited.
  const expect = await exchange(app.port, `POST /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.token}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`, Buffer.alloc(0));
  t.is(status(expect.text), 413, expect.text.slice(0, 120));
  t.false(expect.text.includes('100 Continue'));
  t.true(expect.closed);
  // Nothing was created.
  t.is((await api(app, 'GET', '/v1/credentials', { token: org.token })).body.data.length, 0);
});

test('chunked: 413 the moment the count passes 64kb, without the rest of the body, and the connection closes', async (t) => {
  const app = await startApp(t);
  const org = await createOrg(app);
  const head = `POST /v1/credentials HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${org.token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`;
  // limit + 1 bytes in 16 KiB chunks, and no terminating chunk: a reader waiting for the end would never answer.
  const pieces: Buffer[] = [];
  let sent = 0;
  while (sent <= LIMIT) {
    const size = Math.min(16 * 1024, LIMIT + 1 - sent);
    pieces.push(Buffer.from(`${size.toString(16)}\r\n${'x'.repeat(size)}\r\n`));
    sent += size;
  }
  const r = await exchange(app.port, head, Buffer.concat(pieces));
  t.is(status(r.text), 413, r.text.slice(0, 200));
  t.is(errorCode(r.text), 'payload_too_large');
  t.regex(r.text, /\r\nconnection: close\r\n/i);
  t.true(r.closed, 'closed rather than drained');

  // Exactly at the limit is read and judged on its content (here: not a credential), not refused for size.
  const fits = JSON.stringify({ provider: 'openai', api_key: 'sk-x', pad: '' }).length;
  const atLimit = JSON.stringify({ provider: 'openai', api_key: 'sk-x', pad: 'p'.repeat(LIMIT - fits) });
  t.is(Buffer.byteLength(atLimit), LIMIT);
  const judged = await api(app, 'POST', '/v1/credentials', { token: org.token, rawBody: atLimit, headers: { 'content-type': 'application/json' } });
  t.is(judged.status, 400);
  t.is(judged.body.error.code, 'invalid_request');
  t.is(judged.body.error.param, 'pad');
  t.is((await api(app, 'GET', '/healthz')).status, 200);
});

test('KEYWARD_MAX_ADMIN_BODY is configurable and does not limit proxy bodies (KEYWARD_MAX_BODY does)', async (t) => {
  const f = await proxyFixture(t, { env: { KEYWARD_MAX_ADMIN_BODY: '2kb' } });
  const big = JSON.stringify({ provider: 'openai', api_key: 'sk-' + 'a'.repeat(3000) });
  const refused = await api(f.app, 'POST', '/v1/credentials', { token: f.org.token, rawBody: big, headers: { 'content-type': 'application/json' } });
  t.is(refused.status, 413);
  t.is(refused.body.error.code, 'payload_too_large');
  const proxied = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x'.repeat(200 * 1024) }] });
  const r = await fetch(f.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': f.tokens.openai.token, 'content-type': 'application/json' }, body: proxied });
  await r.text();
  t.is(r.status, 200);
  t.is(f.fake.received.at(-1)!.body, proxied);
  for (const name of ['KEYWARD_MAX_ADMIN_BODY', 'KEYWARD_BUFFER_BUDGET', 'KEYWARD_BUFFER_PER_TOKEN', 'KEYWARD_BUFFER_PER_ORG']) {
    t.throws(() => loadConfig({ [name]: 'lots' }), { message: new RegExp(`^${name}: expected a size`) });
    t.throws(() => loadConfig({ [name]: '0kb' }), { message: new RegExp(`^${name}: expected a size`) });
  }
  t.is(loadConfig({}).maxAdminBody, LIMIT);
  t.is(loadConfig({}).bufferBudget, 64 * 1024 * 1024);
  t.is(loadConfig({ KEYWARD_BUFFER_BUDGET: '256kb' }).bufferBudget, 256 * 1024);
  t.is(loadConfig({}).bufferPerOrg, 16 * 1024 * 1024, 'an organisation\'s share: a quarter of the budget by default');
  t.is(loadConfig({ KEYWARD_BUFFER_BUDGET: '256kb' }).bufferPerOrg, 64 * 1024);
  t.is(loadConfig({ KEYWARD_BUFFER_BUDGET: '256kb', KEYWARD_BUFFER_PER_ORG: '200kb' }).bufferPerOrg, 200 * 1024);
});
