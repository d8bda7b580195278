/**
 * KEYWARD_PRICES: the operator's price file, the PriceBook's second layer (on top of
 * the providers' price files, price-data.ts). `{ "<provider id>": { "<model or prefix*>": { "input":
 * 2.5, "output": 10, "cachedInput"?, "cacheWriteInput"?, "cacheWrite1hInput"?, "maxOutput"?, "contextWindow"?,
 * "requestFee"?, "longContext"?: { "aboveInputTokens", "input", "output", … }, "audio"?, "perAudioSecond"?, "tiers"?: { "<tier>":
 * { "multiplier" } or { "input", "output", … } } } } }`,
 * USD per million tokens and whole tokens. Checked once at start against the loaded
 * providers: a problem stops start-up with a ConfigError naming the entry (an unknown
 * provider id lists the loaded ones; an unknown field is refused, so a typo never
 * silently leaves a default price standing).
 */
import { ConfigError } from '../settings/config.js';
import { MODEL } from './model-name.js';
import { priceEntry, PriceError, type PriceTables } from './prices.js';
import type { ModelPrice } from './price-types.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const shown = (v: unknown): string => JSON.stringify(v) ?? String(v);

/** The parsed file (config.ts reads it) → price tables by provider id; throws ConfigError naming the first bad entry. */
export function priceOverrides(file: Readonly<Record<string, unknown>>, providerIds: readonly string[]): PriceTables {
  const fail = (accepts: string, got: unknown): never => {
    throw new ConfigError('KEYWARD_PRICES', accepts, typeof got === 'string' ? got : shown(got));
  };
  const tables: Record<string, Record<string, ModelPrice>> = {};
  for (const [providerId, table] of Object.entries(file)) {
    if (!providerIds.includes(providerId)) fail(`provider ids among the loaded ones (${[...providerIds].sort().join(', ')})`, providerId);
    if (!isObject(table)) fail(`${providerId}: an object of prices by model name or prefix*`, table);
    const models: Record<string, ModelPrice> = {};
    for (const [model, price] of Object.entries(table as Record<string, unknown>)) {
      const entry = `${providerId}[${JSON.stringify(model)}]`;
      if (!MODEL.test(model)) fail(`${providerId}: a model name or prefix* as each key`, model);
      if (!isObject(price)) fail(`${entry}: an object { input, output, … } (USD per million tokens)`, price);
      // Amounts, limits and unknown fields (a typo must not leave a default price standing) are priceEntry's.
      try {
        priceEntry(entry, price as unknown as ModelPrice, 'KEYWARD_PRICES');
      } catch (err) {
        if (err instanceof PriceError) fail(err.message, err.got);
        throw err;
      }
      models[model] = Object.freeze({ ...(price as unknown as ModelPrice) });
    }
    tables[providerId] = Object.freeze(models);
  }
  return Object.freeze(tables);
}
