/**
 * Price dimensions as declared and as computed (pricing/price-dimensions.ts): every shipped model API declares
 * its dimensions in one place (tools and long context too); a malformed declaration stops start-up naming it;
 * a request's route and scanned fields select tiers by own-property lookup only; a model's price in its tiers
 * (a multiple rounded up, prices of its own, audio only with audio prices); tiers written in KEYWARD_PRICES.
 */
import test from 'ava';
import { priceAt, requestDimensions, reportedDimensions, unpricedChoice } from '../../src/pricing/price-dimensions.js';
import { priceEntry, PriceError } from '../../src/pricing/prices.js';
import { ProviderRegistry, validateProvider } from '../../src/catalog/registry.js';
import { loadConfig } from '../../src/settings/config.js';
import { ADMIN_TOKEN } from '../support/app.js';

const scanned = (o: Record<string, unknown>) => new Map(Object.entries(o).map(([k, v]) => [k, v === null ? { kind: 'null' } : Array.isArray(v) ? { kind: 'array' } : typeof v === 'object' ? { kind: 'object' } : { kind: typeof v, value: v }]));

test('every shipped model API declares its price dimensions in one place; tools and long context are listed where it has them', async (t) => {
  const registry = await ProviderRegistry.load(loadConfig({ KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN }).builtinProvidersDir, {});
  for (const id of registry.ids()) {
    const p = registry.get(id)!;
    if (p.kind !== 'llm') {
      t.is(p.priceDimensions, undefined, `${id} (${p.kind}) bills no dimension`);
      continue;
    }
    t.truthy(p.priceDimensions, `${id} declares its price dimensions`);
    const dims = Object.values(p.priceDimensions!);
    if (p.tools) t.true(dims.some((d) => d.pricedBy === 'tools'), `${id}: its provider-side tools are listed`);
    const table = registry.prices.get(id);
    if (table && [...table.values()].some((r) => r.price.longContext)) t.true(dims.some((d) => d.pricedBy === 'longContext'), `${id}: its long-context prices are listed`);
  }
  const openai = registry.get('openai')!.priceDimensions!;
  t.deepEqual(openai.service_tier!.values, { auto: 'standard', default: 'standard', flex: 'flex', priority: 'priority', fast: 'priority', scale: 'scale' });
  t.is(registry.get('anthropic')!.priceDimensions!.fast_mode!.field, 'speed');
  t.is(registry.get('anthropic')!.priceDimensions!.inference_geo!.values!.us, 'us');
  // The scan of a capped request reads every provider's dimension fields.
  for (const f of ['service_tier', 'speed', 'inference_geo', 'audio', 'generationConfig.responseModalities', 'performanceConfig.latency', 'search_parameters']) t.true(registry.priceFields.includes(f), f);
});

test('a malformed dimension stops start-up naming it', (t) => {
  const base = { id: 'acme', upstream: 'https://api.acme.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'v1/chat' }, { method: 'POST', path: 'v1/batch' }] };
  const cases: Array<[unknown, RegExp]> = [
    [[], /`priceDimensions` must be an object/],
    [{ 'Tier': { field: 'tier', values: { a: 'standard' } } }, /priceDimensions\.Tier`: a name/],
    [{ tier: { field: 'tier' } }, /either `values`.*or `present`/],
    [{ tier: { field: 'tier', values: { a: 'standard' }, present: 'x' } }, /either `values`/],
    [{ tier: { field: 'a b', values: {} } }, /\.field must be a body field name/],
    [{ tier: { field: 'tier', values: { a: 'Not A Tier' } } }, /values\["a"\] must be a tier name/],
    [{ batch: { routes: ['POST v1/nope'], present: 'batch' } }, /"POST v1\/nope" is not one of the provider's routes/],
    [{ batch: { routes: ['POST v1/batch'] } }, /names its tier in `present`/],
    [{ tier: { field: 'tier', values: {}, colour: 1 } }, /unknown key `colour`/],
    [{ tools: { pricedBy: 'tools', field: 'x' } }, /one of `field`, `routes` or `pricedBy`/],
    [{ tools: { pricedBy: 'magic' } }, /pricedBy must be tools or longContext/],
    [{ tier: { field: 'tier', present: 'x', reported: 'tier' } }, /reported must be a response key, with `values`/],
  ];
  for (const [priceDimensions, message] of cases) {
    const err = t.throws(() => validateProvider('acme.js', { ...base, priceDimensions }), undefined, JSON.stringify(priceDimensions));
    t.regex(err?.message ?? '', /^provider acme\.js: /);
    t.regex(err?.message ?? '', message, JSON.stringify(priceDimensions));
  }
  t.throws(() => validateProvider('acme.js', { ...base, kind: 'tool', priceDimensions: {} }), { message: /declares no `priceDimensions`/ });
  t.notThrows(() => validateProvider('acme.js', { ...base, priceDimensions: { batch: { routes: ['POST v1/batch'], present: 'batch' }, tier: { field: 'options.tier', values: { a: 'standard', b: 'fast' }, reported: 'tier' } } }));
});

test('a request selects tiers by its route and its scanned fields; a value not declared, an object or a prototype key selects no price', (t) => {
  const dims = {
    service_tier: { field: 'service_tier', values: { auto: 'standard', flex: 'flex', priority: 'priority' }, reported: 'service_tier' },
    audio: { field: 'audio', present: 'audio' },
    batch: { routes: ['POST v1/batches'], present: 'batch' },
  };
  t.deepEqual(requestDimensions(dims, 'POST', 'v1/chat', scanned({ service_tier: 'auto', audio: null })), []);
  t.deepEqual(requestDimensions(dims, 'POST', 'v1/chat', undefined), [], 'nothing read: nothing selected');
  t.like(requestDimensions(dims, 'POST', 'v1/chat', scanned({ service_tier: 'flex' }))[0], { field: 'service_tier', value: 'flex', tier: 'flex', label: 'service_tier=flex' });
  for (const v of ['__proto__', 'constructor', 'toString', 'turbo']) {
    t.like(requestDimensions(dims, 'POST', 'v1/chat', scanned({ service_tier: v }))[0], { value: v, tier: undefined, label: 'service_tier=(other)' }, v);
  }
  t.like(requestDimensions(dims, 'POST', 'v1/chat', scanned({ service_tier: { a: 1 } }))[0], { value: '(an object)', tier: undefined });
  t.like(requestDimensions(dims, 'POST', 'v1/chat', scanned({ service_tier: 'x'.repeat(100) }))[0], { value: `${'x'.repeat(40)}…` });
  t.like(requestDimensions(dims, 'POST', 'v1/chat', scanned({ audio: { voice: 'alloy' } }))[0], { field: 'audio', tier: 'audio' });
  t.like(requestDimensions(dims, 'POST', 'v1/batches', undefined)[0], { field: 'route', value: 'POST v1/batches', tier: 'batch', label: 'batch' });
  t.deepEqual(reportedDimensions(dims, { service_tier: 'auto' }), []);
  t.like(reportedDimensions(dims, { service_tier: 'priority' })[0], { field: 'service_tier', tier: 'priority' });
  t.like(reportedDimensions(dims, { service_tier: 'hyper' })[0], { tier: undefined, label: 'service_tier=(other)' });
});

test('a model\'s price in its tiers: multiples rounded up, prices of their own, audio only with audio prices; unpriced tiers found', (t) => {
  const e = priceEntry('m', {
    input: 1.1, cachedInput: 0.11, cacheWriteInput: 1.375, output: 5.5, longContext: { aboveInputTokens: 1000, input: 2.2, output: 8.25 },
    tiers: { flex: { multiplier: 0.5 }, us: { multiplier: 1.1 }, priority: { input: 2, output: 9, longContext: { aboveInputTokens: 1000, input: 4, output: 13.5 } }, other: { input: 3, output: 3, longContext: { aboveInputTokens: 10, input: 3, output: 3 } } },
  }, 't');
  t.is(priceAt(e, []), e);
  t.is(priceAt(e, ['standard']), e);
  t.like(priceAt(e, ['flex']), { input: 550_000, cachedInput: 55_000, cacheWriteInput: 687_500, output: 2_750_000, longContext: { above: 1000, input: 1_100_000, output: 4_125_000 } });
  t.like(priceAt(e, ['us']), { input: 1_210_000, output: 6_050_000 }, 'a multiple is never below its product');
  t.like(priceAt(e, ['priority']), { input: 2_000_000, cachedInput: 2_000_000, output: 9_000_000, longContext: { input: 4_000_000 } });
  t.like(priceAt(e, ['priority', 'us']), { input: 2_200_000, output: 9_900_000 });
  t.is(priceAt(e, ['priority', 'other']), null, 'two tiers of their own prices: which one is billed is not declared');
  t.is(priceAt(e, ['nope']), null);
  t.is(priceAt(e, ['audio']), null, 'no audio prices');
  t.is(priceAt(e, ['flex']), priceAt(e, ['flex']), 'memoised');
  t.regex(priceAt(e, ['flex', 'us'])!.source, / at flex and us$/);
  const withAudio = priceEntry('a', { input: 1, output: 1, audio: { input: 10, output: 20 } }, 't');
  t.like(priceAt(withAudio, ['audio']), { input: 1_000_000, audio: { input: 10_000_000, output: 20_000_000 }, source: 't at audio' });
  const choice = (tier: string | undefined) => ({ name: 'x', field: 'x', value: 'v', tier, label: 'x=v' });
  t.is(unpricedChoice(e, [choice('flex'), choice('us')]), undefined);
  t.is(unpricedChoice(e, [choice('flex'), choice(undefined)])?.tier, undefined);
  t.truthy(unpricedChoice(e, [choice('priority'), choice('other')]));
  t.truthy(unpricedChoice(undefined, [choice('flex')]), 'an unpriced model prices no tier');
  // A tier of its own prices on a model with long-context prices needs its own; names are checked.
  t.throws(() => priceEntry('m', { input: 1, output: 1, longContext: { aboveInputTokens: 10, input: 2, output: 2 }, tiers: { p: { input: 2, output: 2 } } }, 't'), { instanceOf: PriceError, message: /tiers\.p: the model has long-context prices/ });
  t.throws(() => priceEntry('m', { input: 1, output: 1, tiers: { standard: { multiplier: 2 } } }, 't'), { instanceOf: PriceError, message: /not standard or audio/ });
  t.throws(() => priceEntry('m', { input: 1, output: 1, tiers: { fast: { multiplier: 0 } } }, 't'), { instanceOf: PriceError, message: /tiers\.fast\.multiplier/ });
  t.throws(() => priceEntry('m', { input: 1, output: 1, tiers: { fast: { multiplier: 2, input: 3 } as never } }, 't'), { instanceOf: PriceError, message: /tiers\.fast: only the fields multiplier/ });
});
