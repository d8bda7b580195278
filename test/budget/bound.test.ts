/**
 * A budgeted request's worst case: the bound (src/pricing/spend-bound.ts) from the scanned body,
 * the scanner noticing media keys at any depth (escaped or cased otherwise too, never inside a
 * string), and, through real HTTP, the body stage reading a budgeted request's body to its end
 * before anything is forwarded (its whole length is the input bound).
 */
import test from 'ava';
import http from 'node:http';
import { JsonFieldScanner } from '../../src/gateway/wire/json-field-scanner.js';
import { BOUND_FIELDS, DECLARATION_FIELDS, INPUT_OVERHEAD_TOKENS, MEDIA_KEYS, requestBound } from '../../src/pricing/spend-bound.js';
import type { PriceEntry } from '../../src/pricing/prices.js';
import { formatUsd } from '../../src/pricing/money.js';
import { BufferBudget } from '../../src/gateway/entry/buffer-budget.js';
import { createCredential, createOrg, mintToken, startApp } from '../support/app.js';
import { providersDir } from '../support/providers-dir.js';
import { chat, startUsageUpstream, worstCase } from '../support/budget.js';
import { eventually } from '../support/wait.js';

// A bound without provider-side tools carries no fee (test/gate/tools.test.ts covers them).
const price = (p: Partial<PriceEntry> = {}): PriceEntry => ({ input: 2, cachedInput: 1, cacheWriteInput: 2, output: 8, source: 'test', ...p });

function scan(body: string) {
  const s = new JsonFieldScanner(BOUND_FIELDS, MEDIA_KEYS, undefined, DECLARATION_FIELDS);
  if (!s.write(Buffer.from(body)) || !s.end()) throw new Error(`not scanned: ${JSON.stringify(s.problem)}`);
  return { fields: s.found, bytes: Buffer.byteLength(body), mediaKeys: s.keysFound };
}

test('input: the body bytes plus the overhead, capped by the context window; output: the largest cap named, times the choices', (t) => {
  const body = '{"model":"m","max_tokens":100,"max_completion_tokens":250,"messages":[{"role":"user","content":"hi"}]}';
  t.deepEqual(requestBound(price(), scan(body)), { inputTokens: body.length + INPUT_OVERHEAD_TOKENS, outputTokens: 250, feeMicros: 0, media: false });
  t.deepEqual(requestBound(price({ contextWindow: 500 }), scan(body)), { inputTokens: 500, outputTokens: 250, feeMicros: 0, media: false });
  t.deepEqual(requestBound(price(), scan('{"model":"m","max_tokens":10,"n":3}')).valueOf(), { inputTokens: 35 + INPUT_OVERHEAD_TOKENS, outputTokens: 30, feeMicros: 0, media: false });
  const gemini = '{"contents":[],"generationConfig":{"maxOutputTokens":64,"candidateCount":2}}';
  t.deepEqual(requestBound(price(), scan(gemini)), { inputTokens: gemini.length + INPUT_OVERHEAD_TOKENS, outputTokens: 128, feeMicros: 0, media: false });
  const bedrock = '{"messages":[],"inferenceConfig":{"maxTokens":77}}';
  t.is((requestBound(price(), scan(bedrock)) as { outputTokens: number }).outputTokens, 77);
  t.is((requestBound(price(), scan('{"max_tokens":"90"}')) as { outputTokens: number }).outputTokens, 90, 'a digit string counts (lenient parsers coerce it)');
});

test('no cap: the model\'s largest output, else max_tokens_required; free output needs none', (t) => {
  t.deepEqual(requestBound(price({ maxOutput: 4096 }), scan('{"model":"m"}')), { inputTokens: 13 + INPUT_OVERHEAD_TOKENS, outputTokens: 4096, feeMicros: 0, media: false });
  t.deepEqual(requestBound(price({ maxOutput: 4096 }), scan('{"model":"m","max_tokens":null}')).valueOf(), { inputTokens: 31 + INPUT_OVERHEAD_TOKENS, outputTokens: 4096, feeMicros: 0, media: false });
  t.true('refusal' in requestBound(price(), scan('{"model":"m"}')));
  t.deepEqual(requestBound(price({ output: 0 }), scan('{"model":"e","input":"x"}')), { inputTokens: 25 + INPUT_OVERHEAD_TOKENS, outputTokens: 0, feeMicros: 0, media: false });
});

test('media or stored references anywhere: bounded by the context window, else refused', (t) => {
  const bodies = [
    '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}',
    '{"model":"m","max_tokens":5,"messages":[{"content":[{"type":"input_file","\\u0066ile_id":"file-1"}]}]}',
    '{"contents":[{"parts":[{"FileData":{"mimeType":"image/png","fileUri":"gs://b/x"}}]}],"generationConfig":{"maxOutputTokens":5}}',
    '{"model":"m","max_tokens":5,"previous_response_id":"resp_1","input":"more"}',
    '{"model":"m","max_tokens":5,"prompt":{"id":"pmpt_1"}}',
    '{"messages":[{"content":[{"image":{"format":"png","source":{"s3Location":{"uri":"s3://b/k"}}}}]}],"inferenceConfig":{"maxTokens":5}}',
  ];
  for (const body of bodies) {
    t.deepEqual(requestBound(price({ contextWindow: 128_000 }), scan(body)), { inputTokens: 128_000, outputTokens: 5, feeMicros: 0, media: true }, body);
    t.true('refusal' in requestBound(price(), scan(body)), body);
  }
  // The same words inside strings, or a legacy prompt string, are not media.
  const plain = '{"model":"m","max_tokens":5,"prompt":"see image_url and file_id","messages":[{"content":"\\"url\\": here"}]}';
  t.deepEqual(requestBound(price(), scan(plain)), { inputTokens: plain.length + INPUT_OVERHEAD_TOKENS, outputTokens: 5, feeMicros: 0, media: false });
});

test('declarations are not content: a tool whose schema names `url` or `source` (as coding agents\' fetch and read tools do) is bounded by the body, media in the messages still by the context window', (t) => {
  const tool = '{"name":"WebFetch","input_schema":{"type":"object","properties":{"url":{"type":"string"},"source":{"type":"string"}},"required":["url"]}}';
  const declared = [
    `{"model":"m","max_tokens":5,"tools":[${tool}],"messages":[{"role":"user","content":"fetch it"}]}`,
    '{"model":"m","max_tokens":5,"functions":[{"name":"f","parameters":{"properties":{"image_url":{}}}}],"messages":[]}',
    '{"model":"m","max_tokens":5,"response_format":{"type":"json_schema","json_schema":{"schema":{"properties":{"uri":{}}}}},"messages":[]}',
    '{"model":"m","max_output_tokens":5,"text":{"format":{"type":"json_schema","name":"n","schema":{"properties":{"url":{}}}}},"input":"x"}',
    '{"contents":[],"tools":[{"functionDeclarations":[{"name":"f","parameters":{"properties":{"fileUri":{}}}}]}],"generationConfig":{"maxOutputTokens":5,"responseSchema":{"properties":{"url":{}}}}}',
    '{"messages":[],"toolConfig":{"tools":[{"toolSpec":{"inputSchema":{"json":{"properties":{"source":{}}}}}}]},"inferenceConfig":{"maxTokens":5}}',
  ];
  for (const body of declared) t.deepEqual(requestBound(price({ contextWindow: 128_000 }), scan(body)), { inputTokens: body.length + INPUT_OVERHEAD_TOKENS, outputTokens: 5, feeMicros: 0, media: false }, body);
  // The same request with an image in its messages, or a top-level key after the tools: the context window.
  const media = [
    `{"model":"m","max_tokens":5,"tools":[${tool}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x/a.png"}}]}]}`,
    `{"model":"m","max_tokens":5,"tools":[${tool}],"previous_response_id":"resp_1"}`,
    `{"tools":[${tool}],"model":"m","max_tokens":5,"input":[{"type":"input_image","image_url":"https://x/a.png"}]}`,
    // A skipped key's value ends where it closes: an image in the next element of the same array still counts.
    '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"x","parameters":{"a":1}},[{"image_url":{"url":"u"}}]]}]}',
    '{"model":"m","max_tokens":5,"messages":[{"parameters":"p","content":[{"image_url":{"url":"u"}}]}]}',
  ];
  for (const body of media) t.deepEqual(requestBound(price({ contextWindow: 128_000 }), scan(body)), { inputTokens: 128_000, outputTokens: 5, feeMicros: 0, media: true }, body);
});

test('through HTTP: a budgeted body is read to its end before forwarding (an unbudgeted one is not), and its whole length is the bound', async (t) => {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const app = await startApp(t, { env: { KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url } });
  const org = await createOrg(app);
  const cred = await createCredential(app, org, 'priced', 'sk-priced-0123456789');
  const budgeted = await mintToken(app, org, cred, '1h', { budget_usd: '10' });

  const head = '{"model":"pm-1","max_tokens":5,"messages":[{"role":"user","content":"';
  const tail = 'x"}]}';
  const partial = (token: string) => {
    const req = http.request(`${app.url}/v1/proxy/v1/chat/completions`, { method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json' } });
    const status = new Promise<number>((resolve, reject) => {
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
    });
    req.write(head);
    return { req, status };
  };

  // Budgeted: nothing reaches the upstream while the body is incomplete. Once the gateway holds the bytes that came
  // (its scan has them: an event, not a pause that a busy machine could make too short), it has not forwarded.
  const b = partial(budgeted.token);
  const buffers = app.server.container.resolve(BufferBudget);
  await eventually(() => buffers.heldBy(budgeted.id) >= head.length, 'the gateway holds the partial body');
  t.is(up.started, 0, 'held until the body ends');
  b.req.end(tail);
  t.is(await b.status, 200);
  t.is(up.received.length, 1);

  // Unbudgeted, once this instance knows the org has no cap: a model-scoped token's request goes upstream
  // as soon as its model is read, before the body ends (no wait, no price lookup).
  const scoped = await mintToken(app, org, cred, '1h', { models: ['pm-1'] });
  const c = partial(scoped.token);
  await eventually(() => up.started >= 2, 'forwarded').catch(() => undefined);
  t.is(up.started, 2, 'forwarded before the body ended');
  c.req.end(tail);
  t.is(await c.status, 200);

  // The whole length is the bound: a long body under a budget that fits a short one is refused.
  const long = JSON.stringify({ model: 'pm-1', max_tokens: 5, messages: [{ role: 'user', content: 'y'.repeat(20_000) }] });
  const short = JSON.stringify({ model: 'pm-1', max_tokens: 5, messages: [{ role: 'user', content: 'y' }] });
  const small = await mintToken(app, org, cred, '1h', { budget_usd: formatUsd(worstCase(short, 5) + 1000) });
  const refused = await chat(app.url, small.token, long);
  t.is(refused.status, 429);
  t.is(refused.body.error.code, 'budget_exhausted');
  t.is((await chat(app.url, small.token, short)).status, 200);
});
