/**
 * Every billed usage field maps to a price, through the gateway over HTTP/1.1 and h2c and in the readers alone:
 * Anthropic's 5-minute and 1-hour cache writes (`cache_creation.ephemeral_*_input_tokens`, Bedrock's `cacheDetails`)
 * at 1.25x and 2x input; audio input and output (OpenAI's details objects, Gemini's modality lists, a transcription's
 * usage) at the model's audio prices; reasoning inside the output. A usage field the reader does not know, on a
 * capped request, settles at the reservation (fail closed) and is counted in keyward_unknown_usage_total; without a
 * cap it is counted and charged what was read.
 */
import test from 'ava';
import { priceEntry, unpricedUsage, usageCost, worstCaseCost, type PriceEntry } from '../../src/pricing/prices.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import type { TokenUsage, UsageShape } from '../../src/catalog/provider.js';
import { PROVIDER_READERS } from '../support/usage-readers.js';
import { billingGateway } from '../support/billing-gateway.js';
import { SHAPE_SPECS, type StreamShape } from '../support/billing-provider.js';
import { frame } from '../support/cloud/bedrock-fake.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { send, type Transport } from '../support/transport.js';

const TRANSPORTS: readonly Transport[] = ['h1', 'h2c'];
const MAX = 2000;
const priced = (provider: string, model: string): PriceEntry => priceEntry(model, shippedPrice(provider, model), 'test');

/** What a built-in reader makes of `body` (Bedrock's event stream decodes asynchronously). */
async function read(shape: UsageShape, body: Buffer, path = 'v1/x', headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<TokenUsage | undefined> {
  const reader = PROVIDER_READERS[shape]({ status: 200, path, headers });
  for (let i = 0; i < body.length; i += 7) {
    reader.scan(body.subarray(i, i + 7));
    await new Promise((r) => setImmediate(r));
  }
  return reader.end();
}

test('the Claude family prices a 1-hour cache write at twice the input, a 5-minute one at 1.25x, on every platform', (t) => {
  for (const [provider, model] of [['anthropic', 'claude-sonnet-4-5*'], ['anthropic', 'claude-opus-5-5'], ['vertex', 'claude-opus-5-5'], ['bedrock', 'us.anthropic.claude-opus-5-5*'], ['bedrock', 'global.anthropic.claude-haiku-4-5-20251001*']] as const) {
    const p = priced(provider, model);
    t.is(p.cacheWrite1hInput, 2 * p.input, `${provider} ${model}: 1 hour`);
    t.is(p.cacheWriteInput, 1.25 * p.input, `${provider} ${model}: 5 minutes`);
    if (p.longContext) t.is(p.longContext.cacheWrite1hInput, 2 * p.longContext.input, `${provider} ${model}: long context, 1 hour`);
  }
  const sonnet = priced('anthropic', 'claude-sonnet-4-5*');
  // 1,000 written for 5 minutes and 2,000 for an hour, of 3,050 input.
  const usage: TokenUsage = { inputTokens: 3050, outputTokens: 100, cacheWriteInputTokens: 3000, cacheWrite1hInputTokens: 2000 };
  t.is(usageCost(sonnet, usage), 150 + 3750 + 12_000 + 1500);
  t.is(usageCost(sonnet, { ...usage, cacheWrite1hInputTokens: 0 }), 150 + 11_250 + 1500);
  t.true(usageCost(sonnet, usage) <= worstCaseCost(sonnet, 3050, 100), 'the worst case bounds a prompt written whole for an hour');
  t.deepEqual(unpricedUsage(sonnet, usage), []);
  // A price without a 1-hour rate (an operator's override) cannot price such writes: named, so the request fails closed.
  const bare = priceEntry('m', { input: 3, cacheWriteInput: 3.75, output: 15 }, 'KEYWARD_PRICES');
  t.deepEqual(unpricedUsage(bare, usage), ['cache_write_1h']);
  t.deepEqual(unpricedUsage(bare, { ...usage, cacheWrite1hInputTokens: 0 }), []);
});

test('readers: 1-hour writes, audio on its side, reasoning inside the output, transcription usage; unknown token counts named', async (t) => {
  const anthropic = await read('anthropic', Buffer.from(JSON.stringify({ usage: {
    input_tokens: 50, cache_read_input_tokens: 0, cache_creation_input_tokens: 3000, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 }, output_tokens: 100, service_tier: 'standard',
  } })));
  t.like(anthropic, { inputTokens: 3050, cacheWriteInputTokens: 3000, cacheWrite1hInputTokens: 2000 });
  t.is(anthropic?.unknownFields, undefined);
  const bedrock = await read('bedrock', Buffer.concat([frame('metadata', { usage: { inputTokens: 50, outputTokens: 10, totalTokens: 3060, cacheWriteInputTokens: 3000, cacheDetails: [{ ttl: '5m', inputTokens: 1000 }, { inputTokens: 2000, ttl: '1h' }] } })]), 'model/m/converse-stream', { 'content-type': 'application/vnd.amazon.eventstream' });
  t.like(bedrock, { inputTokens: 3050, cacheWriteInputTokens: 3000, cacheWrite1hInputTokens: 2000 });
  const chat = await read('openai', Buffer.from(JSON.stringify({ usage: {
    prompt_tokens: 1000, completion_tokens: 700, total_tokens: 1700,
    prompt_tokens_details: { cached_tokens: 100, audio_tokens: 600 }, completion_tokens_details: { reasoning_tokens: 50, audio_tokens: 500, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  } })));
  t.deepEqual(chat, { inputTokens: 1000, outputTokens: 700, cachedInputTokens: 100, audioInputTokens: 600, audioOutputTokens: 500 });
  const transcription = await read('openai', Buffer.from(JSON.stringify({ text: 'hello', usage: { type: 'tokens', input_tokens: 120, input_token_details: { text_tokens: 20, audio_tokens: 100 }, output_tokens: 30, total_tokens: 150 } })));
  t.deepEqual(transcription, { inputTokens: 120, outputTokens: 30, audioInputTokens: 100 });
  const gemini = await read('gemini', Buffer.from(JSON.stringify({ usageMetadata: {
    promptTokenCount: 1000, candidatesTokenCount: 200, thoughtsTokenCount: 50, totalTokenCount: 1250,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: 400 }, { modality: 'AUDIO', tokenCount: 600 }], candidatesTokensDetails: [{ modality: 'TEXT', tokenCount: 200 }],
  } })));
  t.deepEqual(gemini, { inputTokens: 1000, outputTokens: 250, audioInputTokens: 600 }, 'thinking is output, audio input apart');
  // A token count no shape knows: named; a request's limit echoed back (the Responses API) is not usage.
  const unknown = await read('openai', Buffer.from(JSON.stringify({ max_output_tokens: 500, usage: { input_tokens: 10, output_tokens: 5, input_tokens_details: { cached_tokens: 0 }, video_tokens: 99, output_tokens_details: { reasoning_tokens: 2 } } })));
  t.deepEqual(unknown?.unknownFields, ['video_tokens']);
  const anthropicUnknown = await read('anthropic', Buffer.from(JSON.stringify({ usage: { input_tokens: 10, output_tokens: 5, cache_creation: { ephemeral_24h_input_tokens: 7 } } })));
  t.deepEqual(anthropicUnknown?.unknownFields, ['ephemeral_24h_input_tokens']);
  // Prices: audio tokens at the model's audio prices (Gemini 2.5 Flash's audio input costs more than its text).
  const flash = priced('gemini', 'gemini-2.5-flash');
  t.is(usageCost(flash, gemini!), 120 + 600 + 625);
  const realtime = priced('openai', 'gpt-4o-realtime-preview');
  t.is(usageCost(realtime, chat!), Math.ceil(300 * 5) + Math.ceil(100 * 2.5) + 600 * 40 + 200 * 20 + 500 * 80);
});

/** The final usage event's extra fields, as the fake provider puts them (x-bill-report). */
interface Case { shape: StreamShape; model?: string; report: Record<string, unknown>; usage: (input: number, output: number) => TokenUsage; price: PriceEntry }

test('through the gateway: 1-hour writes and audio are charged at their prices over HTTP/1.1 and h2c', async (t) => {
  const g = await billingGateway(t);
  const tokens = { anthropic: await g.token('anthropic', { budget_usd: '1000' }), vertex: await g.token('vertex', { budget_usd: '1000' }), gemini: await g.token('gemini', { budget_usd: '1000' }) };
  const INPUT = 50;
  const OUTPUT = 300;
  const writes = { cache_creation_input_tokens: 3000, cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 } };
  const cases: Case[] = [
    { shape: 'anthropic', report: writes, price: priced('anthropic', 'claude-sonnet-4-5*'), usage: (i, o) => ({ inputTokens: i + 3000, outputTokens: o, cacheWriteInputTokens: 3000, cacheWrite1hInputTokens: 2000 }) },
    { shape: 'vertex-anthropic', report: writes, price: priced('vertex', 'claude-sonnet-4-5*'), usage: (i, o) => ({ inputTokens: i + 3000, outputTokens: o, cacheWriteInputTokens: 3000, cacheWrite1hInputTokens: 2000 }) },
    {
      shape: 'gemini', report: { usageMetadata: { promptTokensDetails: [{ modality: 'TEXT', tokenCount: 10 }, { modality: 'AUDIO', tokenCount: 40 }] } },
      price: priced('gemini', 'gemini-2.5-flash'), usage: (i, o) => ({ inputTokens: i, outputTokens: o, audioInputTokens: 40 }),
    },
  ];
  let n = 0;
  for (const transport of TRANSPORTS) {
    for (const c of cases) {
      const spec = SHAPE_SPECS[c.shape];
      const provider = spec.provider as keyof typeof tokens;
      const headers = { 'x-proxy-token': tokens[provider].token, 'x-bill-id': `f-${n++}`, 'x-bill-input': String(INPUT), 'x-bill-output': String(OUTPUT), 'x-bill-report': JSON.stringify(c.report) };
      const r = await send(g.apps[0]!.url, { transport, path: `/v1/proxy/${spec.path}`, body: JSON.stringify(spec.body(MAX)), headers });
      t.is(r.status, 200, r.text.slice(0, 200));
      const charged = await g.chargeOf(String(r.headers['x-keyward-request-id']));
      const usage = c.usage(INPUT, OUTPUT);
      t.is(charged, usageCost(c.price, usage), `${c.shape} over ${transport}`);
      t.true(charged! > usageCost(c.price, { ...usage, cacheWrite1hInputTokens: 0, audioInputTokens: 0 }), `${c.shape} over ${transport}: above the cheaper reading`);
    }
  }
});

test('a usage field the reader does not know: a capped request settles at its reservation and it is counted; an uncapped one is counted', async (t) => {
  const g = await billingGateway(t);
  const capped = await g.token('openai', { budget_usd: '1000' });
  const free = await g.token('openai');
  const spec = SHAPE_SPECS['openai-chat'];
  const body = JSON.stringify(spec.body(MAX));
  const reservation = worstCaseCost(priced('openai', 'gpt-4o-mini'), Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, MAX, false);
  const report = JSON.stringify({ usage: { prompt_tokens_details: { cached_tokens: 0, video_tokens: 12_345 } } });
  for (const transport of TRANSPORTS) {
    const headers = { 'x-bill-input': '100', 'x-bill-output': '50', 'x-bill-report': report };
    const r = await send(g.apps[0]!.url, { transport, path: `/v1/proxy/${spec.path}`, body, headers: { ...headers, 'x-proxy-token': capped.token, 'x-bill-id': `u-${transport}` } });
    t.is(r.status, 200, r.text);
    t.is(await g.chargeOf(String(r.headers['x-keyward-request-id'])), reservation, `${transport}: fail closed`);
    const u = await send(g.apps[0]!.url, { transport, path: `/v1/proxy/${spec.path}`, body, headers: { ...headers, 'x-proxy-token': free.token, 'x-bill-id': `f-${transport}` } });
    t.is(u.status, 200, u.text);
    t.is(await g.chargeOf(String(u.headers['x-keyward-request-id'])), usageCost(priced('openai', 'gpt-4o-mini'), { inputTokens: 100, outputTokens: 50, cachedInputTokens: 0 }), `${transport}: no cap, what was read`);
    // The same response without the unknown field is charged its usage, under the cap too.
    const known = await send(g.apps[0]!.url, { transport, path: `/v1/proxy/${spec.path}`, body, headers: { 'x-bill-input': '100', 'x-bill-output': '50', 'x-proxy-token': capped.token, 'x-bill-id': `k-${transport}` } });
    t.is(await g.chargeOf(String(known.headers['x-keyward-request-id'])), usageCost(priced('openai', 'gpt-4o-mini'), { inputTokens: 100, outputTokens: 50 }));
  }
  const metrics = (await (await fetch(`${g.apps[0]!.url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('keyward_unknown_usage_total{'));
  t.deepEqual(metrics, ['keyward_unknown_usage_total{provider="openai",field="video_tokens"} 4']);
});
