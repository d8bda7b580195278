/**
 * The loaded price files (price-schema.ts) resolved into each provider's table: its own models under
 * their names and aliases, and the families it takes from their publishers' files, each model under the
 * platform's names with the platform's declared difference (a field priced otherwise or left out, then a
 * regional uplift). Every entry keeps where its price was read (`as_of`, `source`) and, for a family's,
 * where the platform's difference was. A name priced twice in one table, a reference to a file or an
 * entry that does not exist, stops start-up (PriceFileError).
 *
 * `pricedTwice` is the rule that keeps a family priced once: no file's own entries may be a model of a
 * family another file publishes (they take it through `families` instead).
 */
import { MODEL } from './model-name.js';
import { priceOf, PriceFileError, type FamilyReferenceData, type PriceFileData, type PriceFileModel } from './price-schema.js';
import type { LongContextPrice, ModelPrice } from './price-types.js';

/** One provider's price file as loaded: `file` is how errors and sources name it (`providers/bedrock.prices.json`). */
export interface LoadedPriceFile {
  readonly providerId: string;
  readonly file: string;
  readonly data: PriceFileData;
}

/** A price in a provider's table, with where it was read. */
export interface ResolvedPrice {
  readonly price: ModelPrice;
  /** The day the price was read (the publisher's, for a family's model). */
  readonly asOf: string;
  /** Where it was read: an https URL. */
  readonly url: string;
  /** `providers/anthropic.prices.json (2026-11-25)`, and ` via providers/bedrock.prices.json (2026-11-25)` for a family's model. */
  readonly source: string;
}

/** provider id → price-book name (model or `prefix*`) → its price. */
export type ResolvedTables = ReadonlyMap<string, ReadonlyMap<string, ResolvedPrice>>;

/** `n` USD times `m`, kept to six decimal places (a micro-dollar per million tokens). */
const times = (n: number, m: number): number => Math.round(n * m * 1e6) / 1e6;

/** Every token price of `p` times `m` (limits and per-request fees unchanged). */
export function scaled(p: ModelPrice, m: number): ModelPrice {
  const tier = <T extends Partial<Pick<ModelPrice, 'input' | 'output' | 'cachedInput' | 'cacheWriteInput' | 'cacheWrite1hInput'>>>(q: T): T => {
    const out: Record<string, unknown> = { ...q };
    for (const k of ['input', 'output', 'cachedInput', 'cacheWriteInput', 'cacheWrite1hInput'] as const) if (typeof q[k] === 'number') out[k] = times(q[k], m);
    return out as T;
  };
  // A multiplier tier stays a multiple of the (now scaled) prices; a tier of its own prices is scaled with them.
  const tiers = p.tiers && Object.fromEntries(Object.entries(p.tiers).map(([name, t]) => [name, 'multiplier' in t ? t : { ...tier(t), ...(t.longContext ? { longContext: tier(t.longContext) } : {}) }]));
  return {
    ...tier(p),
    ...(p.longContext ? { longContext: tier(p.longContext) } : {}),
    ...(p.audio ? { audio: tier(p.audio) } : {}),
    ...(tiers ? { tiers } : {}),
  };
}

/** `base` with a platform's difference: its own amounts for some fields, some left out (the cache ones from the long-context tier too). */
function differing(base: ModelPrice, d: NonNullable<FamilyReferenceData['differs']>[string] | undefined): ModelPrice {
  if (!d) return base;
  const out: Record<string, unknown> = { ...base, ...priceOf(d) };
  for (const field of d.without ?? []) {
    delete out[field];
    if ((field === 'cachedInput' || field === 'cacheWriteInput' || field === 'cacheWrite1hInput') && out.longContext) {
      const long: Record<string, unknown> = { ...(out.longContext as LongContextPrice) };
      delete long[field];
      out.longContext = long;
    }
  }
  return out as unknown as ModelPrice;
}

const dated = (file: string, asOf: string): string => `${file} (${asOf})`;

/** A family's price with only the tiers the platform sells (`keep`; none by default: a platform's modes are its own). */
function withTiers(p: ModelPrice, keep: readonly string[] | undefined): ModelPrice {
  if (!p.tiers) return p;
  const tiers = Object.fromEntries(Object.entries(p.tiers).filter(([name]) => keep?.includes(name)));
  const { tiers: _all, ...rest } = p;
  return Object.keys(tiers).length > 0 ? { ...rest, tiers } : rest;
}

export function resolvePriceFiles(files: readonly LoadedPriceFile[]): Map<string, Map<string, ResolvedPrice>> {
  const byProvider = new Map(files.map((f) => [f.providerId, f]));
  const tables = new Map<string, Map<string, ResolvedPrice>>();
  for (const f of files) {
    const table = new Map<string, ResolvedPrice>();
    const from = new Map<string, string>();
    const add = (name: string, where: string, resolved: ResolvedPrice): void => {
      if (!MODEL.test(name)) throw new PriceFileError(f.file, where, `${JSON.stringify(name)} is not a model name or prefix*`);
      const first = from.get(name);
      if (first !== undefined) throw new PriceFileError(f.file, where, `${JSON.stringify(name)} is priced twice in this table (also by ${first})`);
      from.set(name, where);
      table.set(name, resolved);
    };
    for (const [key, entry] of Object.entries(f.data.models ?? {})) {
      const where = `models[${JSON.stringify(key)}]`;
      const resolved = own(f, entry);
      for (const name of [key, ...(entry.aliases ?? [])]) add(name, where, resolved);
    }
    for (const [i, ref] of (f.data.families ?? []).entries()) {
      const publisher = byProvider.get(ref.from);
      if (!publisher?.data.models) throw new PriceFileError(f.file, `families[${i}].from`, `no loaded provider ${JSON.stringify(ref.from)} has a price file with models`);
      for (const [key, target] of Object.entries(ref.models)) {
        const where = `families[${i}].models[${JSON.stringify(key)}]`;
        const entry = publisher.data.models[key];
        if (!entry) throw new PriceFileError(f.file, where, `${publisher.file} has no model ${JSON.stringify(key)}`);
        for (const [name, price] of platformNames(ref, key, target, differing(withTiers(priceOf(entry), ref.tiers), ref.differs?.[key]))) {
          const publisherSide = own(publisher, entry);
          add(name, where, { ...publisherSide, price, source: `${publisherSide.source} via ${dated(f.file, ref.as_of ?? f.data.as_of)}` });
        }
      }
      for (const key of [...Object.keys(ref.differs ?? {}), ...(ref.uplift?.except ?? [])]) {
        if (!(key in ref.models)) throw new PriceFileError(f.file, `families[${i}]`, `${JSON.stringify(key)} is given a difference but is not among its models`);
      }
    }
    tables.set(f.providerId, table);
  }
  return tables;
}

function own(f: LoadedPriceFile, entry: PriceFileModel): ResolvedPrice {
  const asOf = entry.as_of ?? f.data.as_of;
  return { price: priceOf(entry), asOf, url: entry.source ?? f.data.source, source: dated(f.file, asOf) };
}

/** A family model's names on the platform and the price of each (the uplift where it applies). */
function platformNames(ref: FamilyReferenceData, key: string, target: string | string[], price: ModelPrice): [string, ModelPrice][] {
  const up = ref.uplift && !(ref.uplift.except ?? []).includes(key) ? ref.uplift : undefined;
  const upped = up ? scaled(price, up.multiplier) : price;
  // Exact names: the uplift applies unless it names templates (those only shape ids).
  if (Array.isArray(target)) return target.map((name) => [name, up && !up.names ? upped : price]);
  return (ref.names ?? ['{id}']).map((t) => [t.replace('{id}', target), up && (!up.names || up.names.includes(t)) ? upped : price]);
}

/**
 * Every own entry (name or alias) of a file that is a model of a family another file publishes: such a model
 * is priced twice. A name is compared without a platform's prefix (`us.anthropic.`, `anthropic/`,
 * `accounts/fireworks/models/`) or version suffix (`@20250929`). Empty when each family is priced once.
 */
export function pricedTwice(files: readonly LoadedPriceFile[]): string[] {
  const problems: string[] = [];
  const families = files.flatMap((f) => (f.data.publishes ?? []).map((p) => ({ home: f.file, family: p.family, models: new RegExp(p.models) })));
  for (const f of files) {
    for (const [key, entry] of Object.entries(f.data.models ?? {})) {
      for (const name of [key, ...(entry.aliases ?? [])]) {
        const bare = name.replace(/^.*\//, '').replace(/^(?:[a-z-]+\.)?(?:anthropic|amazon|meta|mistral|cohere|google)\./, '').replace(/@.*$/, '');
        for (const fam of families) {
          if (fam.home !== f.file && fam.models.test(bare)) problems.push(`${f.file}: models[${JSON.stringify(key)}] prices ${JSON.stringify(name)}, a model of the ${fam.family} family that ${fam.home} prices: take it through \`families\``);
        }
      }
    }
  }
  return problems;
}
