/**
 * Test support: the price files shipped in providers/ (`<id>.prices.json`), read from the source folder,
 * checked by the price file schema and resolved as the gateway resolves them (families taken by the
 * platforms that sell them), for tests that price a model as the gateway would without starting one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { readPriceFile } from '../../src/pricing/price-schema.js';
import { resolvePriceFiles, type LoadedPriceFile, type ResolvedPrice } from '../../src/pricing/price-data.js';
import type { ModelPrice } from '../../src/catalog/provider.js';
import { ROOT } from './app.js';

export const PROVIDERS_SOURCE = path.join(ROOT, 'providers');

/** Every shipped price file, parsed and checked (a bad one throws PriceFileError). */
export function shippedPriceFiles(): LoadedPriceFile[] {
  return readdirSync(PROVIDERS_SOURCE).filter((f) => f.endsWith('.prices.json')).sort().map((f) => {
    const file = `providers/${f}`;
    return { providerId: f.replace(/\.prices\.json$/, ''), file, data: readPriceFile(file, JSON.parse(readFileSync(path.join(PROVIDERS_SOURCE, f), 'utf8'))) };
  });
}

let resolved: Map<string, Map<string, ResolvedPrice>> | undefined;

/** provider id → its resolved table, as the gateway builds it from the shipped files. */
export function shippedTables(): ReadonlyMap<string, ReadonlyMap<string, ResolvedPrice>> {
  return (resolved ??= resolvePriceFiles(shippedPriceFiles()));
}

/** One provider's table as ModelPrices by name (a PriceBook layer's `tables[id]`). */
export function shippedTable(providerId: string): Record<string, ModelPrice> {
  const table = shippedTables().get(providerId);
  if (!table) throw new Error(`no shipped price file for ${providerId}`);
  return Object.fromEntries([...table].map(([name, r]) => [name, r.price]));
}

/** The shipped price of `name` (a table name: a model or a `prefix*`) at `providerId`. */
export function shippedPrice(providerId: string, name: string): ModelPrice {
  const price = shippedTables().get(providerId)?.get(name)?.price;
  if (!price) throw new Error(`${providerId} has no shipped price named ${name}`);
  return price;
}
