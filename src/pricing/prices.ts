/**
 * The price book: every provider's price table (its price file, resolved: price-data.ts), then KEYWARD_PRICES on top,
 * as integer micro-dollars per million tokens (money.ts), looked up by the
 * model a request names: an exact name first, then the longest `prefix*`.
 * Built once at start; a lookup costs one Map get, plus a scan of the
 * provider's prefixes when the name is not listed exactly.
 *
 * A model with neither (unpriced) is refused under a budget (`KEYWARD_UNPRICED=
 * refuse`, the default), or with `family_max` priced at the highest price the
 * book lists for its family (pricing/families.ts), field by field: each of
 * input, cached, cache-write, output and audio at the family's dearest (long-
 * context tiers included), its largest output and context window. That bounds
 * what the model costs only while no model of the family costs more than the
 * ones listed: a price a newer model raises is the operator's to add.
 *
 * usageCost prices what a provider reported (cached input at its cached
 * price); the budget's reservation uses worstCaseCost with bounds it derives
 * from the request. A model with long-context prices (`longContext`) is priced
 * whole at them when its input passes the threshold: the real input for
 * usageCost, the input bound for worstCaseCost (so a reservation is never
 * priced at a cheaper tier than the request turns out to be). A `requestFee`
 * (Perplexity's search fee) is added to both.
 */
import type { AudioPrice, LongContextPrice, ModelPrice, TierPrice, TokenUsage } from './price-types.js';
import { familyOf } from './families.js';
import { priceMicrosPerMillion, tokensCost } from './money.js';

/** One set of prices in µ$ per million tokens. */
export interface PriceTier {
  readonly input: number;
  readonly cachedInput: number;
  readonly cacheWriteInput: number;
  /** Input written to the cache for an hour (Anthropic's 1-hour TTL); undefined: the model has no such price (such writes are unpriced). */
  readonly cacheWrite1hInput?: number;
  readonly output: number;
}

/** A model's prices in µ$ per million tokens, with its published output and context limits. */
export interface PriceEntry extends PriceTier {
  /** The prices of a request whose input passes `above` tokens (all of its tokens, not only those past it). */
  readonly longContext?: PriceTier & { readonly above: number };
  /** µ$ per request on top of its tokens (absent or 0 for most models). */
  readonly requestFee?: number;
  /** Audio token prices in µ$ per million (realtime and audio models): absent, audio costs what text does. */
  readonly audio?: { readonly input: number; readonly cachedInput: number; readonly output: number };
  /** µ$ per second of input audio (a model billed by duration: realtime transcription's whisper-1). */
  readonly perAudioSecond?: number;
  readonly maxOutput?: number;
  readonly contextWindow?: number;
  /** Its prices in the tiers a price dimension selects (ModelPrice.tiers), by tier name. */
  readonly tiers?: ReadonlyMap<string, TierEntry>;
  /** Where it came from: its price file dated (and the platform's file that took it from a family), or KEYWARD_PRICES. */
  readonly source: string;
}

/** A tier's prices in µ$ per million tokens: a multiple of the model's own, or its own. */
export type TierEntry = { readonly multiplier: number } | (PriceTier & { readonly longContext?: PriceTier & { readonly above: number } });

/** provider id → model name or `prefix*` → its price, as written (USD per million tokens). */
export type PriceTables = Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>;

/** A written price that is not one; `got` is the offending value (for a message that shows it). */
export class PriceError extends Error {
  constructor(message: string, readonly got?: unknown) {
    super(message);
  }
}

/** The fields a written price may have: any other is a typo that would leave a default standing, so it is refused. */
export const PRICE_FIELDS: readonly (keyof ModelPrice)[] = ['input', 'output', 'cachedInput', 'cacheWriteInput', 'cacheWrite1hInput', 'maxOutput', 'contextWindow', 'requestFee', 'longContext', 'audio', 'perAudioSecond', 'tiers'];
const TIER_FIELDS = ['input', 'output', 'cachedInput', 'cacheWriteInput', 'cacheWrite1hInput', 'longContext'];
const AUDIO_FIELDS: readonly (keyof AudioPrice)[] = ['input', 'output', 'cachedInput'];
const LONG_CONTEXT_FIELDS: readonly (keyof LongContextPrice)[] = ['aboveInputTokens', 'input', 'output', 'cachedInput', 'cacheWriteInput', 'cacheWrite1hInput'];

function refuseUnknown(where: string, o: object, fields: readonly string[]): void {
  for (const field of Object.keys(o)) {
    if (!fields.includes(field)) throw new PriceError(`${where}: only the fields ${fields.join(', ')}`, field);
  }
}

/** One written price → its entry; throws PriceError naming the field when an amount is not a price. */
export function priceEntry(where: string, p: ModelPrice, source: string): PriceEntry {
  refuseUnknown(where, p, PRICE_FIELDS);
  const amount = (field: string, value: unknown, unit = 'USD per million tokens'): number => {
    const micros = priceMicrosPerMillion(value);
    if (micros === undefined) throw new PriceError(`${where}.${field}: ${unit}, a number ≥ 0 with at most six decimal places`, value);
    return micros;
  };
  const tokens = (field: string, value: unknown): number => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 100_000_000) {
      throw new PriceError(`${where}.${field}: a whole number of tokens from 1 to 100000000`, value);
    }
    return value;
  };
  const tier = (q: Omit<LongContextPrice, 'aboveInputTokens'>, at: string): PriceTier => {
    const input = amount(`${at}input`, q.input);
    return {
      input,
      cachedInput: q.cachedInput === undefined ? input : amount(`${at}cachedInput`, q.cachedInput),
      cacheWriteInput: q.cacheWriteInput === undefined ? input : amount(`${at}cacheWriteInput`, q.cacheWriteInput),
      // No default: a 1-hour write of a model with no 1-hour price is unpriced (its request settles fail closed).
      ...(q.cacheWrite1hInput === undefined ? {} : { cacheWrite1hInput: amount(`${at}cacheWrite1hInput`, q.cacheWrite1hInput) }),
      output: amount(`${at}output`, q.output),
    };
  };
  const audioTier = (a: AudioPrice): { input: number; cachedInput: number; output: number } => {
    const input = amount('audio.input', a.input);
    return { input, cachedInput: a.cachedInput === undefined ? input : amount('audio.cachedInput', a.cachedInput), output: amount('audio.output', a.output) };
  };
  const long: unknown = p.longContext;
  if (long !== undefined && (typeof long !== 'object' || long === null || Array.isArray(long))) {
    throw new PriceError(`${where}.longContext: an object { aboveInputTokens, input, output, cachedInput?, cacheWriteInput? }`);
  }
  const longContext = long === undefined ? undefined : (long as LongContextPrice);
  if (longContext) refuseUnknown(`${where}.longContext`, longContext, LONG_CONTEXT_FIELDS);
  const audioRaw: unknown = p.audio;
  if (audioRaw !== undefined && (typeof audioRaw !== 'object' || audioRaw === null || Array.isArray(audioRaw))) {
    throw new PriceError(`${where}.audio: an object { input, output, cachedInput? }`);
  }
  const audio = audioRaw === undefined ? undefined : (audioRaw as AudioPrice);
  if (audio) refuseUnknown(`${where}.audio`, audio, AUDIO_FIELDS);
  const tiers = tierEntries(where, p.tiers, longContext !== undefined, (at, q) => ({ ...tier(q, `${at}.`), ...(q.longContext ? { longContext: { ...tier(q.longContext, `${at}.longContext.`), above: tokens(`${at}.longContext.aboveInputTokens`, q.longContext.aboveInputTokens) } } : {}) }));
  return Object.freeze({
    ...tier(p, ''),
    // An amount in USD → µ$: the same conversion as a price per million tokens → µ$ per million tokens.
    ...(p.requestFee !== undefined ? { requestFee: amount('requestFee', p.requestFee, 'USD per request') } : {}),
    ...(p.perAudioSecond !== undefined ? { perAudioSecond: amount('perAudioSecond', p.perAudioSecond, 'USD per second of input audio') } : {}),
    ...(audio !== undefined ? { audio: Object.freeze(audioTier(audio)) } : {}),
    ...(longContext !== undefined ? { longContext: Object.freeze({ ...tier(longContext, 'longContext.'), above: tokens('longContext.aboveInputTokens', longContext.aboveInputTokens) }) } : {}),
    ...(p.maxOutput !== undefined ? { maxOutput: tokens('maxOutput', p.maxOutput) } : {}),
    ...(p.contextWindow !== undefined ? { contextWindow: tokens('contextWindow', p.contextWindow) } : {}),
    ...(tiers ? { tiers } : {}),
    source,
  });
}

/**
 * A written `tiers` → its entries; `own` turns a tier's own prices into µ$. A tier of its own prices on a model
 * with long-context prices must give its own long-context prices (else a long request would be priced below them).
 */
function tierEntries(where: string, raw: unknown, hasLong: boolean, own: (at: string, q: Exclude<TierPrice, { multiplier: number }>) => TierEntry): ReadonlyMap<string, TierEntry> | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new PriceError(`${where}.tiers: an object of tiers by name`);
  const out = new Map<string, TierEntry>();
  for (const [name, t] of Object.entries(raw as Record<string, unknown>)) {
    const at = `tiers.${name}`;
    if (!/^[a-z][a-z0-9_]{0,39}$/.test(name) || name === 'standard' || name === 'audio') throw new PriceError(`${where}.tiers: a tier name of lower-case letters, digits and _ (not standard or audio)`, name);
    if (typeof t !== 'object' || t === null || Array.isArray(t)) throw new PriceError(`${where}.${at}: { multiplier } or { input, output, cachedInput?, cacheWriteInput?, longContext? }`);
    if ('multiplier' in t) {
      refuseUnknown(`${where}.${at}`, t, ['multiplier']);
      const m = (t as { multiplier: unknown }).multiplier;
      if (typeof m !== 'number' || !Number.isFinite(m) || m <= 0 || m > 100) throw new PriceError(`${where}.${at}.multiplier: a number above 0, at most 100`, m);
      out.set(name, Object.freeze({ multiplier: m }));
      continue;
    }
    refuseUnknown(`${where}.${at}`, t, TIER_FIELDS);
    const q = t as Exclude<TierPrice, { multiplier: number }>;
    if (hasLong && q.longContext === undefined) throw new PriceError(`${where}.${at}: the model has long-context prices, so the tier needs its own \`longContext\` (or a multiplier)`);
    if (q.longContext !== undefined) refuseUnknown(`${where}.${at}.longContext`, q.longContext, LONG_CONTEXT_FIELDS);
    out.set(name, Object.freeze(own(at, q)));
  }
  return out;
}

interface ProviderPrices {
  readonly exact: ReadonlyMap<string, PriceEntry>;
  /** `prefix*` entries, longest prefix first. */
  readonly prefixes: readonly (readonly [string, PriceEntry])[];
  /** Family → the dearest of its entries (KEYWARD_UNPRICED=family_max only). */
  readonly families: ReadonlyMap<string, PriceEntry>;
}

/** How a model with no exact or prefix price is priced (KEYWARD_UNPRICED): not at all, or at its family's dearest. */
export type UnpricedRule = 'refuse' | 'family_max';
export const UNPRICED_RULES: readonly UnpricedRule[] = ['refuse', 'family_max'];

/** A price found: `name` is the table's name that matched (the model, its `prefix*`, or `family_max:<family>`). */
export interface PriceMatch {
  readonly name: string;
  readonly price: PriceEntry;
}

/** The dearest of `tier`'s and `q`'s prices, field by field. */
const dearerTier = (tier: PriceTier, q: PriceTier): PriceTier => ({
  input: Math.max(tier.input, q.input), cachedInput: Math.max(tier.cachedInput, q.cachedInput),
  cacheWriteInput: Math.max(tier.cacheWriteInput, q.cacheWriteInput), output: Math.max(tier.output, q.output),
  ...(tier.cacheWrite1hInput !== undefined || q.cacheWrite1hInput !== undefined ? { cacheWrite1hInput: Math.max(tier.cacheWrite1hInput ?? 0, q.cacheWrite1hInput ?? 0) } : {}),
});
const largest = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.max(a, b));

/** One entry at least as dear as each of `entries` on every price and limit (their long-context tiers folded in). */
export function dearestOf(entries: readonly PriceEntry[], source: string): PriceEntry {
  let tier: PriceTier = { input: 0, cachedInput: 0, cacheWriteInput: 0, output: 0 };
  let audio = { input: 0, cachedInput: 0, output: 0 };
  let anyAudio = false;
  let requestFee: number | undefined;
  let perAudioSecond: number | undefined;
  let maxOutput: number | undefined;
  let contextWindow: number | undefined;
  for (const e of entries) {
    const own = e.longContext ? dearerTier(e, e.longContext) : e;
    tier = dearerTier(tier, own);
    // Audio tokens of a model without audio prices cost what its text does.
    const a = e.audio ?? own;
    anyAudio ||= e.audio !== undefined;
    audio = { input: Math.max(audio.input, a.input), cachedInput: Math.max(audio.cachedInput, a.cachedInput), output: Math.max(audio.output, a.output) };
    requestFee = largest(requestFee, e.requestFee);
    perAudioSecond = largest(perAudioSecond, e.perAudioSecond);
    maxOutput = largest(maxOutput, e.maxOutput);
    contextWindow = largest(contextWindow, e.contextWindow);
  }
  return Object.freeze({
    ...tier,
    ...(anyAudio ? { audio: Object.freeze(audio) } : {}),
    ...(requestFee !== undefined ? { requestFee } : {}),
    ...(perAudioSecond !== undefined ? { perAudioSecond } : {}),
    ...(maxOutput !== undefined ? { maxOutput } : {}),
    ...(contextWindow !== undefined ? { contextWindow } : {}),
    source,
  });
}

export class PriceBook {
  private readonly byProvider = new Map<string, ProviderPrices>();
  readonly unpriced: UnpricedRule;

  /**
   * `layers` in order, later ones overriding earlier entries of the same provider and name (files, then
   * KEYWARD_PRICES), each entry's `source` said by its layer; `unpriced`: how a model none of them lists is priced.
   */
  constructor(layers: readonly { tables: PriceTables; source: (providerId: string, name: string) => string }[], unpriced: UnpricedRule = 'refuse') {
    this.unpriced = unpriced;
    const merged = new Map<string, Map<string, PriceEntry>>();
    for (const layer of layers) {
      for (const [providerId, table] of Object.entries(layer.tables)) {
        const entries = merged.get(providerId) ?? new Map<string, PriceEntry>();
        for (const [name, price] of Object.entries(table)) {
          entries.set(name, priceEntry(`${providerId}.prices[${JSON.stringify(name)}]`, price, layer.source(providerId, name)));
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
      this.byProvider.set(providerId, { exact, prefixes, families: unpriced === 'family_max' ? familiesOf(providerId, entries) : new Map() });
    }
  }

  /**
   * The price of `model` at `providerId`: exact name, else the longest matching prefix, else (family_max) its
   * family's dearest, else undefined (unpriced).
   */
  lookup(providerId: string, model: string): PriceEntry | undefined {
    return this.match(providerId, model)?.price;
  }

  /**
   * lookup, with the table's name that matched: the model itself, its `prefix*` or `family_max:<family>`. Metrics
   * label spend by this name, never by the caller's free-form model string, so their cardinality is the table's size.
   */
  match(providerId: string, model: string): PriceMatch | undefined {
    const prices = this.byProvider.get(providerId);
    if (!prices) return undefined;
    const listed = listedIn(prices, model);
    if (listed || prices.families.size === 0) return listed;
    const family = familyOf(providerId, model);
    const dearest = family === undefined ? undefined : prices.families.get(family);
    return dearest && { name: `family_max:${family}`, price: dearest };
  }

  /** Whether `model` has a price of its own at `providerId` (its name or a `prefix*`): no rule needed. */
  lists(providerId: string, model: string): boolean {
    const prices = this.byProvider.get(providerId);
    return prices !== undefined && listedIn(prices, model) !== undefined;
  }

  /** Does `providerId` price anything at all? */
  prices(providerId: string): boolean {
    return this.byProvider.has(providerId);
  }
}

function listedIn(prices: ProviderPrices, model: string): PriceMatch | undefined {
  const exact = prices.exact.get(model);
  if (exact) return { name: model, price: exact };
  for (const [prefix, entry] of prices.prefixes) if (model.startsWith(prefix)) return { name: `${prefix}*`, price: entry };
  return undefined;
}

/** Each family of a provider's entries → their dearest. */
function familiesOf(providerId: string, entries: ReadonlyMap<string, PriceEntry>): Map<string, PriceEntry> {
  const members = new Map<string, PriceEntry[]>();
  for (const [name, entry] of entries) {
    const family = familyOf(providerId, name);
    if (family !== undefined) members.set(family, [...(members.get(family) ?? []), entry]);
  }
  const families = new Map<string, PriceEntry>();
  for (const [family, list] of members) {
    const sources = [...new Set(list.map((e) => e.source))].join(', ');
    families.set(family, dearestOf(list, `KEYWARD_UNPRICED=family_max: the dearest of ${family} in ${sources}`));
  }
  return families;
}

/** The prices that apply to a request of `inputTokens` input tokens: the long-context ones past their threshold. */
export function tierFor(price: PriceEntry, inputTokens: number): PriceTier {
  return price.longContext !== undefined && inputTokens > price.longContext.above ? price.longContext : price;
}

/**
 * The cost in µ$ of what a provider reported: cached and cache-written input at their prices (writes kept for an
 * hour at the 1-hour price), the rest at `input`; reasoning is inside the output count; audio tokens (a part of
 * input or output) at the model's audio prices when it has them, else at its text prices. A 1-hour write of a
 * model with no 1-hour price is priced as a 5-minute one here and named by `unpricedUsage` (fail closed).
 */
export function usageCost(entry: PriceEntry, usage: TokenUsage): number {
  const price = tierFor(entry, usage.inputTokens);
  const cached = Math.max(0, usage.cachedInputTokens ?? 0);
  const written = Math.max(0, usage.cacheWriteInputTokens ?? 0);
  const written1h = Math.min(written, Math.max(0, usage.cacheWrite1hInputTokens ?? 0));
  const audio = entry.audio ?? { input: price.input, cachedInput: price.cachedInput, output: price.output };
  const audioIn = Math.max(0, usage.audioInputTokens ?? 0);
  const cachedAudio = Math.min(audioIn, cached, Math.max(0, usage.cachedAudioInputTokens ?? 0));
  const audioOut = Math.min(Math.max(0, usage.outputTokens), Math.max(0, usage.audioOutputTokens ?? 0));
  const cachedText = cached - cachedAudio;
  const plainText = Math.max(0, usage.inputTokens - audioIn - cachedText - written);
  return (entry.requestFee ?? 0) + tokensCost(plainText, price.input) + tokensCost(cachedText, price.cachedInput)
    + tokensCost(written - written1h, price.cacheWriteInput) + tokensCost(written1h, price.cacheWrite1hInput ?? price.cacheWriteInput)
    + tokensCost(audioIn - cachedAudio, audio.input) + tokensCost(cachedAudio, audio.cachedInput)
    + tokensCost(usage.outputTokens - audioOut, price.output) + tokensCost(audioOut, audio.output);
}

/**
 * The most a request can cost: `inputTokens` (an upper bound of its input) at the highest input price
 * (uncached; a cache write can cost more than a plain token; audio can cost more than text), and
 * `outputTokens` at the highest output price (text or audio). `audioInput` false: the request carries no media
 * (spend-bound.ts), so none of its input can be audio.
 */
export function worstCaseCost(entry: PriceEntry, inputTokens: number, outputTokens: number, audioInput = true): number {
  // The tier of the bound: never cheaper than the tier of the real input, which is at most the bound.
  const price = tierFor(entry, inputTokens);
  // Audio may be any share of either side: the dearer of text and audio prices bounds every token.
  const a = entry.audio;
  const audioIn = audioInput ? Math.max(a?.input ?? 0, a?.cachedInput ?? 0) : 0;
  const input = Math.max(price.input, price.cacheWriteInput, price.cacheWrite1hInput ?? 0, price.cachedInput, audioIn);
  return (entry.requestFee ?? 0) + tokensCost(inputTokens, input) + tokensCost(outputTokens, Math.max(price.output, a?.output ?? 0));
}

/** The usage fields `usage` reports that `entry` has no price for (a 1-hour cache write without a 1-hour price). */
export function unpricedUsage(entry: PriceEntry, usage: TokenUsage): string[] {
  const written1h = Math.min(usage.cacheWriteInputTokens ?? 0, usage.cacheWrite1hInputTokens ?? 0);
  return written1h > 0 && tierFor(entry, usage.inputTokens).cacheWrite1hInput === undefined ? ['cache_write_1h'] : [];
}
