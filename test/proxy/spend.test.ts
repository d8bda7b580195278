/**
 * Spend visibility: every forwarded request's reported usage is priced at the price book's prices
 * (cached input at its cached price) and shown as `spend_usd` on the token's, the credential's and
 * the organisation's usage, in the request's log line and in /metrics (labelled by the price table's
 * model name, never the caller's string). The fake provider answers in the OpenAI, Anthropic and
 * Gemini shapes; the test providers' tables price them (test/support/priced-providers.ts).
 */
import test from 'ava';
import type { ServerResponse } from 'node:http';
import { api, mintToken } from '../support/app.js';
import { FAKE_EVENTS, pricedFixture, PROVIDER, type PricedFixture, type Shape } from '../support/priced-providers.js';
import { quiet } from '../support/wait.js';

const EVENTS = FAKE_EVENTS;

/** The model each shape's requests name, and what one default fake answer (EVENTS output tokens) costs there, µ$. */
const CASES: Record<Shape, { model: string; micros: number }> = {
  // 11 input × 2.5 µ$ = 27.5 → 28 (rounded up), 7 output × 10 µ$ = 70. A dated name, priced by `spend-4o*`.
  openai: { model: 'spend-4o-2026-08-06', micros: 28 + 70 },
  // 13 × 3 = 39, 7 × 15 = 105.
  anthropic: { model: 'spend-claude-sonnet', micros: 39 + 105 },
  // 17 × 0.3 = 5.1 → 6, 7 × 2.5 = 17.5 → 18.
  gemini: { model: 'spend-gem-flash', micros: 6 + 18 },
};

/** The proxy path and body of a request of `shape` naming `model`. */
function call(shape: Shape, stream: boolean, model: string): [string, unknown] {
  switch (shape) {
    case 'openai': return ['v1/chat/completions', stream ? { model, messages: [], stream, stream_options: { include_usage: true } } : { model, messages: [] }];
    case 'anthropic': return ['v1/messages', { model, max_tokens: 5, messages: [], ...(stream ? { stream } : {}) }];
    case 'gemini': return [`v1beta/models/${model}:${stream ? 'streamGenerateContent?alt=sse' : 'generateContent'}`, { contents: [] }];
  }
}

/** One priced request of `shape` through the proxy (PricedFixture.spend); resolves with its request id. */
async function ok(t: import('ava').ExecutionContext, f: PricedFixture, shape: Shape, stream: boolean, model: string, token = f.tokens[shape].token): Promise<string> {
  const r = await f.spend(...call(shape, stream, model), token);
  t.is(r.status, 200);
  return r.headers['x-keyward-request-id'] as string;
}

const logLine = (f: PricedFixture, requestId: string) =>
  f.app.logs.find((l) => l.message === 'proxy request' && (l.keyward as Record<string, unknown>)?.request_id === requestId)?.keyward as Record<string, unknown> | undefined;

function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-z_]+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

for (const shape of ['openai', 'anthropic', 'gemini'] as const) {
  for (const stream of [true, false]) {
    test(`spend of ${shape} ${stream ? 'streamed' : 'JSON'} responses is priced and shown per token, credential, organisation and log line`, async (t) => {
      const f = await pricedFixture(t);
      const { model, micros } = CASES[shape];
      const ids = [await ok(t, f, shape, stream, model), await ok(t, f, shape, stream, model)];
      await quiet(f.app); // usage is recorded when the response closes
      const spent = `0.${String(2 * micros).padStart(6, '0')}`;
      const tok = await api(f.app, 'GET', `/v1/tokens/${f.tokens[shape].id}`, { token: f.org.token });
      t.like(tok.body.usage, { requests: 2, output_tokens: 2 * EVENTS, spend_usd: spent });
      const cred = await api(f.app, 'GET', `/v1/credentials/${f.credentials[shape]}`, { token: f.org.token });
      t.like(cred.body.usage, { requests: 2, spend_usd: spent });
      const usage = await api(f.app, 'GET', '/v1/usage', { token: f.org.token });
      t.deepEqual(usage.body.spend_usd, { used: spent, held: '0.00', limit: null }, 'no monthly limit set: nothing held');
      for (const id of ids) t.is(logLine(f, id)?.spend_usd, `0.${String(micros).padStart(6, '0')}`);
      // Another shape's token spent nothing.
      const other = shape === 'openai' ? 'gemini' : 'openai';
      t.is((await api(f.app, 'GET', `/v1/tokens/${f.tokens[other].id}`, { token: f.org.token })).body.usage.spend_usd, '0.00');
    });
  }
}

/** Answers like the provider, with `usage` of the test's choosing (cached input included). */
function answer(shape: 'openai' | 'gemini', stream: boolean, model: string, res: ServerResponse): void {
  const usage = shape === 'openai'
    ? { usage: { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, prompt_tokens_details: { cached_tokens: 800 } } }
    : { usageMetadata: { promptTokenCount: 1000, cachedContentTokenCount: 600, candidatesTokenCount: 40, totalTokenCount: 1040 } };
  const head = shape === 'openai'
    ? { id: 'chatcmpl-1', object: stream ? 'chat.completion.chunk' : 'chat.completion', model, choices: [{ index: 0, [stream ? 'delta' : 'message']: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }] }
    : { candidates: [{ content: { parts: [{ text: 'hi' }], role: 'model' }, finishReason: 'STOP', index: 0 }], modelVersion: model };
  if (!stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ...head, ...usage }));
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(`data: ${JSON.stringify(head)}\n\n`);
  res.write(`data: ${JSON.stringify(shape === 'openai' ? { id: 'chatcmpl-1', object: 'chat.completion.chunk', model, choices: [], ...usage } : { ...head, ...usage })}\n\n`);
  res.end(shape === 'openai' ? 'data: [DONE]\n\n' : '');
}

for (const shape of ['openai', 'gemini'] as const) {
  for (const stream of [true, false]) {
    test(`cached input is priced at the cached price (${shape}, ${stream ? 'streamed' : 'JSON'})`, async (t) => {
      const f = await pricedFixture(t);
      const model = CASES[shape].model;
      f.fake.handler = (_req, res) => answer(shape, stream, model, res);
      const id = await ok(t, f, shape, stream, model);
      await quiet(f.app); // usage is recorded when the response closes
      // openai: 200 plain × 2.5 + 800 cached × 1.25 + 100 output × 10 = 500 + 1000 + 1000 µ$ (all at the input price: 3500).
      // gemini: 400 plain × 0.3 + 600 cached × 0.075 + 40 output × 2.5 = 120 + 45 + 100 µ$ (all at the input price: 400).
      const spent = shape === 'openai' ? '0.0025' : '0.000265';
      t.is(logLine(f, id)?.spend_usd, spent);
      t.like((await api(f.app, 'GET', `/v1/tokens/${f.tokens[shape].id}`, { token: f.org.token })).body.usage, { input_tokens: 1000, spend_usd: spent });
    });
  }
}

test('the model the request names is priced when the gateway read it; the answer\'s model only when it did not', async (t) => {
  const f = await pricedFixture(t);
  // The answer claims the dearer model whatever was asked.
  f.fake.handler = (_req, res) => answer('openai', false, 'spend-4o', res);
  // A models-scoped token has the body's model read: `spend-mini` it is (200 × 0.15 + 800 × 0.075 + 100 × 0.6 = 30 + 60 + 60 µ$).
  const scoped = await mintToken(f.app, f.org, f.credentials.openai, '15m', { models: ['spend-*'] });
  const read = await ok(t, f, 'openai', false, 'spend-mini', scoped.token);
  // An unscoped token's request model is never read: the answer names `spend-4o` (2500 µ$).
  const unread = await ok(t, f, 'openai', false, 'spend-mini');
  await quiet(f.app); // usage is recorded when the response closes
  t.is(logLine(f, read)?.spend_usd, '0.00015');
  t.is(logLine(f, unread)?.spend_usd, '0.0025');
});

test('a response without usage, and a model without a price, spend nothing and log no spend; the request still counts', async (t) => {
  const f = await pricedFixture(t);
  f.fake.handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'x', object: 'chat.completion', model: 'spend-4o', choices: [] }));
  };
  const silent = await ok(t, f, 'openai', false, 'spend-4o');
  f.fake.handler = undefined;
  const unpriced = await ok(t, f, 'openai', false, 'mystery-model');
  await quiet(f.app); // usage is recorded when the response closes
  for (const id of [silent, unpriced]) {
    t.truthy(logLine(f, id));
    t.false('spend_usd' in logLine(f, id)!);
  }
  t.like(logLine(f, unpriced), { input_tokens: 11, output_tokens: EVENTS });
  t.like((await api(f.app, 'GET', `/v1/tokens/${f.tokens.openai.id}`, { token: f.org.token })).body.usage, { requests: 2, spend_usd: '0.00' });
});

test('/metrics counts spend by provider and the price table\'s model name; the caller\'s model strings become no spend label (only the unpriced counter\'s)', async (t) => {
  const f = await pricedFixture(t);
  const names: string[] = [];
  for (let i = 0; i < 12; i++) {
    const model = `spend-4o-snapshot-${i}-${Math.random().toString(36).slice(2, 10)}`;
    names.push(model);
    await ok(t, f, 'openai', i % 2 === 0, model);
  }
  for (let i = 0; i < 5; i++) {
    const model = `free-form-${i}-${Math.random().toString(36).slice(2, 10)}`;
    names.push(model);
    await ok(t, f, 'openai', false, model);
  }
  await ok(t, f, 'anthropic', true, CASES.anthropic.model);
  await quiet(f.app); // usage is recorded when the response closes
  const text = await (await fetch(`${f.app.url}/metrics`)).text();
  const lines = text.split('\n').filter((l) => l.startsWith('keyward_spend_usd_total{'));
  const labels = lines.map((l) => /model="([^"]*)"/.exec(l)![1]).sort();
  t.deepEqual(labels, ['spend-4o*', 'spend-claude*', 'unpriced']);
  t.true(Math.abs(sample(text, 'keyward_spend_usd_total', { provider: PROVIDER.openai, model: 'spend-4o*' })! - 12 * CASES.openai.micros / 1e6) < 1e-12);
  t.is(sample(text, 'keyward_spend_usd_total', { provider: PROVIDER.openai, model: 'unpriced' }), 0);
  t.true(Math.abs(sample(text, 'keyward_spend_usd_total', { provider: PROVIDER.anthropic, model: 'spend-claude*' })! - CASES.anthropic.micros / 1e6) < 1e-12);
  // Only keyward_unpriced_requests_total names what callers asked for (the contract: an operator must see which
  // unpriced models agents use), under its own bound (test/catalog/unpriced.test.ts); no other series does.
  const others = text.split('\n').filter((l) => !l.startsWith('keyward_unpriced_requests_total{')).join('\n');
  for (const name of names) t.false(others.includes(name), name);
  for (const name of names.slice(12)) t.true(text.includes(`keyward_unpriced_requests_total{provider="${PROVIDER.openai}",model="${name}",dimension=""} 1`), name);
  t.regex(text, /# HELP keyward_spend_usd_total /);
});

test('unit: the answer\'s model is read across chunk edges, only from the first bytes, and never from generated text', async (t) => {
  const { ResponseModelTap, READ_LIMIT } = await import('../../src/gateway/wire/response-model.js');
  const body = Buffer.from('data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"spend-4o-2026-08-06","choices":[]}\n\n');
  for (let cut = 1; cut < body.length; cut++) {
    const tap = new ResponseModelTap();
    tap.scan(body.subarray(0, cut));
    tap.scan(body.subarray(cut));
    t.is(tap.model, 'spend-4o-2026-08-06', `cut at ${cut}`);
  }
  const bytewise = new ResponseModelTap();
  for (let i = 0; i < body.length; i++) bytewise.scan(body.subarray(i, i + 1));
  t.is(bytewise.model, 'spend-4o-2026-08-06');
  const gemini = new ResponseModelTap();
  gemini.scan(Buffer.from('{"candidates":[],"usageMetadata":{"promptTokenCount":1},"modelVersion":"spend-gem-flash-001"}'));
  t.is(gemini.model, 'spend-gem-flash-001');
  // A model named inside generated text is escaped JSON: not a key.
  const escaped = new ResponseModelTap();
  escaped.scan(Buffer.from('{"choices":[{"message":{"content":"{\\"model\\": \\"cheap\\"}"}}],"model":"spend-4o"}'));
  t.is(escaped.model, 'spend-4o');
  // After a long echo of the request (the Responses API's `instructions`), in pieces.
  const echoed = new ResponseModelTap();
  const instructions = `{"object":"response","instructions":"${'be brief. '.repeat(3000)}","model":"spend-4o-2026"}`;
  for (let i = 0; i < instructions.length; i += 1000) echoed.scan(Buffer.from(instructions.slice(i, i + 1000)));
  t.is(echoed.model, 'spend-4o-2026');
  // Past the first READ_LIMIT bytes nothing is looked for (a long answer costs nothing more).
  const late = new ResponseModelTap();
  late.scan(Buffer.alloc(READ_LIMIT, 0x20));
  late.scan(Buffer.from('{"model":"spend-4o"}'));
  t.is(late.model, undefined);
});
