/**
 * Price files: every `providers/<id>.prices.json` shipped loads through the schema at start-up, every
 * entry dated with its source; a model family is priced once (in its publisher's file) and taken by the
 * platforms that sell it with their declared difference; an undated entry, a family priced twice, a bad
 * field or a reference to nothing is refused naming the file, the entry and the field; the built package
 * carries every file; KEYWARD_PRICES still layers on top of them.
 */
import test from 'ava';
import { copyFileSync, cpSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { priceEntry, PriceBook } from '../../src/pricing/prices.js';
import { PriceFileError, readPriceFile } from '../../src/pricing/price-schema.js';
import { pricedTwice, resolvePriceFiles, type LoadedPriceFile } from '../../src/pricing/price-data.js';
import { ProviderLoadError, ProviderRegistry } from '../../src/catalog/registry.js';
import { loadConfig } from '../../src/settings/config.js';
import { buildServer } from '../../src/boot/container.js';
import { createLogger } from '../../src/log.js';
import { ADMIN_TOKEN, ROOT, startApp, tempDir } from '../support/app.js';
import { providersDir } from '../support/providers-dir.js';
import { PROVIDERS_SOURCE, shippedPriceFiles, shippedTables } from '../support/shipped-prices.js';

const quiet = () => createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));
const source = (id: string): any => JSON.parse(readFileSync(path.join(PROVIDERS_SOURCE, `${id}.prices.json`), 'utf8'));
const micros = (p: Parameters<typeof priceEntry>[1]) => {
  const e = priceEntry('t', p, 't');
  return e.tiers ? e : { ...e, tiers: undefined };
};
/** The shipped files with one replaced by `data` (parsed as the loader would). */
const withFile = (id: string, data: unknown): LoadedPriceFile[] =>
  shippedPriceFiles().map((f) => (f.providerId === id ? { ...f, data: readPriceFile(f.file, data) } : f));

test('every shipped price file passes the schema; every entry of every table is dated with an https source', (t) => {
  const files = shippedPriceFiles();
  t.deepEqual(files.map((f) => f.providerId), ['anthropic', 'bedrock', 'cohere', 'deepseek', 'fireworks', 'gemini', 'groq', 'mistral', 'openai', 'openrouter', 'perplexity', 'together', 'vertex', 'xai']);
  const today = new Date().toISOString().slice(0, 10);
  let entries = 0;
  for (const [id, table] of shippedTables()) {
    for (const [name, r] of table) {
      entries += 1;
      t.regex(r.asOf, /^20\d\d-\d\d-\d\d$/, `${id} ${name}: dated`);
      t.true(r.asOf <= today, `${id} ${name}: not in the future`);
      t.regex(r.url, /^https:\/\/\S+$/, `${id} ${name}: its source`);
      t.notThrows(() => micros(r.price), `${id} ${name}: a price`);
    }
  }
  t.true(entries > 400, `${entries} price-book entries`);
});

test('an undated table or entry, a bad field, a name that is none: refused naming the file, the entry and the field', (t) => {
  const anthropic = source('anthropic');
  const refused = (data: unknown, message: RegExp) => {
    const err = t.throws(() => readPriceFile('providers/anthropic.prices.json', data), { instanceOf: PriceFileError });
    t.regex(err?.message ?? '', /^price file providers\/anthropic\.prices\.json: /);
    t.regex(err?.message ?? '', message);
  };
  const { as_of: _asOf, ...undated } = anthropic;
  refused(undated, /as_of: Expected required property/);
  const { source: _source, ...unsourced } = anthropic;
  refused(unsourced, /source: Expected required property/);
  refused({ ...anthropic, source: 'http://example.com/prices' }, /source: Expected string to match/);
  const models = (change: Record<string, unknown>) => ({ ...anthropic, models: { ...anthropic.models, 'claude-opus-5-5': { ...anthropic.models['claude-opus-5-5'], ...change } } });
  refused(models({ as_of: '2026-02-30x' }), /models\["claude-opus-5-5"\]\.as_of: Expected string to match/);
  refused(models({ as_of: '' }), /models\["claude-opus-5-5"\]\.as_of/);
  refused(models({ input: '4' }), /models\["claude-opus-5-5"\]\.input: Expected number/);
  refused(models({ inptu: 4 }), /models\["claude-opus-5-5"\]\.inptu: Unexpected property/);
  refused(models({ output: 0.0000001 }), /models\["claude-opus-5-5"\]\.output: USD per million tokens, a number ≥ 0 with at most six decimal places/);
  refused(models({ aliases: ['not a name'] }), /models\["claude-opus-5-5"\]\.aliases\[0\]/);
  refused({ ...anthropic, models: { ...anthropic.models, 'bad name!': { input: 1, output: 1 } } }, /models\["bad name!"\]: not a model name or prefix\*/);
  refused({ ...anthropic, publishes: [{ family: 'claude', models: '([' }] }, /publishes\[0\]\.models: a regular expression/);
  // A reference to a model its publisher does not price, or to a provider with no file; an alias priced twice.
  const bedrock = source('bedrock');
  const ref = (change: Record<string, unknown>) => withFile('bedrock', { ...bedrock, families: [{ ...bedrock.families[0], ...change }] });
  const resolveError = (files: LoadedPriceFile[], message: RegExp) => {
    const err = t.throws(() => resolvePriceFiles(files), { instanceOf: PriceFileError });
    t.regex(err?.message ?? '', message);
  };
  resolveError(ref({ models: { 'claude-opus-9': 'anthropic.claude-opus-9' } }), /providers\/bedrock\.prices\.json: families\[0\]\.models\["claude-opus-9"\]: providers\/anthropic\.prices\.json has no model "claude-opus-9"/);
  resolveError(ref({ from: 'nobody' }), /families\[0\]\.from: no loaded provider "nobody"/);
  resolveError(ref({ differs: { 'claude-opus-4-5': { input: 9, why: 'x' } }, models: { 'claude-opus-5-5': 'anthropic.claude-opus-5-5' } }), /"claude-opus-4-5" is given a difference but is not among its models/);
  resolveError(withFile('bedrock', { ...bedrock, models: { ...bedrock.models, 'eu.amazon.nova-lite-v1*': { input: 1, output: 1 } } }), /"eu\.amazon\.nova-lite-v1\*" is priced twice in this table/);
});

test('each family is priced once: the shipped files pass, and a platform pricing a family\'s model itself fails naming it', (t) => {
  t.deepEqual(pricedTwice(shippedPriceFiles()), []);
  const bedrock = source('bedrock');
  const twice = pricedTwice(withFile('bedrock', { ...bedrock, models: { ...bedrock.models, 'us.anthropic.claude-opus-5-5*': { input: 4.4, output: 22 } } }));
  t.deepEqual(twice, ['providers/bedrock.prices.json: models["us.anthropic.claude-opus-5-5*"] prices "us.anthropic.claude-opus-5-5*", a model of the claude family that providers/anthropic.prices.json prices: take it through `families`']);
  const vertex = source('vertex');
  t.regex(pricedTwice(withFile('vertex', { ...vertex, models: { 'gemini-2.5-pro': { input: 1.25, output: 10 } } })).join('\n'), /vertex\.prices\.json: models\["gemini-2\.5-pro"\] .* gemini family that providers\/gemini\.prices\.json prices/);
  const openrouter = source('openrouter');
  t.regex(pricedTwice(withFile('openrouter', { ...openrouter, models: { 'openai/gpt-5': { input: 1.25, output: 10 } } })).join('\n'), /openai family/);
  // Open-weight models are each host's own price: Llama on Groq, Together and Fireworks is not a family priced twice.
  t.true(['groq', 'together', 'fireworks'].every((id) => !source(id).publishes));
  // The two duplicated tables are gone: Claude and Gemini are priced in their publishers' files only.
  for (const id of ['bedrock', 'vertex', 'openrouter']) {
    const own = Object.keys(source(id).models ?? {});
    t.false(own.some((name) => /claude|gemini|gpt|grok/.test(name)), `${id} prices no family model itself`);
  }
});

test('a platform takes its family with its declared difference: names, regional uplift, a price or a field of its own', (t) => {
  const tables = shippedTables();
  const at = (id: string, name: string) => micros(tables.get(id)!.get(name)!.price);
  const list = at('anthropic', 'claude-opus-5-5');
  // Bedrock: in-region and geographic profiles 10% over the global one, which is the list price.
  t.deepEqual({ ...at('bedrock', 'global.anthropic.claude-opus-5-5*'), source: '' }, { ...list, tiers: undefined, source: '' });
  // The publisher's tiers (Anthropic's US-only inference, fast mode) are not the platform's unless it declares them.
  t.truthy(list.tiers?.get('us'));
  t.is(at('bedrock', 'global.anthropic.claude-opus-5-5*').tiers, undefined);
  for (const name of ['anthropic.claude-opus-5-5*', 'us.anthropic.claude-opus-5-5*', 'eu.anthropic.claude-opus-5-5*', 'jp.anthropic.claude-opus-5-5*']) {
    const upped = at('bedrock', name);
    for (const field of ['input', 'cachedInput', 'cacheWriteInput', 'output'] as const) t.is(upped[field], Math.round(list[field] * 1.1), `${name} ${field}`);
    t.is(upped.contextWindow, list.contextWindow);
  }
  // Before Claude 4.5 no uplift; a dated Bedrock id is the family's entry.
  t.is(at('bedrock', 'us.anthropic.claude-opus-4-1-20250805*').input, at('anthropic', 'claude-opus-4-1*').input);
  t.is(at('vertex', 'claude-sonnet-4@*').longContext?.input, at('anthropic', 'claude-sonnet-4-0').longContext?.input);
  t.is(at('vertex', 'claude-haiku-5-5@*').longContext?.output, Math.round(at('anthropic', 'claude-haiku-5-5').longContext!.output * 1.1));
  // Vertex prices Gemini 2.0 Flash otherwise, without the Gemini API's cache price; the rest as on the Gemini API.
  t.like(at('vertex', 'gemini-2.0-flash-001'), { input: 150_000, cachedInput: 150_000, output: 600_000, contextWindow: 1_048_576 });
  t.like(at('gemini', 'gemini-2.0-flash-001'), { input: 100_000, cachedInput: 25_000, output: 400_000 });
  t.deepEqual({ ...at('vertex', 'gemini-2.5-pro'), source: '' }, { ...at('gemini', 'gemini-2.5-pro'), source: '' });
  // OpenRouter: the publisher's price under its own name, a field it does not show left out (cached input at input).
  t.like(at('openrouter', 'google/gemini-2.5-pro'), { input: 1_250_000, cachedInput: 1_250_000, output: 10_000_000 });
  t.like(at('openrouter', 'google/gemini-2.5-pro').longContext, { input: 2_500_000, cachedInput: 2_500_000 });
  t.like(at('openrouter', 'anthropic/claude-sonnet-4.5'), { input: 3_000_000, cachedInput: 300_000, cacheWriteInput: 3_750_000 });
  // Where each was read: the publisher's file and date, then the platform's.
  t.is(tables.get('vertex')!.get('gemini-2.5-pro')!.source, 'providers/gemini.prices.json (2026-10-07) via providers/vertex.prices.json (2026-11-25)');
  t.is(tables.get('bedrock')!.get('us.anthropic.claude-opus-5-5*')!.url, 'https://platform.claude.com/docs/en/about-claude/pricing');
});

test('the built package ships every price file beside its provider, and the server loads them from there', async (t) => {
  const built = path.join(ROOT, 'dist/providers');
  const shipped = readdirSync(PROVIDERS_SOURCE).filter((f) => f.endsWith('.prices.json')).sort();
  t.deepEqual(readdirSync(built).filter((f) => f.endsWith('.prices.json')).sort(), shipped);
  // The compiler writes them out again (its own layout): the same data.
  for (const f of shipped) t.deepEqual(JSON.parse(readFileSync(path.join(built, f), 'utf8')), JSON.parse(readFileSync(path.join(PROVIDERS_SOURCE, f), 'utf8')), f);
  const app = await startApp(t);
  const book = app.server.container.resolve(PriceBook);
  t.is(book.lookup('bedrock', 'us.anthropic.claude-opus-5-5-v1:0')?.source, 'providers/anthropic.prices.json (2026-11-25) via providers/bedrock.prices.json (2026-11-25)');
});

test('a bad price file beside a provider stops start-up naming the file, the entry and the field; so do prices written twice', async (t) => {
  // A copy of the built-in providers' folder, loaded as the built-in one.
  const dir = tempDir(t, 'keyward-builtins-');
  for (const f of readdirSync(path.join(ROOT, 'dist/providers')).filter((f) => f.endsWith('.js') || f.endsWith('.prices.json'))) copyFileSync(path.join(ROOT, 'dist/providers', f), path.join(dir, f));
  // With what they reference (Bedrock's usage reader).
  cpSync(path.join(ROOT, 'dist/providers/lib'), path.join(dir, 'lib'), { recursive: true });
  const anthropic = source('anthropic');
  writeFileSync(path.join(dir, 'anthropic.prices.json'), JSON.stringify({ ...anthropic, models: { ...anthropic.models, 'claude-opus-5-5': { input: 4, outptu: 20 } } }));
  const err = await t.throwsAsync(ProviderRegistry.load(dir, {}), { instanceOf: ProviderLoadError });
  t.is(err?.message, 'provider anthropic.js: anthropic.prices.json: models["claude-opus-5-5"].output: Expected required property');
  writeFileSync(path.join(dir, 'anthropic.prices.json'), '{"as_of": ');
  t.regex((await t.throwsAsync(ProviderRegistry.load(dir, {})))?.message ?? '', /^provider anthropic\.js: anthropic\.prices\.json is not JSON/);
  writeFileSync(path.join(dir, 'anthropic.prices.json'), JSON.stringify(anthropic));
  const bedrock = source('bedrock');
  writeFileSync(path.join(dir, 'bedrock.prices.json'), JSON.stringify({ ...bedrock, families: [{ ...bedrock.families[0], models: { 'claude-nope': 'anthropic.claude-nope' } }] }));
  t.is((await t.throwsAsync(ProviderRegistry.load(dir, {})))?.message, 'provider bedrock.prices.json: families[0].models["claude-nope"]: providers/anthropic.prices.json has no model "claude-nope"');
  // A folder provider with inline prices and a file beside it: one or the other; the server does not start with it.
  writeFileSync(path.join(dir, 'bedrock.prices.json'), JSON.stringify(bedrock));
  const folder = providersDir(t, ['priced']);
  writeFileSync(path.join(folder, 'priced.prices.json'), JSON.stringify({ as_of: '2026-11-01', source: 'https://prices.example/test', models: { 'pm-1': { input: 1, output: 1 } } }));
  const config = loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, KEYWARD_DATA_DIR: tempDir(t), KEYWARD_PROVIDERS_DIR: folder, HOST: '127.0.0.1', PORT: '0' });
  const refused = await t.throwsAsync(buildServer(config, quiet()));
  t.is(refused?.message, `provider ${path.join(folder, 'priced.js')}: prices both inline and in priced.prices.json: keep one`);
  writeFileSync(path.join(dir, 'priced.prices.json'), JSON.stringify({ as_of: '2026-11-01', source: 'https://prices.example/test', models: { 'pm-1': { input: 1, output: 1 } } }));
  writeFileSync(path.join(dir, 'priced.js'), readFileSync(path.join(ROOT, 'test/support/providers/priced.js'), 'utf8'));
  t.regex((await t.throwsAsync(ProviderRegistry.load(dir, {})))?.message ?? '', /^provider priced\.js: prices both inline and in priced\.prices\.json: keep one/);
});

test('KEYWARD_PRICES layers on top of the files: a family\'s model on a platform is overridden by name, its other names stay', async (t) => {
  const file = path.join(tempDir(t), 'prices.json');
  writeFileSync(file, JSON.stringify({
    bedrock: { 'us.anthropic.claude-opus-5-5*': { input: 9, output: 90 } },
    // An operator prices a tier the files do not (fast mode on Opus 5.5).
    anthropic: { 'claude-opus-5-5': { input: 4, cachedInput: 0.2, cacheWriteInput: 5, output: 20, tiers: { fast: { multiplier: 2 }, us: { multiplier: 1.1 } } } },
  }));
  const app = await startApp(t, { env: { KEYWARD_PRICES: file } });
  const book = app.server.container.resolve(PriceBook);
  t.like(book.lookup('bedrock', 'us.anthropic.claude-opus-5-5-v1:0'), { input: 9_000_000, output: 90_000_000, source: 'KEYWARD_PRICES' });
  t.like(book.lookup('bedrock', 'eu.anthropic.claude-opus-5-5-v1:0'), { input: 4_400_000, output: 22_000_000 });
  t.like(book.lookup('anthropic', 'claude-opus-5-5'), { input: 4_000_000, output: 20_000_000, source: 'KEYWARD_PRICES' });
  t.deepEqual([...book.lookup('anthropic', 'claude-opus-5-5')!.tiers!.keys()], ['fast', 'us']);
});
