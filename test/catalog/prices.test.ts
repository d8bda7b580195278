/**
 * Prices: money arithmetic in integer micro-dollars, the PriceBook's lookup order
 * (exact name, then the longest prefix; KEYWARD_PRICES over the provider files),
 * long-context tiers and request fees in usageCost and worstCaseCost, every
 * provider file's table (valid, dated, sane), a known model of each provider
 * priced, and KEYWARD_PRICES read and checked at start-up (a bad file stops the
 * server with one line naming the entry, exit 2).
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { formatUsd, parseUsd, priceMicrosPerMillion, tokensCost } from '../../src/pricing/money.js';
import { dearestOf, PriceBook, priceEntry, PriceError, usageCost, worstCaseCost, type PriceEntry } from '../../src/pricing/prices.js';
import { ProviderRegistry } from '../../src/catalog/registry.js';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { buildServer } from '../../src/boot/container.js';
import { createLogger } from '../../src/log.js';
import { ADMIN_TOKEN, ROOT, startApp, tempDir } from '../support/app.js';

const quiet = () => createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));

test('money: decimal strings ⇄ integer micro-dollars, prices per million tokens, costs rounded up', (t) => {
  t.is(parseUsd('12.50'), 12_500_000);
  t.is(parseUsd('0.000001'), 1);
  for (const bad of ['-1', '1e3', '0.0000001', '1.', '', ' 1', 12.5]) t.is(parseUsd(bad), undefined, String(bad));
  t.is(formatUsd(12_500_000), '12.50');
  t.is(formatUsd(125), '0.000125');
  t.is(priceMicrosPerMillion(2.5), 2_500_000);
  t.is(priceMicrosPerMillion(0.00875), 8_750);
  t.is(priceMicrosPerMillion(0.0000001), undefined, 'more than six places is refused, not rounded away');
  t.is(priceMicrosPerMillion(-1), undefined);
  t.is(tokensCost(1, 2_500_000), 3, '2.5 µ$ rounds up to 3');
  t.is(tokensCost(1_000_000, 2_500_000), 2_500_000);
  t.is(tokensCost(70_000_000, 75_000_000), 5_250_000_000, 'exact past 2^53 intermediate products');
});

const entry = (p: Parameters<typeof priceEntry>[1]) => priceEntry('t', p, 'test');

test('lookup: an exact name wins, then the longest prefix; another provider or an unlisted name is unpriced', (t) => {
  const book = new PriceBook([
    {
      tables: {
        acme: {
          'm-large*': { input: 2, output: 8 },
          'm-large-mini*': { input: 0.5, output: 2 },
          'm-large-2025-01-01': { input: 3, output: 9 },
          '*': { input: 100, output: 100 },
        },
        other: { 'x': { input: 1, output: 1 } },
      },
      source: (id) => `file ${id}`,
    },
    { tables: { acme: { 'm-large-mini-v2': { input: 0.25, output: 1 } } }, source: () => 'KEYWARD_PRICES' },
  ]);
  t.is(book.lookup('acme', 'm-large-2025-01-01')!.input, 3_000_000, 'exact over prefix');
  t.is(book.lookup('acme', 'm-large-2025-02-02')!.input, 2_000_000, 'prefix');
  t.is(book.lookup('acme', 'm-large-mini-2025')!.input, 500_000, 'longest prefix');
  t.is(book.lookup('acme', 'm-large-mini-v2')!.input, 250_000, 'a later layer adds');
  t.is(book.lookup('acme', 'm-large-mini-v2')!.source, 'KEYWARD_PRICES');
  t.is(book.lookup('acme', 'anything')!.input, 100_000_000, '`*` is every other model');
  t.is(book.lookup('other', 'y'), undefined);
  t.is(book.lookup('nobody', 'x'), undefined);
  t.false(book.prices('nobody'));
});

test('usageCost and worstCaseCost: cached and written input at their prices, long-context tier past its threshold, request fee added', (t) => {
  const price = entry({ input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15, longContext: { aboveInputTokens: 200_000, input: 6, cachedInput: 0.6, cacheWriteInput: 7.5, output: 22.5 } });
  t.is(usageCost(price, { inputTokens: 3050, cachedInputTokens: 2000, cacheWriteInputTokens: 1000, outputTokens: 300 }), 150 + 600 + 3750 + 4500);
  t.is(usageCost(price, { inputTokens: 200_000, outputTokens: 0 }), 600_000, 'at the threshold: base prices');
  t.is(usageCost(price, { inputTokens: 200_001, outputTokens: 1000 }), 1_200_006 + 22_500, 'past it: the whole request at the long-context prices');
  t.is(worstCaseCost(price, 1000, 100), 3750 + 1500, 'input bound at the dearest input price (cache writes)');
  t.is(worstCaseCost(price, 300_000, 100), 2_250_000 + 2250, 'a bound past the threshold is priced at the long-context tier');
  const fee = entry({ input: 1, output: 1, requestFee: 0.012 });
  t.is(fee.requestFee, 12_000);
  t.is(usageCost(fee, { inputTokens: 1000, outputTokens: 1000 }), 12_000 + 2000);
  t.is(worstCaseCost(fee, 1000, 1000), 12_000 + 2000);
  t.is(entry({ input: 1, output: 1 }).requestFee, undefined);
  // Worst case never below the cost of any usage within its bounds.
  for (const usage of [{ inputTokens: 1000, outputTokens: 100 }, { inputTokens: 1000, cacheWriteInputTokens: 1000, outputTokens: 100 }, { inputTokens: 1000, cachedInputTokens: 900, outputTokens: 100 }]) {
    t.true(usageCost(price, usage) <= worstCaseCost(price, 1000, 100));
  }
  t.throws(() => entry({ input: 1, output: 1, longContext: { aboveInputTokens: 0, input: 2, output: 2 } }), { instanceOf: PriceError, message: /longContext\.aboveInputTokens/ });
  t.throws(() => entry({ input: 1, output: 1, requestFee: -1 }), { instanceOf: PriceError, message: /requestFee: USD per request/ });
});

test('perAudioSecond (a model billed by its audio\'s duration) is µ$ per second, checked like any amount, and kept by family_max', (t) => {
  t.is(entry({ input: 0, output: 0, perAudioSecond: 0.0001 }).perAudioSecond, 100, "whisper-1's $0.006 a minute");
  t.is(entry({ input: 1, output: 1 }).perAudioSecond, undefined);
  for (const bad of [-0.0001, 0.00000001, '0.0001']) {
    t.throws(() => entry({ input: 0, output: 0, perAudioSecond: bad as number }), { instanceOf: PriceError, message: /perAudioSecond: USD per second of input audio/ });
  }
  const dearest = dearestOf([entry({ input: 1, output: 1 }), entry({ input: 0, output: 0, perAudioSecond: 0.0002 })], 'test');
  t.is(dearest.perAudioSecond, 200);
});

async function loadedProviders(): Promise<ProviderRegistry> {
  const config = loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN });
  return ProviderRegistry.load(config.builtinProvidersDir, {});
}

test('every provider\'s table: valid, each entry dated with its source, sane prices and limits (Azure: none, its model names are deployments)', async (t) => {
  const registry = await loadedProviders();
  // Model APIs price their models; tool APIs and MCP servers (kind tool, mcp) have none to price.
  t.is(registry.ids().length, 20);
  t.deepEqual(registry.ids().filter((id) => registry.get(id)!.kind !== 'llm'), ['brave-search', 'github', 'github-mcp', 'huggingface-mcp', 'tavily']);
  const today = new Date().toISOString().slice(0, 10);
  for (const id of registry.ids()) {
    const p = registry.get(id)!;
    if (p.kind !== 'llm' || id === 'azure') {
      t.is(p.priceTable, undefined, `${id} has no table`);
      t.false(registry.prices.has(id));
      continue;
    }
    t.is(p.priceTable?.file, `${id}.prices.json`, `${id}'s prices are the data file beside it`);
    const table = registry.prices.get(id)!;
    t.true(table.size > 0, `${id} has prices`);
    for (const [model, { price: raw, asOf, url, source }] of table) {
      const where = `${id} ${model}`;
      t.regex(asOf, /^20\d\d-\d\d-\d\d$/, `${where} is dated`);
      t.false(Number.isNaN(Date.parse(asOf)), `${where}: a real day`);
      t.true(asOf >= '2025-01-01' && asOf <= today, `${where}: ${asOf} is neither stale nor in the future`);
      t.regex(url, /^https:\/\//, `${where}: its source is an https URL`);
      t.regex(source, /^providers\/[a-z-]+\.prices\.json \(20\d\d-\d\d-\d\d\)( via providers\/[a-z-]+\.prices\.json \(20\d\d-\d\d-\d\d\))?$/, `${where}: ${source}`);
      const e: PriceEntry = priceEntry(where, raw, 'test');
      // A model billed by its audio's duration (whisper-1) has no token price.
      t.true((e.input > 0 || e.perAudioSecond! > 0) && e.output >= 0, `${where}: priced`);
      t.true(e.cachedInput <= e.input, `${where}: cached reads cost no more than input`);
      t.true(e.cacheWriteInput >= e.input, `${where}: cache writes cost no less than input`);
      if (e.maxOutput !== undefined && e.contextWindow !== undefined) t.true(e.maxOutput <= e.contextWindow, `${where}: output within the context`);
      if (e.longContext) {
        t.true(e.longContext.input >= e.input && e.longContext.output >= e.output, `${where}: the long-context tier costs more`);
        t.true(e.contextWindow === undefined || e.longContext.above < e.contextWindow, `${where}: the tier is reachable`);
      }
      t.true(e.input < 100_000_000 && e.output < 200_000_000, `${where}: no price above $100 / $200 per million tokens (a slipped decimal)`);
    }
  }
});

test('a known current model of each provider is priced as its price page says; variants that cost more are not swept in', async (t) => {
  const registry = await loadedProviders();
  const app = await startApp(t);
  const book = app.server.container.resolve(PriceBook);
  // provider, model as a request names it, input and output USD per million tokens.
  const known: Array<[string, string, number, number]> = [
    // The models the coding agents ask for by default (Claude Code 2.1.332, Codex CLI 0.169.0: test/agents/).
    ['anthropic', 'claude-opus-5-5', 4, 20], ['openai', 'gpt-6.1-sol', 2, 10], ['openai', 'gpt-6.1-sol-2026-09-29', 2, 10],
    ['anthropic', 'claude-sonnet-5-5', 2, 10], ['anthropic', 'claude-haiku-5-5', 0.1, 0.5], ['anthropic', 'claude-fable-5-1', 10, 50],
    ['vertex', 'claude-opus-5-5', 4.4, 22], ['vertex', 'claude-haiku-5-5@20261007', 0.11, 0.55], ['gemini', 'gemini-3.1-pro-preview', 2, 12],
    ['bedrock', 'us.anthropic.claude-opus-5-5-v1:0', 4.4, 22], ['bedrock', 'global.anthropic.claude-opus-5-5-v1:0', 4, 20],
    ['openai', 'gpt-6.1-terra', 1, 5], ['openai', 'gpt-5.6-sol', 5, 30], ['openai', 'gpt-5.6-luna', 0.2, 1.2],
    ['openai', 'gpt-5', 1.25, 10], ['openai', 'gpt-5-2025-08-07', 1.25, 10], ['openai', 'gpt-4o-mini-2024-07-18', 0.15, 0.6],
    ['anthropic', 'claude-sonnet-4-5-20250929', 3, 15], ['anthropic', 'claude-sonnet-4-5', 3, 15], ['anthropic', 'claude-opus-4-1-20250805', 15, 75],
    ['anthropic', 'claude-haiku-4-5-20251001', 1, 5], ['anthropic', 'claude-sonnet-4-20250514', 3, 15],
    ['gemini', 'gemini-2.5-pro', 1.25, 10], ['gemini', 'gemini-2.5-flash', 0.3, 2.5],
    ['vertex', 'gemini-2.5-flash', 0.3, 2.5], ['vertex', 'claude-sonnet-4@20250514', 3, 15], ['vertex', 'claude-sonnet-4-5@20250929', 3.3, 16.5],
    ['bedrock', 'anthropic.claude-sonnet-4-20250514-v1:0', 3, 15], ['bedrock', 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 3.3, 16.5],
    ['bedrock', 'global.anthropic.claude-sonnet-4-5-20250929-v1:0', 3, 15], ['bedrock', 'eu.amazon.nova-pro-v1:0', 0.8, 3.2],
    ['deepseek', 'deepseek-flash', 0.3, 1.2], ['deepseek', 'deepseek-chat', 0.3, 1.2], ['xai', 'grok-4-0709', 3, 15], ['xai', 'grok-4.5', 2, 6], ['mistral', 'mistral-medium-2508', 0.4, 2],
    ['cohere', 'command-a-03-2025', 2.5, 10], ['groq', 'llama-3.3-70b-versatile', 0.59, 0.79],
    ['together', 'meta-llama/Llama-3.3-70B-Instruct-Turbo', 0.88, 0.88], ['fireworks', 'accounts/fireworks/models/llama-v3p3-70b-instruct', 0.9, 0.9],
    ['perplexity', 'sonar-pro', 3, 15], ['openrouter', 'anthropic/claude-sonnet-4.5', 3, 15],
  ];
  for (const [provider, model, input, output] of known) {
    const e = book.lookup(provider, model);
    t.truthy(e, `${provider} ${model} is priced`);
    t.is(e?.input, input * 1_000_000, `${provider} ${model} input`);
    t.is(e?.output, output * 1_000_000, `${provider} ${model} output`);
    // Its own file, or its publisher's and then the platform's that takes it (Claude on Bedrock: Anthropic's, via Bedrock's).
    t.regex(e?.source ?? '', new RegExp(`^providers/[a-z]+\\.prices\\.json \\(20\\d\\d-\\d\\d-\\d\\d\\)(?: via providers/${provider}\\.prices\\.json \\(20\\d\\d-\\d\\d-\\d\\d\\))?$`), `${provider} ${model}: source names the files and dates`);
    if (!e?.source.startsWith(`providers/${provider}.`)) t.regex(e?.source ?? '', new RegExp(` via providers/${provider}\\.prices\\.json`), `${provider} ${model}: a family's model names the platform's file`);
  }
  const covered = new Set(known.map(([p]) => p));
  for (const id of registry.ids()) if (id !== 'azure' && registry.get(id)!.kind === 'llm') t.true(covered.has(id), `a known model of ${id} is checked`);
  t.is(book.lookup('anthropic', 'claude-sonnet-4-5')!.cachedInput, 300_000, 'cache reads at 0.1×');
  t.is(book.lookup('anthropic', 'claude-sonnet-4-5')!.cacheWriteInput, 3_750_000, 'cache writes at 1.25×');
  t.is(book.lookup('perplexity', 'sonar')!.requestFee, 12_000);
  // Today's long-context tiers: GPT-6 past 272k input tokens, Haiku 5.5 past 100k; Sonnet 5.5's cache reads as cut on 2026-10-07.
  t.like(book.lookup('openai', 'gpt-6.1-sol')!.longContext, { above: 272_000, input: 4_000_000, cachedInput: 200_000, cacheWriteInput: 5_000_000, output: 15_000_000 });
  t.like(book.lookup('openai', 'gpt-6.1-sol'), { cachedInput: 100_000, cacheWriteInput: 2_500_000, maxOutput: 128_000, contextWindow: 1_050_000 });
  t.like(book.lookup('anthropic', 'claude-haiku-5-5')!.longContext, { above: 100_000, input: 500_000, output: 2_500_000 });
  t.is(book.lookup('anthropic', 'claude-sonnet-5-5')!.cachedInput, 100_000);
  t.like(book.lookup('bedrock', 'eu.anthropic.claude-haiku-5-5-v1:0')!.longContext, { above: 100_000, input: 550_000, cachedInput: 55_000, output: 2_750_000 });
  t.like(book.lookup('anthropic', 'claude-opus-5-5'), { cachedInput: 200_000, cacheWriteInput: 5_000_000, maxOutput: 128_000, contextWindow: 1_000_000 });
  // Realtime models are priced with their audio tokens apart (issue 26), never by the text model's prefix.
  t.deepEqual(book.lookup('openai', 'gpt-4o-realtime-preview')?.audio, { input: 40_000_000, cachedInput: 2_500_000, output: 80_000_000 });
  t.is(book.lookup('openai', 'gpt-realtime')?.contextWindow, 32_000);
  t.is(book.lookup('gemini', 'gemini-2.0-flash-live-001')?.audio?.output, 8_500_000);
  // Realtime transcription models: audio input apart from text; whisper-1 by the second ($0.006 a minute).
  t.like(book.lookup('openai', 'gpt-4o-transcribe'), { input: 2_500_000, output: 10_000_000, audio: { input: 6_000_000 }, maxOutput: 2_000, contextWindow: 16_000 });
  t.like(book.lookup('openai', 'gpt-4o-mini-transcribe'), { input: 1_250_000, output: 5_000_000, audio: { input: 3_000_000 }, maxOutput: 2_000 });
  t.like(book.lookup('openai', 'whisper-1'), { input: 0, output: 0, perAudioSecond: 100 });
  // Dearer variants and unknown names stay unpriced (a budgeted request for them is refused, never underpriced).
  for (const [provider, model] of [
    ['openai', 'gpt-4o-audio-preview'], ['openai', 'gpt-4o-2024-05-13'], ['openai', 'gpt-5-pro'], ['gemini', 'gemini-2.5-flash-image'],
    ['azure', 'gpt-4o'], ['openrouter', 'openai/gpt-5:online'], ['anthropic', 'claude-next'],
    // Not confirmed, so not listed; and a later version is never priced by an earlier one's name.
    ['openai', 'gpt-6-astra'], ['openai', 'gpt-6-pro'], ['anthropic', 'claude-opus-5-7'], ['anthropic', 'claude-sonnet-5-6'],
  ] as const) {
    t.is(book.lookup(provider, model), undefined, `${provider} ${model} is unpriced`);
  }
});

test('KEYWARD_PRICES overrides and extends the provider files (source KEYWARD_PRICES); others stay as the files say', async (t) => {
  const file = path.join(tempDir(t), 'prices.json');
  writeFileSync(file, JSON.stringify({
    openai: { 'gpt-5': { input: 1, output: 8, cachedInput: 0.1, maxOutput: 1000, contextWindow: 5000 } },
    azure: { 'gpt-4o-prod': { input: 2.5, cachedInput: 1.25, output: 10 }, 'team-*': { input: 1, output: 2 } },
    anthropic: { 'claude-sonnet-4-5-20250929': { input: 4, output: 16, longContext: { aboveInputTokens: 100_000, input: 8, output: 24 } } },
  }));
  const app = await startApp(t, { env: { KEYWARD_PRICES: file } });
  const book = app.server.container.resolve(PriceBook);
  t.like(book.lookup('openai', 'gpt-5'), { input: 1_000_000, output: 8_000_000, cachedInput: 100_000, maxOutput: 1000, contextWindow: 5000, source: 'KEYWARD_PRICES' });
  t.is(book.lookup('openai', 'gpt-5-2025-08-07')!.input, 1_250_000, 'the file\'s snapshot prefix still stands');
  t.like(book.lookup('azure', 'gpt-4o-prod'), { input: 2_500_000, cachedInput: 1_250_000, output: 10_000_000 });
  t.is(book.lookup('azure', 'team-a')!.output, 2_000_000);
  t.is(book.lookup('anthropic', 'claude-sonnet-4-5-20250929')!.longContext!.above, 100_000, 'an exact override beats the file\'s prefix');
  t.is(book.lookup('anthropic', 'claude-sonnet-4-5')!.input, 3_000_000);
});

test('KEYWARD_PRICES: a bad file stops start-up with a ConfigError naming the entry', async (t) => {
  const dir = tempDir(t);
  const base = { KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_DATA_DIR: dir, HOST: '127.0.0.1', PORT: '0' };
  const write = (name: string, content: string) => {
    const file = path.join(dir, name);
    writeFileSync(file, content);
    return file;
  };
  // Read by loadConfig.
  t.throws(() => loadConfig({ ...base, KEYWARD_PRICES: path.join(dir, 'missing.json') }), { instanceOf: ConfigError, message: /^KEYWARD_PRICES: expected a readable JSON file \(ENOENT\)/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_PRICES: write('bad.json', '{"openai": ') }), { instanceOf: ConfigError, message: /not JSON/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_PRICES: write('array.json', '[]') }), { instanceOf: ConfigError, message: /one object keyed by provider id/ });
  // Checked against the loaded providers at start.
  const cases: Array<[unknown, RegExp]> = [
    [{ opneai: { 'gpt-5': { input: 1, output: 1 } } }, /provider ids among the loaded ones \(anthropic, azure, bedrock, .*xai\), got "opneai"/],
    [{ openai: [] }, /openai: an object of prices by model name/],
    [{ openai: { 'bad model!': { input: 1, output: 1 } } }, /openai: a model name or prefix\* as each key, got "bad model!"/],
    [{ openai: { 'gpt-5': 2.5 } }, /openai\["gpt-5"\]: an object/],
    [{ openai: { 'gpt-5': { inptu: 1, output: 1 } } }, /openai\["gpt-5"\]: only the fields input, output, .*got "inptu"/],
    [{ openai: { 'gpt-5': { output: 1 } } }, /openai\["gpt-5"\]\.input: USD per million tokens/],
    [{ openai: { 'gpt-5': { input: '2.5', output: 1 } } }, /openai\["gpt-5"\]\.input: USD per million tokens/],
    [{ openai: { 'gpt-5': { input: -1, output: 1 } } }, /openai\["gpt-5"\]\.input/],
    [{ openai: { 'gpt-5': { input: 1, output: 0.0000001 } } }, /openai\["gpt-5"\]\.output: .*six decimal places/],
    [{ openai: { 'gpt-5': { input: 1, output: 1, maxOutput: 1.5 } } }, /openai\["gpt-5"\]\.maxOutput: a whole number of tokens/],
    [{ openai: { 'gpt-5': { input: 1, output: 1, longContext: { aboveInputTokens: 10, input: 2, output: 2, extra: 1 } } } }, /openai\["gpt-5"\]\.longContext: only the fields .*got "extra"/],
    [{ openai: { 'gpt-5': { input: 1, output: 1, longContext: { input: 2, output: 2 } } } }, /openai\["gpt-5"\]\.longContext\.aboveInputTokens/],
  ];
  for (const [i, [content, message]] of cases.entries()) {
    const config = loadConfig({ ...base, KEYWARD_PRICES: write(`case-${i}.json`, JSON.stringify(content)) });
    const err = await t.throwsAsync(buildServer(config, quiet()), { instanceOf: ConfigError }, JSON.stringify(content));
    t.regex(err?.message ?? '', /^KEYWARD_PRICES: /);
    t.regex(err?.message ?? '', message, JSON.stringify(content));
  }
});

test('KEYWARD_PRICES: the built server refuses a bad entry with one stderr line and exit 2, and starts with a good file', async (t) => {
  const dir = tempDir(t);
  const run = (prices: unknown) => new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const file = path.join(dir, `p-${Math.random()}.json`);
    writeFileSync(file, JSON.stringify(prices));
    const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: dir, KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_PRICES: file },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => {
      stdout += d;
      if (stdout.includes('"listening"')) proc.kill('SIGTERM');
    });
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    proc.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
  const bad = await run({ gemini: { 'gemini-2.5-pro': { input: 1.25, output: 10, cachedInptu: 0.3 } } });
  t.is(bad.code, 2);
  t.deepEqual(bad.stderr.trim().split('\n'), [`keyward: invalid configuration: KEYWARD_PRICES: expected gemini["gemini-2.5-pro"]: only the fields input, output, cachedInput, cacheWriteInput, cacheWrite1hInput, maxOutput, contextWindow, requestFee, longContext, audio, perAudioSecond, tiers, got "cachedInptu"`]);
  t.false(bad.stdout.includes('"listening"'));
  const good = await run({ gemini: { 'gemini-2.5-pro': { input: 1.25, output: 10, cachedInput: 0.3 } } });
  t.true(good.stdout.includes('"listening"'), good.stderr);
  t.is(good.stderr, '');
});
