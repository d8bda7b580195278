/**
 * The price book: every provider file's `prices`, then KEYWARD_PRICES on top,
 * as integer micro-dollars per million tokens (money.ts), looked up by the
 * model a request names: an exact name first, then the longest `prefix*`.
 * Built once at start; a lookup costs one Map get, plus a scan of the
 * provider's prefixes when the name is not listed exactly.
 *
 * usageCost prices what a provider reported (cached input at its cached
 * price); the budget's reservation uses worstCaseCost with bounds it derives
 * from the request.
 */
import type { ModelPrice, TokenUsage } from './provider.js';
import { priceMicrosPerMillion, tokensCost } from './money.js';

/** A model's prices in µ$ per million tokens, with its published output and context limits. */
export interface PriceEntry {
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWriteInput: number;
  readonly output: number;
  readonly maxOutput?: number;
  readonly contextWindow?: number;
  /** Where it came from: `<provider file>` dated, or KEYWARD_PRICES. */
  readonly source: string;
}

/** provider id → model name or `prefix*` → its price, as written (USD per million tokens). */
export type PriceTables = Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>;

export class PriceError extends Error {}

/** One written price → its entry; throws PriceError naming the field when an amount is not a price. */
export function priceEntry(where: string, p: ModelPrice, source: string): PriceEntry {
  const amount = (field: keyof ModelPrice, value: unknown): number => {
    const micros = priceMicrosPerMillion(value);
    if (micros === undefined) throw new PriceError(`${where}.${field}: USD per million tokens, a number ≥ 0 with at most six decimal places`);
    return micros;
  };
  const limit = (field: keyof ModelPrice, value: unknown): number | undefined => {
    if (value === undefined) return undefined;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 100_000_000) {
      throw new PriceError(`${where}.${field}: a whole number of tokens from 1 to 100000000`);
    }
    return value;
  };
  const input = amount('input', p.input);
  return Object.freeze({
    input,
    cachedInput: p.cachedInput === undefined ? input : amount('cachedInput', p.cachedInput),
    cacheWriteInput: p.cacheWriteInput === undefined ? input : amount('cacheWriteInput', p.cacheWriteInput),
    output: amount('output', p.output),
    ...(p.maxOutput !== undefined ? { maxOutput: limit('maxOutput', p.maxOutput) } : {}),
    ...(p.contextWindow !== undefined ? { contextWindow: limit('contextWindow', p.contextWindow) } : {}),
    source,
  });
}

interface ProviderPrices {
  readonly exact: ReadonlyMap<string, PriceEntry>;
  /** `prefix*` entries, longest prefix first. */
  readonly prefixes: readonly (readonly [string, PriceEntry])[];
}

export class PriceBook {
  private readonly byProvider = new Map<string, ProviderPrices>();

  /** `layers` in order, later ones overriding earlier entries of the same provider and name (files, then KEYWARD_PRICES). */
  constructor(layers: readonly { tables: PriceTables; source: (providerId: string) => string }[]) {
    const merged = new Map<string, Map<string, PriceEntry>>();
    for (const layer of layers) {
      for (const [providerId, table] of Object.entries(layer.tables)) {
        const entries = merged.get(providerId) ?? new Map<string, PriceEntry>();
        for (const [name, price] of Object.entries(table)) {
          entries.set(name, priceEntry(`${providerId}.prices[${JSON.stringify(name)}]`, price, layer.source(providerId)));
        }
        merged.set(providerId, entries);
      }
    }
    for (const [providerId, entries] of merged) {
      const exact = new Map<string, PriceEntry>();
      const prefixes: [string, PriceEntry][] = [];
      for (const [name, entry] of entries) {
        if (name.endsWith('*')) prefixes.push([name.slice(0, -1), entry]);
        else exact.set(name, entry);
      }
      prefixes.sort((a, b) => b[0].length - a[0].length);
      this.byProvider.set(providerId, { exact, prefixes });
    }
  }

  /** The price of `model` at `providerId`: exact name, else the longest matching prefix, else undefined (unpriced). */
  lookup(providerId: string, model: string): PriceEntry | undefined {
    return this.match(providerId, model)?.price;
  }

  /**
   * lookup, with the table's name that matched: the model itself or its `prefix*`. Metrics label spend by
   * this name, never by the caller's free-form model string, so their cardinality is the table's size.
   */
  match(providerId: string, model: string): { name: string; price: PriceEntry } | undefined {
    const prices = this.byProvider.get(providerId);
    if (!prices) return undefined;
    const exact = prices.exact.get(model);
    if (exact) return { name: model, price: exact };
    for (const [prefix, entry] of prices.prefixes) if (model.startsWith(prefix)) return { name: `${prefix}*`, price: entry };
    return undefined;
  }

  /** Does `providerId` price anything at all? */
  prices(providerId: string): boolean {
    return this.byProvider.has(providerId);
  }
}

/** The cost in µ$ of what a provider reported: cached and cache-written input at their prices, the rest at `input`. */
export function usageCost(price: PriceEntry, usage: TokenUsage): number {
  const cached = Math.max(0, usage.cachedInputTokens ?? 0);
  const written = Math.max(0, usage.cacheWriteInputTokens ?? 0);
  const plain = Math.max(0, usage.inputTokens - cached - written);
  return tokensCost(plain, price.input) + tokensCost(cached, price.cachedInput) + tokensCost(written, price.cacheWriteInput) + tokensCost(usage.outputTokens, price.output);
}

/**
 * The most a request can cost: `inputTokens` (an upper bound of its input) at the highest input price
 * (uncached; a cache write can cost more than a plain token), and `outputTokens` at the output price.
 */
export function worstCaseCost(price: PriceEntry, inputTokens: number, outputTokens: number): number {
  return tokensCost(inputTokens, Math.max(price.input, price.cacheWriteInput, price.cachedInput)) + tokensCost(outputTokens, price.output);
}
