/**
 * examples/custom-usage: a provider whose responses report usage in a shape no built-in reader knows (`"meter":
 * {"in", "out"}`), read by the reader its file brings (written with @keyward/sdk alone). Its reader on its own,
 * fed every chunking of a JSON body and of a stream; then the provider loaded from its folder by a started
 * gateway, whose usage and spend come from that reader; and the core knows nothing of it (no file under src/
 * names it).
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TokenUsage, UsageReaderFactory } from '@keyward/sdk';
import { USAGE_READERS } from '../../src/gateway/wire/usage-scanner.js';
import { api, createCredential, createOrg, mintToken, ROOT, startApp } from '../support/app.js';
import { quiet } from '../support/wait.js';
import meterly from '../../examples/custom-usage/meterly.js';

const FOLDER = path.join(ROOT, 'examples', 'custom-usage');
const IN = 50_000;
const OUT = 20_000;

const jsonBody = (meter = `{"in": ${IN}, "out": ${OUT}}`): string => JSON.stringify({ text: 'The meter is read.' }).slice(0, -1) + `,"meter":${meter}}`;
const sse = [
  `data: ${JSON.stringify({ delta: 'meter readings: "in" and "out" are words here' })}\n\n`,
  `data: ${JSON.stringify({ delta: ' m"meter' })}\n\n`,
  `data: {"done":true,"meter":{"out":${OUT},"in":${IN}}}\n\n`,
].join('');

function read(body: string, chunk: number, eventStream: boolean): TokenUsage | undefined {
  const reader = (meterly.usage as UsageReaderFactory)({ status: 200, headers: {}, path: 'v1/generate', eventStream }, USAGE_READERS);
  const bytes = Buffer.from(body);
  for (let i = 0; i < bytes.length; i += chunk) reader.scan(bytes.subarray(i, i + chunk));
  return reader.end();
}

test('the reader reads the meter whatever the chunk edges; a stream is final once its meter arrived, a cut one is not', (t) => {
  for (let size = 1; size <= 40; size++) {
    t.deepEqual(read(jsonBody(), size, false), { inputTokens: IN, outputTokens: OUT }, `JSON in ${size}-byte chunks`);
    t.deepEqual(read(sse, size, true), { inputTokens: IN, outputTokens: OUT, final: true }, `stream in ${size}-byte chunks`);
    t.deepEqual(read(sse.slice(0, sse.lastIndexOf('}}')), size, true), { inputTokens: 0, outputTokens: 0 }, `stream cut inside its meter, ${size}-byte chunks`);
  }
  t.deepEqual(read(jsonBody('{"in": 1, "out": "many"}'), 7, false), { inputTokens: 0, outputTokens: 0 }, 'a meter that is not counts is not read');
});

test('loaded from its folder, the provider\'s usage and spend are read from its own shape, streamed and not', async (t) => {
  const upstream = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const stream = (JSON.parse(body) as { stream?: boolean }).stream === true;
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      res.end(stream ? sse : jsonBody());
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  t.teardown(() => upstream.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: FOLDER, KEYWARD_UPSTREAM_METERLY: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` } });
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'meterly', 'mtr-example-key-0123456789');
  const token = await mintToken(app, org, credential, '15m', { budget_usd: '10.00' });
  for (const stream of [false, true]) {
    const res = await fetch(`${app.url}/v1/proxy/v1/generate`, {
      method: 'POST',
      headers: { 'x-proxy-token': token.token, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'meter-large', max_tokens: 1000, stream, prompt: 'hi' }),
    });
    t.is(res.status, 200);
    await res.text();
  }
  await quiet(app);
  // Each response: 50,000 input tokens at $2/M and 20,000 output at $10/M, $0.30.
  const tok = await api(app, 'GET', `/v1/tokens/${token.id}`, { token: org.token });
  t.deepEqual(tok.body.usage, { requests: 2, input_tokens: 2 * IN, output_tokens: 2 * OUT, spend_usd: '0.60' });
});

test('the core knows nothing of the example: no file under src/ names its provider or its shape', (t) => {
  const files = (readdirSync(path.join(ROOT, 'src'), { recursive: true }) as string[]).filter((f) => /\.(ts|js|json)$/.test(f));
  t.true(files.length > 100);
  const naming = files.filter((f) => /meterly|"meter"/.test(readFileSync(path.join(ROOT, 'src', f), 'utf8')));
  t.deepEqual(naming, []);
});
