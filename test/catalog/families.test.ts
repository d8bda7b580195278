/**
 * KEYWARD_UNPRICED: a model's family per provider (pricing/families.ts), the
 * family_max rule in the PriceBook (an unlisted model priced at its family's
 * dearest listed price, field by field; a listed one never by the rule; no family
 * or an empty one: unpriced), a property test that the family's price is never
 * below any member's on any field or any usage, and the variable read at start.
 */
import test from 'ava';
import { familyOf, upToVersion } from '../../src/pricing/families.js';
import { dearestOf, PriceBook, priceEntry, usageCost, worstCaseCost, type PriceTables } from '../../src/pricing/prices.js';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { ADMIN_TOKEN } from '../support/app.js';

test('families: each provider\'s names up to their version', (t) => {
  const cases: Array<[string, string, string | undefined]> = [
    ['anthropic', 'claude-opus-5-5', 'claude-opus'], ['anthropic', 'claude-opus-4-1-20250805', 'claude-opus'],
    ['anthropic', 'claude-opus-4-5*', 'claude-opus'], ['anthropic', 'claude-sonnet-5', 'claude-sonnet'],
    ['anthropic', 'claude-3-7-sonnet-20250219', 'claude-sonnet'], ['anthropic', 'claude-3-haiku-20240307', 'claude-haiku'],
    ['anthropic', 'claude-fable-5-1', 'claude-fable'], ['anthropic', 'claude-opus', undefined], ['anthropic', 'claude-next', undefined],
    ['anthropic', 'claude-opus-latest', undefined], ['anthropic', 'gpt-5', undefined],
    ['openai', 'gpt-5', 'gpt-5'], ['openai', 'gpt-5.1-codex-max', 'gpt-5'], ['openai', 'gpt-5-mini-2025-08-07', 'gpt-5'],
    ['openai', 'gpt-6.1-sol', 'gpt-6'], ['openai', 'gpt-4o-mini', 'gpt-4'], ['openai', 'gpt-50', 'gpt-50'], ['openai', 'o3-pro', 'o3'],
    ['openai', 'o4-mini-2025-04-16', 'o4'], ['openai', 'gpt-realtime-2', 'gpt-realtime'], ['openai', 'text-embedding-3-small', 'text-embedding'],
    ['openai', 'omni-moderation-latest', undefined], ['openai', 'gpt-realtime-mini', undefined],
    ['gemini', 'gemini-3.1-pro-preview', 'gemini-pro'], ['gemini', 'gemini-2.5-flash-lite', 'gemini-flash'], ['gemini', 'gemini-live-2.5-flash-preview', 'gemini-live'],
    ['vertex', 'claude-opus-4-5@20251101', 'claude-opus'], ['vertex', 'claude-sonnet-4@*', 'claude-sonnet'], ['vertex', 'gemini-2.5-pro', 'gemini-pro'],
    ['bedrock', 'us.anthropic.claude-opus-4-5-20251101-v1:0', 'us.anthropic.claude-opus'], ['bedrock', 'anthropic.claude-haiku-4-5-20251001*', 'anthropic.claude-haiku'],
    ['bedrock', 'global.anthropic.claude-sonnet-5-v1:0', 'global.anthropic.claude-sonnet'], ['bedrock', 'amazon.nova-pro-v1:0', 'amazon.nova-pro'],
    ['openrouter', 'anthropic/claude-opus-4.5', 'anthropic/claude-opus'], ['openrouter', 'openai/gpt-5-mini', 'openai/gpt-5'],
    ['openrouter', 'google/gemini-2.5-pro', 'google/gemini-pro'], ['openrouter', 'x-ai/grok-4', 'x-ai/grok'], ['openrouter', 'gpt-5', undefined],
    ['mistral', 'mistral-large-2411', 'mistral-large'], ['xai', 'grok-4-fast-reasoning', 'grok'], ['deepseek', 'deepseek-chat', undefined],
    ['perplexity', 'sonar-pro', undefined], ['cohere', 'command-a-03-2025', 'command-a'], ['groq', '70b-model', undefined],
  ];
  for (const [provider, model, family] of cases) t.is(familyOf(provider, model), family, `${provider} ${model}`);
  t.is(upToVersion('a-v2-b'), 'a');
  t.is(familyOf('anthropic', '*'), undefined);
});

const tables: PriceTables = {
  anthropic: {
    'claude-opus-4-1*': { input: 15, cachedInput: 1.5, cacheWriteInput: 18.75, output: 75, maxOutput: 32_000, contextWindow: 200_000 },
    'claude-opus-5-5': { input: 4, cachedInput: 0.2, cacheWriteInput: 5, output: 20, maxOutput: 128_000, contextWindow: 1_000_000 },
    'claude-sonnet-4-5*': {
      input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, maxOutput: 64_000, contextWindow: 1_000_000,
      longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 },
    },
    'claude-sonnet-5': { input: 2, cachedInput: 0.2, cacheWriteInput: 2.5, output: 10, maxOutput: 128_000, contextWindow: 1_000_000 },
    'claude-next': { input: 1, output: 1 },
  },
  openai: { 'gpt-5': { input: 1.25, output: 10 }, 'gpt-realtime-2025-*': { input: 4, output: 16, audio: { input: 32, output: 64 } } },
};
const layers = [{ tables, source: (id: string) => `providers/${id}.js (2026-11-25)` }];

test('refuse (the default): a model with no price of its own is unpriced, whatever its family', (t) => {
  const book = new PriceBook(layers);
  t.is(book.unpriced, 'refuse');
  t.is(book.lookup('anthropic', 'claude-opus-6'), undefined);
  t.is(book.match('anthropic', 'claude-opus-4-1-20250805')?.name, 'claude-opus-4-1*');
  t.true(book.lists('anthropic', 'claude-opus-4-1-20250805'));
  t.false(book.lists('anthropic', 'claude-opus-6'));
});

test('family_max: an unlisted model is priced at its family\'s dearest listed price, field by field; listed ones keep theirs', (t) => {
  const book = new PriceBook(layers, 'family_max');
  const opus = book.match('anthropic', 'claude-opus-6');
  t.is(opus?.name, 'family_max:claude-opus');
  // Opus 4.1's prices (the dearest), Opus 5.5's limits (the largest).
  t.like(opus!.price, { input: 15_000_000, cachedInput: 1_500_000, cacheWriteInput: 18_750_000, output: 75_000_000, maxOutput: 128_000, contextWindow: 1_000_000 });
  t.regex(opus!.price.source, /^KEYWARD_UNPRICED=family_max: the dearest of claude-opus in providers\/anthropic\.js \(2026-11-25\)$/);
  // The long-context tier is folded in: a Sonnet request of any size is never priced below what a listed Sonnet would cost.
  const sonnet = book.lookup('anthropic', 'claude-sonnet-6')!;
  t.like(sonnet, { input: 6_000_000, cachedInput: 600_000, cacheWriteInput: 7_500_000, output: 22_500_000 });
  t.is(sonnet.longContext, undefined);
  // Listed models are never priced by the rule, even when the family costs more.
  t.is(book.lookup('anthropic', 'claude-opus-5-5')!.input, 4_000_000);
  t.is(book.match('anthropic', 'claude-opus-5-5')?.name, 'claude-opus-5-5');
  t.false(book.lists('anthropic', 'claude-opus-6'), 'lists: a price of its own only');
  // No family, or a family with nothing listed, stays unpriced; another provider's family never lends its price.
  for (const [p, m] of [['anthropic', 'claude-nova'], ['anthropic', 'claude-haiku-6'], ['openai', 'claude-opus-6'], ['gemini', 'gemini-9-pro'], ['nobody', 'x-1']]) {
    t.is(book.lookup(p!, m!), undefined, `${p} ${m}`);
  }
  // Audio: the family's dearest audio price (a text model's audio costs what its text does).
  t.is(book.lookup('openai', 'gpt-realtime-3')?.audio?.output, 64_000_000);
  t.is(book.lookup('openai', 'gpt-5.5')?.audio, undefined);
});

test('family_max: KEYWARD_PRICES entries are family members too (an operator\'s dearer model raises the bound)', (t) => {
  const book = new PriceBook([...layers, { tables: { anthropic: { 'claude-opus-6-1': { input: 30, output: 150 } } }, source: () => 'KEYWARD_PRICES' }], 'family_max');
  t.is(book.lookup('anthropic', 'claude-opus-7')!.output, 150_000_000);
  t.regex(book.lookup('anthropic', 'claude-opus-7')!.source, /providers\/anthropic\.js \(2026-11-25\), KEYWARD_PRICES$/);
});

test('property: the family\'s price is at least each member\'s, for any usage and any worst case', (t) => {
  let seed = 7;
  const rnd = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const amount = () => rnd(200_000) / 1000;
  for (let round = 0; round < 300; round++) {
    const members = Array.from({ length: 1 + rnd(5) }, (_, i) => {
      const input = amount();
      const base = { input, cachedInput: input * rnd(100) / 100, cacheWriteInput: input * (1 + rnd(100) / 100), output: amount() };
      const long = rnd(2) === 0 ? { longContext: { aboveInputTokens: 1 + rnd(300_000), input: base.input * 2, output: base.output * 1.5 } } : {};
      const audio = rnd(3) === 0 ? { audio: { input: amount(), output: amount() } } : {};
      const fee = rnd(4) === 0 ? { requestFee: rnd(100) / 1000 } : {};
      return priceEntry(`m${i}`, { ...base, ...long, ...audio, ...fee, ...(rnd(2) ? { maxOutput: 1 + rnd(100_000) } : {}), contextWindow: 400_000 }, 't');
    });
    const family = dearestOf(members, 'f');
    for (const m of members) {
      for (let k = 0; k < 5; k++) {
        const inputTokens = rnd(400_000);
        const cachedInputTokens = rnd(inputTokens + 1);
        const cacheWriteInputTokens = rnd(inputTokens - cachedInputTokens + 1);
        const audioInputTokens = rnd(inputTokens - cachedInputTokens - cacheWriteInputTokens + 1);
        const outputTokens = rnd(100_000);
        const usage = { inputTokens, outputTokens, cachedInputTokens, cacheWriteInputTokens, audioInputTokens, audioOutputTokens: rnd(outputTokens + 1) };
        t.true(usageCost(family, usage) >= usageCost(m, usage), `round ${round}: usage cost`);
        t.true(worstCaseCost(family, inputTokens, outputTokens) >= worstCaseCost(m, inputTokens, outputTokens), `round ${round}: worst case`);
      }
      t.true((family.maxOutput ?? Infinity) >= (m.maxOutput ?? 0) && family.contextWindow! >= m.contextWindow!, `round ${round}: limits`);
    }
  }
});

test('KEYWARD_UNPRICED: refuse by default, family_max when set, anything else stops start-up naming it', (t) => {
  t.is(loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN }).unpriced, 'refuse');
  t.is(loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_UNPRICED: 'family_max' }).unpriced, 'family_max');
  const err = t.throws(() => loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_UNPRICED: 'max' }), { instanceOf: ConfigError });
  t.is(err?.message, 'KEYWARD_UNPRICED: expected one of refuse, family_max, got "max"');
});
