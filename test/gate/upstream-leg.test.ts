/**
 * The upstream leg and the stages answer only through the exchange (src/gateway/exit/exchange.ts), and nothing on
 * the leg calls back into the gateway or the proxy: a provider file's usage reader that throws (while reading,
 * or at the end) never breaks the answer, and is told to the exchange once per request, logged with the
 * request's id, its first line with every secret of the credential masked (a reader sees the provider's own
 * headers, unmasked). A stage that ends a stream later (a max_concurrent slot whose lease is lost) ends it
 * through the exchange's cut: an HTTP/2 caller gets RST_STREAM INTERNAL_ERROR, an HTTP/1.1 caller a closed
 * connection, never a clean end, and the upstream request is aborted.
 */
import test from 'ava';
import type { ServerResponse } from 'node:http';
import http2 from 'node:http2';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { providersDir } from '../support/providers-dir.js';
import { send, type Transport } from '../support/transport.js';
import { quiet } from '../support/wait.js';

const KEY = 'sk-shaky-secret-0123456789abcdef';

// Its reader fails on purpose: at the first chunk on v1/scan, at the end on v1/end, each time quoting the
// provider's headers (which echo the key) and a second line.
const SHAKY = `export default {
  apiVersion: 1,
  id: 'shaky',
  upstream: 'https://shaky.test',
  auth: { kind: 'header', header: 'x-shaky-key' },
  tokenIn: [{ header: 'x-shaky-key' }],
  usage: (response) => {
    const broke = () => new Error('reader broke on ' + JSON.stringify(response.headers) + '\\nsecond line');
    return {
      scan() { if (response.path.endsWith('scan')) throw broke(); },
      end() {
        if (response.path.endsWith('end')) throw broke();
        return { inputTokens: 1, outputTokens: 1, final: true };
      },
    };
  },
  routes: [{ method: 'POST', path: 'v1/scan' }, { method: 'POST', path: 'v1/end' }],
};
`;

test('a provider file\'s usage reader that throws: the answer reaches the caller whole; the exchange logs it once, the key masked', async (t) => {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  fake.handler = (req, res) => {
    const text = JSON.stringify({ ok: true });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-echo-key': String(req.headers['x-shaky-key']) });
    res.end(text);
  };
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, [], { 'shaky.js': SHAKY }), KEYWARD_UPSTREAM_SHAKY: fake.url } });
  const org = await createOrg(app);
  const { token } = await mintToken(app, org, await createCredential(app, org, 'shaky', KEY));
  for (const transport of ['h1', 'h2c'] as Transport[]) {
    for (const where of ['scan', 'end']) {
      const r = await send(app.url, { transport, path: `/v1/proxy/v1/${where}`, headers: { 'x-proxy-token': token }, body: '{}' });
      t.is(r.status, 200, `${transport} ${where}`);
      t.true(r.complete);
      t.deepEqual(r.body, { ok: true });
      await quiet(app);
      const id = r.headers['x-keyward-request-id'];
      const lines = app.logs.filter((l) => l.message === 'usage reader failed' && l.request_id === id);
      t.is(lines.length, 1, `${transport} ${where}: told once`);
      t.is(lines[0]!.provider, 'shaky');
      const err = (lines[0]!.err as { message: string }).message;
      t.regex(err, /^reader broke on /);
      t.false(err.includes('second line'), 'its first line only');
    }
  }
  t.false(app.logText().includes(KEY), 'the key the provider echoed never reaches a log line');
  t.true(app.logText().includes('x-echo-key'), 'the header was quoted, its value masked');
});

test('a max_concurrent slot whose lease is lost is cut through the exit: RST_STREAM INTERNAL_ERROR over h2c, a closed connection over HTTP/1.1', async (t) => {
  const clock = new ManualClock();
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const held: ServerResponse[] = [];
  fake.handler = (_req, res) => {
    held.push(res);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
  };
  const app = await startApp(t, { env: { KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_LEASE_TTL: '30s' }, clock, timers: clock });
  const org = await createOrg(app);
  const { token } = await mintToken(app, org, await createCredential(app, org, 'openai', 'sk-cut-0123456789abcdef'), '15m', { max_concurrent: 1 });
  const body = JSON.stringify({ model: 'gpt-4o-mini', messages: [], stream: true });
  for (const transport of ['h1', 'h2c'] as Transport[]) {
    let streaming!: () => void;
    const first = new Promise<void>((r) => (streaming = r));
    const answer = send(app.url, { transport, path: '/v1/proxy/v1/chat/completions', headers: { 'x-proxy-token': token }, body, onData: () => streaming() });
    await first;
    const upstream = held.at(-1)!;
    const upstreamGone = new Promise((r) => upstream.once('close', r));
    // The instance stalled past its lease (nothing renewed it in time): the slots' watch finds it lost.
    clock.advance(2 * app.config.leaseTtlMs);
    await clock.tick(250);
    const r = await answer;
    t.is(r.status, 200, transport);
    t.false(r.complete, `${transport}: a cut, never a clean end`);
    if (transport === 'h2c') t.is(r.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR, 'RST_STREAM INTERNAL_ERROR');
    await upstreamGone;
    t.false(upstream.writableEnded, `${transport}: the upstream request was aborted, not finished`);
  }
});
