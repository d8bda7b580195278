/**
 * Every built-in usage reader against responses shaped as each provider sends them
 * (OpenAI chat and Responses, Anthropic, Gemini, Bedrock Converse and InvokeModel,
 * Vertex's three publishers' shapes), streamed and not, with cache reads and writes,
 * cut at every chunk edge, and once through the gateway. What they report must meet TokenUsage's definition:
 * `inputTokens` is every input token, cache reads and writes included, so that
 * usageCost prices cached input as cached and the rest as input; a stream whose
 * end-of-message event arrived whole says so (`final`; a JSON body's finality is
 * its completeness, which the upstream leg knows, not the reader).
 */
import test from 'ava';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { applyUsage } from '../../src/gateway/wire/usage-scanner.js';
import { PROVIDER_READERS } from '../support/usage-readers.js';
import { priceEntry, usageCost } from '../../src/pricing/prices.js';
import type { TokenUsage, UsageShape } from '../../src/catalog/provider.js';
import { api } from '../support/app.js';
import { frame } from '../support/cloud/bedrock-fake.js';
import { proxyFixture } from '../support/proxy-fixture.js';
import { quiet } from '../support/wait.js';

const tick = () => new Promise((r) => setImmediate(r));

/** Feeds `body` to a fresh reader in pieces of `size` bytes (Bedrock's event-stream reader decodes asynchronously). */
async function read(shape: UsageShape, body: Buffer, size: number, path = 'v1/x', headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<TokenUsage | undefined> {
  const reader = PROVIDER_READERS[shape]({ status: 200, path, headers });
  for (let i = 0; i < body.length; i += size) {
    reader.scan(body.subarray(i, i + size));
    if (shape === 'bedrock') await tick();
  }
  return reader.end();
}

/** The same counts whatever the chunk sizes: one byte at a time, awkward primes, and the whole body at once. */
async function readAllWays(t: import('ava').ExecutionContext, shape: UsageShape, body: Buffer, expected: TokenUsage, path?: string, headers?: Record<string, string>): Promise<void> {
  for (const size of [1, 2, 3, 5, 7, 11, 31, 64, 100, body.length]) t.deepEqual(await read(shape, body, size, path, headers), expected, `${shape} ${path ?? ''} in ${size}-byte chunks`);
}

/** A stream's counts with its end-of-message event read whole. */
const final = (u: TokenUsage): TokenUsage => ({ ...u, final: true });

const sse = (events: Array<[string | undefined, unknown]>) => Buffer.from(events.map(([name, data]) => `${name ? `event: ${name}\n` : ''}data: ${JSON.stringify(data)}\n\n`).join(''));

// --- OpenAI: prompt_tokens already holds the cached tokens.
const OPENAI_USAGE = {
  prompt_tokens: 2006, completion_tokens: 300, total_tokens: 2306,
  prompt_tokens_details: { cached_tokens: 1920, audio_tokens: 0 },
  completion_tokens_details: { reasoning_tokens: 128, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
};
const OPENAI_EXPECTED: TokenUsage = { inputTokens: 2006, outputTokens: 300, cachedInputTokens: 1920 };

test('OpenAI chat completions: cached tokens are part of prompt_tokens, streamed and not', async (t) => {
  const plain = Buffer.from(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', model: 'gpt-4o', choices: [{ index: 0, message: { role: 'assistant', content: 'Hello "prompt_tokens": 999' } }], usage: OPENAI_USAGE }));
  await readAllWays(t, 'openai', plain, OPENAI_EXPECTED);
  const stream = Buffer.concat([
    sse([[undefined, { choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: null }], usage: null }], [undefined, { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: null }], [undefined, { choices: [], usage: OPENAI_USAGE }]]),
    Buffer.from('data: [DONE]\n\n'),
  ]);
  await readAllWays(t, 'openai', stream, final(OPENAI_EXPECTED));
});

test('OpenAI Responses API: input_tokens holds the cached ones; the *_details keys are not counts of their own', async (t) => {
  const usage = { input_tokens: 2006, input_tokens_details: { cached_tokens: 1920 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 128 }, total_tokens: 2306 };
  const stream = sse([
    ['response.created', { type: 'response.created', response: { id: 'resp_1', status: 'in_progress', usage: null } }],
    ['response.output_text.delta', { type: 'response.output_text.delta', delta: 'Hi' }],
    ['response.completed', { type: 'response.completed', response: { id: 'resp_1', status: 'completed', usage } }],
  ]);
  await readAllWays(t, 'openai', stream, final(OPENAI_EXPECTED));
});

test('DeepSeek (OpenAI shape): its prompt_cache_hit_tokens are read as cached', async (t) => {
  const body = Buffer.from(JSON.stringify({ usage: { prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050, prompt_cache_hit_tokens: 640, prompt_cache_miss_tokens: 360 } }));
  await readAllWays(t, 'openai', body, { inputTokens: 1000, outputTokens: 50, cachedInputTokens: 640 });
});

test('xAI chat completions: reasoning_tokens reported beside completion_tokens (total_tokens holds them) are output', async (t) => {
  const usage = { prompt_tokens: 32, completion_tokens: 9, total_tokens: 135, prompt_tokens_details: { text_tokens: 32, cached_tokens: 6 }, completion_tokens_details: { reasoning_tokens: 94 } };
  await readAllWays(t, 'openai', Buffer.from(JSON.stringify({ model: 'grok-4', usage })), { inputTokens: 32, outputTokens: 103, cachedInputTokens: 6 });
  const stream = Buffer.concat([sse([[undefined, { choices: [{ index: 0, delta: { content: 'hi' }, finish_reason: 'stop' }] }], [undefined, { choices: [], usage }]]), Buffer.from('data: [DONE]\n\n')]);
  await readAllWays(t, 'openai', stream, final({ inputTokens: 32, outputTokens: 103, cachedInputTokens: 6 }));
  // Gemini's OpenAI-compatible surface counts thinking in total_tokens only, too.
  await readAllWays(t, 'gemini', Buffer.from(JSON.stringify({ usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 50 } })), { inputTokens: 10, outputTokens: 40 });
});

// --- Anthropic: input_tokens leaves out cache reads and writes.
const ANTHROPIC_USAGE = {
  input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000,
  cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 0 }, output_tokens: 300, service_tier: 'standard',
};
const ANTHROPIC_EXPECTED: TokenUsage = { inputTokens: 3050, outputTokens: 300, cachedInputTokens: 2000, cacheWriteInputTokens: 1000 };
/** The same, as a response whose usage says which service tier served it (a price dimension's `reported`). */
const ANTHROPIC_REPORTED: TokenUsage = { ...ANTHROPIC_EXPECTED, reported: { service_tier: 'standard' } };

const anthropicStream = (finalUsage: object) => sse([
  ['message_start', { type: 'message_start', message: { id: 'msg_1', model: 'claude-sonnet-4-5', usage: { input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000, output_tokens: 1 } } }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'x' } }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: finalUsage }],
  ['message_stop', { type: 'message_stop' }],
]);

test('Anthropic: cache reads and writes are added to input_tokens, streamed and not', async (t) => {
  await readAllWays(t, 'anthropic', Buffer.from(JSON.stringify({ id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'ok' }], usage: ANTHROPIC_USAGE })), ANTHROPIC_REPORTED);
  // The classic stream: message_delta carries only the cumulative output.
  await readAllWays(t, 'anthropic', anthropicStream({ output_tokens: 300 }), final(ANTHROPIC_EXPECTED));
});

test('Anthropic stream: a final message_delta repeating the input counts is not counted twice', async (t) => {
  await readAllWays(t, 'anthropic', anthropicStream({ input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000, output_tokens: 300 }), final(ANTHROPIC_EXPECTED));
  // null counts in the delta (the API's "not reported") leave message_start's standing.
  await readAllWays(t, 'anthropic', anthropicStream({ input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: 300 }), final(ANTHROPIC_EXPECTED));
});

test('Anthropic without caching: input_tokens as it is, no cache fields invented', async (t) => {
  await readAllWays(t, 'anthropic', Buffer.from(JSON.stringify({ usage: { input_tokens: 13, output_tokens: 7 } })), { inputTokens: 13, outputTokens: 7 });
});

// --- Gemini: promptTokenCount holds the cached tokens; thinking is output billed beside candidatesTokenCount.
const GEMINI_USAGE = {
  promptTokenCount: 3000, candidatesTokenCount: 200, cachedContentTokenCount: 2048, thoughtsTokenCount: 150, totalTokenCount: 3350,
  promptTokensDetails: [{ modality: 'TEXT', tokenCount: 3000 }], cacheTokensDetails: [{ modality: 'TEXT', tokenCount: 2048 }],
};
const GEMINI_EXPECTED: TokenUsage = { inputTokens: 3000, outputTokens: 350, cachedInputTokens: 2048 };

test('Gemini: cached content inside promptTokenCount, thinking tokens counted as output, streamed and not', async (t) => {
  const candidate = (text: string) => ({ content: { parts: [{ text }], role: 'model' }, index: 0 });
  await readAllWays(t, 'gemini', Buffer.from(JSON.stringify({ candidates: [candidate('ok')], usageMetadata: GEMINI_USAGE, modelVersion: 'gemini-2.5-pro' })), GEMINI_EXPECTED);
  // Streamed: every chunk carries the counts so far; the last ones are the response's.
  const stream = sse([
    [undefined, { candidates: [candidate('a')], usageMetadata: { promptTokenCount: 3000, candidatesTokenCount: 1, cachedContentTokenCount: 2048, thoughtsTokenCount: 150, totalTokenCount: 3151 } }],
    [undefined, { candidates: [candidate('b')], usageMetadata: GEMINI_USAGE }],
  ]);
  await readAllWays(t, 'gemini', stream, GEMINI_EXPECTED);
});

test('Gemini: tool-use prompt tokens are input', async (t) => {
  const body = Buffer.from(JSON.stringify({ usageMetadata: { promptTokenCount: 100, toolUsePromptTokenCount: 40, candidatesTokenCount: 10, totalTokenCount: 150 } }));
  await readAllWays(t, 'gemini', body, { inputTokens: 140, outputTokens: 10 });
});

// --- Bedrock: every input count leaves out cache reads and writes.
const b64 = (event: unknown) => ({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') });
const EVENTSTREAM = { 'content-type': 'application/vnd.amazon.eventstream' };

test('Bedrock Converse: cacheReadInputTokens and cacheWriteInputTokens are added to inputTokens, streamed and not', async (t) => {
  // cacheDetails (writes by TTL) reuses `inputTokens`: never the input; its 1-hour element is the writes priced at the 1-hour rate.
  const usage = {
    inputTokens: 4, outputTokens: 285, totalTokens: 1772, cacheReadInputTokens: 300, cacheWriteInputTokens: 1183,
    cacheDetails: [{ inputTokens: 1000, ttl: '1h' }, { ttl: '5m', inputTokens: 183 }],
  };
  const expected: TokenUsage = { inputTokens: 1487, outputTokens: 285, cachedInputTokens: 300, cacheWriteInputTokens: 1183, cacheWrite1hInputTokens: 1000 };
  await readAllWays(t, 'bedrock', Buffer.from(JSON.stringify({ output: { message: { role: 'assistant', content: [{ text: 'ok' }] } }, stopReason: 'end_turn', usage, metrics: { latencyMs: 900 } })), expected, 'model/m/converse');
  const stream = Buffer.concat([
    frame('messageStart', { role: 'assistant' }),
    frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text: '"inputTokens": 999 in text' } }),
    frame('messageStop', { stopReason: 'end_turn' }),
    frame('metadata', { usage, metrics: { latencyMs: 900 } }),
  ]);
  await readAllWays(t, 'bedrock', stream, final(expected), 'model/m/converse-stream', EVENTSTREAM);
});

test('Bedrock InvokeModel (Anthropic-native): cache counts added, streamed with invocationMetrics and not', async (t) => {
  await readAllWays(t, 'bedrock', Buffer.from(JSON.stringify({ type: 'message', usage: ANTHROPIC_USAGE })), ANTHROPIC_EXPECTED, 'model/m/invoke');
  const stream = Buffer.concat([
    frame('chunk', b64({ type: 'message_start', message: { usage: { input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000, output_tokens: 1 } } })),
    frame('chunk', b64({ type: 'message_delta', usage: { output_tokens: 299 } })),
    frame('chunk', b64({
      type: 'message_stop',
      'amazon-bedrock-invocationMetrics': { inputTokenCount: 50, outputTokenCount: 300, invocationLatency: 900, firstByteLatency: 300, cacheReadInputTokenCount: 2000, cacheWriteInputTokenCount: 1000 },
    })),
  ]);
  await readAllWays(t, 'bedrock', stream, final(ANTHROPIC_EXPECTED), 'model/m/invoke-with-response-stream', EVENTSTREAM);
});

test('Bedrock count headers: the input header plus the cache headers make the input', async (t) => {
  const headers = {
    'content-type': 'application/json',
    'x-amzn-bedrock-input-token-count': '50', 'x-amzn-bedrock-output-token-count': '300',
    'x-amzn-bedrock-cache-read-input-token-count': '2000', 'x-amzn-bedrock-cache-write-input-token-count': '1000',
  };
  await readAllWays(t, 'bedrock', Buffer.from('{"some":"model-specific body"}'), ANTHROPIC_EXPECTED, 'model/m/invoke', headers);
});

// --- Vertex: the path says whose shape answers.
const VERTEX = 'v1/projects/my-project/locations/us-east5/publishers';

test('Vertex: Anthropic shape on publishers/anthropic (rawPredict and streamRawPredict), Gemini shape on generateContent, OpenAI shape on the OpenAI endpoint', async (t) => {
  await readAllWays(t, 'vertex', Buffer.from(JSON.stringify({ type: 'message', usage: ANTHROPIC_USAGE })), ANTHROPIC_REPORTED, `${VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:rawPredict`);
  await readAllWays(t, 'vertex', anthropicStream({ output_tokens: 300 }), final(ANTHROPIC_EXPECTED), `${VERTEX}/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict`);
  await readAllWays(t, 'vertex', Buffer.from(JSON.stringify({ usageMetadata: GEMINI_USAGE })), GEMINI_EXPECTED, `${VERTEX}/google/models/gemini-2.5-pro:generateContent`);
  await readAllWays(t, 'vertex', sse([[undefined, { usageMetadata: GEMINI_USAGE }]]), GEMINI_EXPECTED, `${VERTEX}/google/models/gemini-2.5-pro:streamGenerateContent`);
  await readAllWays(t, 'vertex', Buffer.from(JSON.stringify({ usage: OPENAI_USAGE })), OPENAI_EXPECTED, 'v1/projects/my-project/locations/us-central1/endpoints/openapi/chat/completions');
});

test('applyUsage carries every count into the request\'s usage, cache writes included; non-counts are ignored', (t) => {
  const usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  applyUsage(usage, { scan() {}, end: () => ({ inputTokens: 3050, outputTokens: 300, cachedInputTokens: 2000, cacheWriteInputTokens: 1000 }) }, { usageFailed: () => t.fail() });
  t.deepEqual(usage, ANTHROPIC_EXPECTED);
  const odd: TokenUsage = { inputTokens: 5, outputTokens: 6 };
  applyUsage(odd, { scan() {}, end: () => ({ inputTokens: -1, outputTokens: 1.5, cacheWriteInputTokens: Number.NaN }) }, { usageFailed: () => t.fail() });
  t.deepEqual(odd, { inputTokens: 5, outputTokens: 6 });
});

// --- Priced: cached input at its price, cache writes at theirs, the rest at input.
test('usageCost of each shape: cached input priced as cached, cache writes as writes', async (t) => {
  const price = priceEntry('test', { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15 }, 'test');
  // Anthropic: 50 plain × 3 + 2000 cached × 0.3 + 1000 written × 3.75 + 300 out × 15 (µ$, per token = USD/Mtok).
  t.is(usageCost(price, (await read('anthropic', anthropicStream({ output_tokens: 300 }), 13))!), 150 + 600 + 3750 + 4500);
  t.is(usageCost(price, (await read('bedrock', Buffer.from(JSON.stringify({ usage: ANTHROPIC_USAGE })), 13, 'model/m/invoke'))!), 150 + 600 + 3750 + 4500);
  // OpenAI: 86 plain × 3 + 1920 cached × 0.3 + 300 out × 15.
  t.is(usageCost(price, (await read('openai', Buffer.from(JSON.stringify({ usage: OPENAI_USAGE })), 13))!), 258 + 576 + 4500);
  // Gemini: 952 plain × 3 + 2048 cached × 0.3 (614.4 → 615, rounded up) + 350 out × 15.
  t.is(usageCost(price, (await read('gemini', Buffer.from(JSON.stringify({ usageMetadata: GEMINI_USAGE })), 13))!), 2856 + 615 + 5250);
});

test('through the gateway: an Anthropic response with cache reads and writes counts them as input, streamed and not', async (t) => {
  // An Anthropic upstream that reports caching, the way the API does.
  const upstream = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (JSON.parse(body).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(anthropicStream({ input_tokens: 50, cache_creation_input_tokens: 1000, cache_read_input_tokens: 2000, output_tokens: 300 }));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_1', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'ok' }], usage: ANTHROPIC_USAGE }));
      }
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => upstream.close(() => r())));
  const f = await proxyFixture(t, { env: { KEYWARD_UPSTREAM_ANTHROPIC: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}` } });
  for (const stream of [true, false]) {
    const res = await fetch(f.proxyUrl('v1/messages'), {
      method: 'POST',
      headers: { 'x-proxy-token': f.tokens.anthropic.token, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 300, stream, messages: [{ role: 'user', content: 'hi' }] }),
    });
    t.is(res.status, 200);
    await res.text();
  }
  await quiet(f.app); // onDone runs when the response closes
  const tok = await api(f.app, 'GET', `/v1/tokens/${f.tokens.anthropic.id}`, { token: f.org.token });
  t.like(tok.body.usage, { requests: 2, input_tokens: 2 * 3050, output_tokens: 2 * 300 });
});
