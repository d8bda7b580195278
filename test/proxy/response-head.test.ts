/**
 * When the proxied response's head reaches the caller. It travels with the
 * first body bytes (one write, not two), but a stream whose first event is
 * slow still shows its status at once: the head is sent alone when no body
 * byte follows in the same turn. And an upstream that breaks right after its
 * head still gives the caller the status before the cut.
 */
import test from 'ava';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { adversary } from '../adversarial/_harness.js';

/** An upstream that answers each request with a chunked SSE head, then waits for `release()` to send one event. */
async function holdingUpstream(t: import('ava').ExecutionContext) {
  const waiting: Array<() => void> = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n');
      waiting.push(() => socket.end('d\r\ndata: hello\n\n\r\n0\r\n\r\n'));
    };
    socket.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => {
    for (const s of sockets) s.destroy();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, release: () => waiting.shift()?.() };
}

test('a stream whose first event has not come yet: the caller gets the status and headers first, then the event', async (t) => {
  const up = await holdingUpstream(t);
  const a = await adversary(t, { env: { KEYWARD_UPSTREAM_OPENAI: up.url } });
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(a.proxyUrl('v1/chat/completions'), { method: 'POST', headers: { 'x-proxy-token': a.tokens.openai.token, 'content-type': 'application/json' } }, resolve);
    req.on('error', reject);
    req.end('{"model":"m","stream":true}');
  });
  // The upstream still holds its first event: this head came alone.
  t.is(res.statusCode, 200);
  t.is(res.headers['content-type'], 'text/event-stream');
  t.truthy(res.headers['x-keyward-request-id']);
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (c: string) => (text += c));
  const ended = new Promise<void>((r) => res.on('end', () => r()));
  up.release();
  await ended;
  t.is(text, 'data: hello\n\n');
});
