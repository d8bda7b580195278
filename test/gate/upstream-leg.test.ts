/**
 * The upstream leg answers only through the exchange (src/gateway/exchange.ts), and nothing on it calls back
 * into the gateway or the proxy: a provider file's usage reader that throws (while reading, or at the end) never
 * breaks the answer, and is told to the exchange once per request, logged with the request's id, its first line
 * with every secret of the credential masked (a reader sees the provider's own headers, unmasked).
 */
import test from 'ava';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { providersDir } from '../support/providers-dir.js';
import { send, type Transport } from '../support/transport.js';
import { quiet } from '../support/wait.js';

const KEY = 'sk-shaky-secret-0123456789abcdef';

// Its reader fails on purpose: at the first chunk on v1/scan, at the end on v1/end, each time quoting the
// provider's headers (which echo the key) and a second line.
const SHAKY = `export default {
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
