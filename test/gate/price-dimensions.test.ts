/**
 * Price dimensions (a provider's `priceDimensions`), per provider that has one, over HTTP/1.1 and h2c: under each
 * cap (a token's budget_usd, a token's tokens_per_minute, the organisation's spend_limit_usd) a request that sets
 * a dimension to a value with no price is refused 400 price_unknown naming the field and the value, and nothing
 * reaches the provider; a priced tier (OpenAI's Flex and Priority, Anthropic's fast mode and US-only inference)
 * is reserved and settled at its price, never lower, and a tier the response reports it was served at is charged
 * when dearer; without a cap the request is forwarded and counted in keyward_unpriced_requests_total.
 */
import test from 'ava';
import { priceAt } from '../../src/pricing/price-dimensions.js';
import { formatUsd } from '../../src/pricing/money.js';
import { priceEntry, usageCost, worstCaseCost, type PriceEntry } from '../../src/pricing/prices.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { api } from '../support/app.js';
import { billingGateway, type BilledProvider, type BillingGateway } from '../support/billing-gateway.js';
import { SHAPE_SPECS, type StreamShape } from '../support/billing-provider.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { send, type Transport } from '../support/transport.js';

const TRANSPORTS: readonly Transport[] = ['h1', 'h2c'];
const MAX = 2000;
const INPUT = 1000;
const OUTPUT = 700;

/** One request of `shape` with `extra` in its body (a model of its own, a dimension's field), or another model in its path. */
function request(shape: StreamShape, extra: Record<string, unknown>, pathModel?: string): { path: string; body: string } {
  const spec = SHAPE_SPECS[shape];
  const path = pathModel === undefined ? spec.path : spec.path.replace(spec.model, pathModel);
  return { path: `/v1/proxy/${path}`, body: JSON.stringify(spec.body(MAX, extra)) };
}

type Limited = Awaited<ReturnType<BillingGateway['newOrg']>>;

/** Tokens under each kind of cap for `provider`: a budget, a per-minute limit, and an organisation's monthly limit. */
async function cappedTokens(g: BillingGateway, provider: BilledProvider, limited: Limited, scopes: Record<string, unknown> = {}) {
  const minted = await api(g.apps[0]!.url, 'POST', '/v1/tokens', { token: limited.org.token, body: { credential_id: limited.credentials[provider], ttl: '1h', ...scopes } });
  return {
    budget_usd: await g.token(provider, { budget_usd: '1000', ...scopes }),
    tokens_per_minute: await g.token(provider, { tokens_per_minute: 100_000_000, ...scopes }),
    spend_limit_usd: { id: minted.body.id as string, token: minted.body.token as string },
  };
}

/** Each provider's fields that select a tier nothing prices (for the model the shape names, or the one given). */
const UNPRICED: Array<{ shape: StreamShape; extra: Record<string, unknown>; field: string; value: string; pathModel?: string }> = [
  { shape: 'openai-chat', extra: { service_tier: 'priority' }, field: 'service_tier', value: 'priority' },
  { shape: 'openai-responses', extra: { service_tier: 'flex' }, field: 'service_tier', value: 'flex' },
  { shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: 'scale' }, field: 'service_tier', value: 'scale' },
  { shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: { tier: 'priority' } }, field: 'service_tier', value: '(an object)' },
  { shape: 'openai-chat', extra: { service_tier: '__proto__' }, field: 'service_tier', value: '__proto__' },
  { shape: 'anthropic', extra: { speed: 'fast' }, field: 'speed', value: 'fast' },
  { shape: 'anthropic', extra: { model: 'claude-opus-5-5', speed: 'fast' }, field: 'speed', value: 'fast' },
  { shape: 'anthropic', extra: { inference_geo: 'us' }, field: 'inference_geo', value: 'us' },
  { shape: 'vertex-anthropic', extra: { speed: 'fast' }, field: 'speed', value: 'fast' },
  { shape: 'bedrock-invoke', extra: { speed: 'fast' }, field: 'speed', value: 'fast' },
  { shape: 'bedrock-converse', extra: { performanceConfig: { latency: 'optimized' } }, field: 'performanceConfig.latency', value: 'optimized' },
  // Audio output from a model with no audio prices (Gemini 2.5 Pro bills audio as text, and outputs none).
  { shape: 'gemini', pathModel: 'gemini-2.5-pro', extra: { generationConfig: { maxOutputTokens: MAX, responseModalities: ['AUDIO'] } }, field: 'generationConfig.responseModalities', value: '(an array)' },
  { shape: 'vertex-gemini', pathModel: 'gemini-2.5-pro', extra: { generationConfig: { maxOutputTokens: MAX, responseModalities: ['AUDIO'] } }, field: 'generationConfig.responseModalities', value: '(an array)' },
];

test('under every cap, a dimension set to a value with no price is 400 price_unknown naming the field and value; nothing is forwarded', async (t) => {
  const g = await billingGateway(t);
  const limited = await g.newOrg('limited');
  t.is((await api(g.apps[0]!.url, 'PATCH', '/v1/orgs/self', { token: limited.org.token, body: { spend_limit_usd: '1000' } })).status, 200);
  const tokens = new Map<BilledProvider, Awaited<ReturnType<typeof cappedTokens>>>();
  let n = 0;
  for (const c of UNPRICED) {
    const provider = SHAPE_SPECS[c.shape].provider;
    if (!tokens.has(provider)) tokens.set(provider, await cappedTokens(g, provider, limited));
    for (const [cap, token] of Object.entries(tokens.get(provider)!)) {
      for (const transport of TRANSPORTS) {
        const id = `refused-${n++}`;
        const { path, body } = request(c.shape, c.extra, c.pathModel);
        const r = await send(g.apps[0]!.url, { transport, path, body, headers: { 'x-proxy-token': token.token, 'x-bill-id': id } });
        const what = `${c.shape} ${c.field}=${c.value} under ${cap} over ${transport}`;
        t.is(r.status, 400, `${what}: ${r.text.slice(0, 300)}`);
        t.is(r.body?.error?.code, 'price_unknown', what);
        t.true(String(r.body?.error?.message).includes(`\`${c.field}\``), `${what}: the field is named`);
        t.true(String(r.body?.error?.message).includes(JSON.stringify(c.value)), `${what}: the value is named`);
        t.false(g.fake.bills.has(id), `${what}: nothing forwarded`);
      }
    }
  }
  // A route that is a mode of its own (Anthropic's message batches, half price later): refused under a cap too (a token
  // whose `paths` name the account-wide route).
  const batchTokens = await cappedTokens(g, 'anthropic', limited, { paths: ['v1/messages/batches'] });
  for (const [cap, token] of Object.entries(batchTokens)) {
    for (const transport of TRANSPORTS) {
      const batch = await send(g.apps[0]!.url, {
        transport, path: '/v1/proxy/v1/messages/batches', headers: { 'x-proxy-token': token.token, 'x-bill-id': `batch-${cap}-${transport}` },
        body: JSON.stringify({ requests: [{ custom_id: 'a', params: { model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } }] }),
      });
      t.is(batch.status, 400, `batch under ${cap} over ${transport}: ${batch.text}`);
      t.is(batch.body?.error?.code, 'price_unknown');
      t.regex(batch.body?.error?.message ?? '', /POST v1\/messages\/batches \(batch\) has no price/);
      t.false(g.fake.bills.has(`batch-${cap}-${transport}`));
    }
  }
  // The same requests with a standard value are forwarded (the dimension alone refused them).
  const ok = await send(g.apps[0]!.url, { transport: 'h1', ...request('openai-chat', { service_tier: 'default' }), headers: { 'x-proxy-token': tokens.get('openai')!.budget_usd.token, 'x-bill-id': 'std' } });
  t.is(ok.status, 200, ok.text);
  t.true(g.fake.bills.has('std'));
});

const priced = (provider: string, model: string): PriceEntry => priceEntry(model, shippedPrice(provider, model), 'test');
/** The price table names of the models below (exact names, or the alias's key). */
const at = (provider: string, model: string, tiers: string[]): PriceEntry => priceAt(priced(provider, model), tiers)!;

test('a priced tier is reserved and settled at its price, never lower; a dearer tier the response reports is charged', async (t) => {
  const g = await billingGateway(t);
  const budget = { openai: await g.token('openai', { budget_usd: '1000' }), anthropic: await g.token('anthropic', { budget_usd: '1000' }) };
  const usage = { inputTokens: INPUT, outputTokens: OUTPUT };
  const cases: Array<{ provider: 'openai' | 'anthropic'; shape: StreamShape; extra: Record<string, unknown>; price: PriceEntry; standard: PriceEntry; report?: object }> = [
    { provider: 'openai', shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: 'priority' }, price: at('openai', 'gpt-5', ['priority']), standard: priced('openai', 'gpt-5') },
    { provider: 'openai', shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: 'fast' }, price: at('openai', 'gpt-5', ['priority']), standard: priced('openai', 'gpt-5') },
    { provider: 'openai', shape: 'openai-responses', extra: { model: 'gpt-5.4', service_tier: 'priority' }, price: at('openai', 'gpt-5.4', ['priority']), standard: priced('openai', 'gpt-5.4') },
    { provider: 'openai', shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: 'flex' }, price: at('openai', 'gpt-5', ['flex']), standard: priced('openai', 'gpt-5') },
    // `auto` asks for the project's default tier: the response says Priority served it, and Priority is charged.
    { provider: 'openai', shape: 'openai-chat', extra: { model: 'gpt-5', service_tier: 'auto' }, report: { service_tier: 'priority' }, price: at('openai', 'gpt-5', ['priority']), standard: priced('openai', 'gpt-5') },
    { provider: 'anthropic', shape: 'anthropic', extra: { model: 'claude-opus-5', speed: 'fast' }, price: at('anthropic', 'claude-opus-5', ['fast']), standard: priced('anthropic', 'claude-opus-5') },
    { provider: 'anthropic', shape: 'anthropic', extra: { model: 'claude-opus-5-5', inference_geo: 'us' }, price: at('anthropic', 'claude-opus-5-5', ['us']), standard: priced('anthropic', 'claude-opus-5-5') },
    { provider: 'anthropic', shape: 'anthropic', extra: { model: 'claude-opus-5', speed: 'fast', inference_geo: 'us' }, price: at('anthropic', 'claude-opus-5', ['fast', 'us']), standard: priced('anthropic', 'claude-opus-5') },
  ];
  // The tiers as published: Priority at GPT-5's own price, Flex at half, fast mode at twice, US-only at 1.1x.
  t.like(cases[0]!.price, { input: 2_500_000, cachedInput: 250_000, output: 20_000_000 });
  t.like(cases[3]!.price, { input: 625_000, cachedInput: 62_500, output: 5_000_000 });
  t.like(cases[5]!.price, { input: 10_000_000, cachedInput: 1_000_000, cacheWriteInput: 12_500_000, output: 50_000_000 });
  t.like(cases[6]!.price, { input: 4_400_000, output: 22_000_000 });
  t.like(cases[7]!.price, { input: 11_000_000, output: 55_000_000 });
  let n = 0;
  for (const transport of TRANSPORTS) {
    for (const c of cases) {
      const id = `tier-${n++}`;
      const headers: Record<string, string> = { 'x-proxy-token': budget[c.provider].token, 'x-bill-id': id, 'x-bill-input': String(INPUT), 'x-bill-output': String(OUTPUT) };
      if (c.report) headers['x-bill-report'] = JSON.stringify(c.report);
      const r = await send(g.apps[0]!.url, { transport, ...request(c.shape, c.extra), headers });
      const what = `${JSON.stringify(c.extra)} over ${transport}`;
      t.is(r.status, 200, `${what}: ${r.text.slice(0, 200)}`);
      const charged = await g.chargeOf(String(r.headers['x-keyward-request-id']));
      t.is(charged, usageCost(c.price, usage), `${what}: charged at the tier's price`);
      if (!('flex' === c.extra.service_tier)) t.true(charged! > usageCost(c.standard, usage), `${what}: above the standard price`);
    }
  }
  // Reserved at the tier's price: a budget that holds the standard worst case but not Priority's refuses Priority.
  const { path, body } = request('openai-chat', { model: 'gpt-5', service_tier: 'priority' });
  const bound = Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS;
  const standardWorst = worstCaseCost(priced('openai', 'gpt-5'), bound, MAX);
  t.true(worstCaseCost(at('openai', 'gpt-5', ['priority']), bound, MAX) > standardWorst + 10);
  const tight = await g.token('openai', { budget_usd: formatUsd(standardWorst + 10) });
  for (const transport of TRANSPORTS) {
    const refused = await send(g.apps[0]!.url, { transport, path, body, headers: { 'x-proxy-token': tight.token, 'x-bill-id': `tight-${transport}` } });
    t.is(refused.status, 429, refused.text);
    t.is(refused.body?.error?.code, 'budget_exhausted');
    t.false(g.fake.bills.has(`tight-${transport}`));
  }
  const standard = await send(g.apps[0]!.url, { transport: 'h1', ...request('openai-chat', { model: 'gpt-5' }), headers: { 'x-proxy-token': tight.token, 'x-bill-id': 'tight-standard' } });
  t.is(standard.status, 200, standard.text);
});

test('a response that reports a tier with no price: under a cap charged its whole reservation; without one forwarded and counted', async (t) => {
  const g = await billingGateway(t);
  const capped = await g.token('openai', { budget_usd: '1000' });
  const free = await g.token('openai');
  const free2 = await g.token('anthropic', { paths: ['v1/messages/batches'] });
  const { path, body } = request('openai-chat', {});
  const reservation = worstCaseCost(priced('openai', 'gpt-4o-mini'), Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, MAX);
  for (const transport of TRANSPORTS) {
    const headers = { 'x-bill-id': `reported-${transport}`, 'x-bill-input': String(INPUT), 'x-bill-output': String(OUTPUT), 'x-bill-report': JSON.stringify({ service_tier: 'priority' }) };
    const r = await send(g.apps[0]!.url, { transport, path, body, headers: { ...headers, 'x-proxy-token': capped.token } });
    t.is(r.status, 200, r.text);
    t.is(await g.chargeOf(String(r.headers['x-keyward-request-id'])), reservation, `${transport}: fail closed at the reservation`);
    // No cap: forwarded as asked (the body is not read), priced at the standard price it has, counted as unpriced.
    const u = await send(g.apps[0]!.url, { transport, path, body: JSON.stringify(SHAPE_SPECS['openai-chat'].body(MAX, { service_tier: 'priority' })), headers: { ...headers, 'x-bill-id': `free-${transport}`, 'x-proxy-token': free.token } });
    t.is(u.status, 200, u.text);
    t.true(g.fake.bills.has(`free-${transport}`));
    // A route that is a mode of its own, without a cap: forwarded and counted under its dimension (and the model its
    // answer names, the fake's).
    const b = await send(g.apps[0]!.url, { transport, path: '/v1/proxy/v1/messages/batches', body: JSON.stringify({ requests: [] }), headers: { 'x-proxy-token': free2.token, 'x-bill-id': `batch-${transport}` } });
    t.is(b.status, 200, b.text);
  }
  const metrics = (await (await fetch(`${g.apps[0]!.url}/metrics`)).text()).split('\n').filter((l) => l.startsWith('keyward_unpriced_requests_total{'));
  t.true(metrics.includes('keyward_unpriced_requests_total{provider="openai",model="gpt-4o-mini",dimension="service_tier=priority"} 4'), metrics.join('\n'));
  t.true(metrics.includes('keyward_unpriced_requests_total{provider="anthropic",model="claude-sonnet-4-5*",dimension="batch"} 2'), metrics.join('\n'));
});
