/**
 * Price dimensions (PriceDimension, price-types.ts): what a request sets that changes what its provider
 * bills, read from the body fields the scan found, the route it took, and what the response reports; and a
 * model's price in the tiers they select. A value no declaration prices selects no tier (`tier` undefined):
 * under a cap such a request is refused (400 price_unknown, spend-bound.ts and the stages), never priced
 * lower; without one it is counted as unpriced. Declarations are checked at load (validateDimensions).
 *
 * Promises: a lookup reads only own properties of `values` (a value `__proto__` or `constructor` selects
 * nothing); a model's tiered price is computed once per model and set of tiers (memoised), with every token
 * price rounded up (a tier never prices below its multiple).
 */
import type { PriceEntry, PriceTier, TierEntry } from './prices.js';
import type { PriceDimension } from './price-types.js';

/** The model's own prices; `audio`: its audio prices (ModelPrice.audio). */
export const STANDARD = 'standard';
export const AUDIO = 'audio';

/** A scanned body field's value (the body scan's FieldValue, structurally). */
type Scanned = { readonly kind: string; readonly value?: unknown };

/** What one dimension of a request selects. `tier` undefined: the value has no price anywhere. */
export interface DimensionChoice {
  readonly name: string;
  /** The body field, `route`, or the response key that said it. */
  readonly field: string;
  /** The value as the request (or response) gave it, at most 40 characters; `(an array)` for a non-scalar. */
  readonly value: string;
  readonly tier: string | undefined;
  /** How the metric labels it: `name=value` for a declared value, `name=(other)` for any other (callers' strings stay out of labels). */
  readonly label: string;
}

type Declared = Readonly<Record<string, PriceDimension>> | undefined;

const tierOf = (d: PriceDimension, value: string): string | undefined => (d.values && Object.hasOwn(d.values, value) ? d.values[value] : undefined);
const shown = (value: string): string => (value.length > 40 ? `${value.slice(0, 40)}…` : value);
const labelOf = (name: string, d: PriceDimension, value: string): string => `${name}=${d.values && Object.hasOwn(d.values, value) ? value : '(other)'}`;

/** A provider's declarations, listed once (not `Object.entries` at every request) with the routes any of them names. */
interface DeclaredList {
  readonly list: readonly (readonly [string, PriceDimension])[];
  readonly routes: ReadonlySet<string>;
}
const listed = new WeakMap<object, DeclaredList>();
function listOf(declared: NonNullable<Declared>): DeclaredList {
  let l = listed.get(declared);
  if (l === undefined) {
    const list = Object.entries(declared);
    l = { list, routes: new Set(list.flatMap(([, d]) => d.routes ?? [])) };
    listed.set(declared, l);
  }
  return l;
}

/** No choice: shared, never written (callers only read what these functions return). */
const NO_CHOICE: DimensionChoice[] = [];
Object.freeze(NO_CHOICE);

/**
 * The non-standard choices a request makes: its route (`method path`, the route's pattern) and the body fields
 * the scan read (`fields`; a field not read, absent, null or false selects nothing). A request whose body was not
 * read and whose route no declaration names (most requests) makes none, found without building anything.
 */
export function requestDimensions(declared: Declared, method: string, routePath: string | undefined, fields: ReadonlyMap<string, Scanned> | undefined): DimensionChoice[] {
  if (!declared) return NO_CHOICE;
  const { list, routes } = listOf(declared);
  const route = routes.size === 0 ? '' : `${method} ${routePath}`;
  if (fields === undefined && !routes.has(route)) return NO_CHOICE;
  let out: DimensionChoice[] | undefined;
  for (let i = 0; i < list.length; i++) {
    const [name, d] = list[i]!;
    if (d.routes?.includes(route)) {
      (out ??= []).push({ name, field: 'route', value: route, tier: d.present, label: name });
      continue;
    }
    const v = d.field === undefined ? undefined : fields?.get(d.field);
    if (!v || v.kind === 'null' || (v.kind === 'boolean' && v.value === false)) continue;
    if (d.present !== undefined) {
      if (d.present !== STANDARD) (out ??= []).push({ name, field: d.field!, value: `(${v.kind === 'array' || v.kind === 'object' ? `an ${v.kind}` : String(v.value)})`, tier: d.present, label: name });
      continue;
    }
    const scalar = (v.kind === 'string' && typeof v.value === 'string') || v.kind === 'number' || v.kind === 'boolean' ? String(v.value) : undefined;
    const tier = scalar === undefined ? undefined : tierOf(d, scalar);
    if (tier === STANDARD) continue;
    (out ??= []).push({ name, field: d.field!, value: scalar === undefined ? `(${v.kind === 'string' ? 'a long string' : `an ${v.kind}`})` : shown(scalar), tier, label: scalar === undefined ? `${name}=(other)` : labelOf(name, d, scalar) });
  }
  return out ?? NO_CHOICE;
}

/** The non-standard choices a response reports (the usage reader's `reported`: key → value). */
export function reportedDimensions(declared: Declared, reported: Readonly<Record<string, string>> | undefined): DimensionChoice[] {
  if (!declared || !reported) return NO_CHOICE;
  const out: DimensionChoice[] = [];
  for (const [name, d] of listOf(declared).list) {
    if (d.reported === undefined || !Object.hasOwn(reported, d.reported)) continue;
    const value = reported[d.reported]!;
    const tier = tierOf(d, value);
    if (tier !== STANDARD) out.push({ name, field: d.reported, value: shown(value), tier, label: labelOf(name, d, value) });
  }
  return out;
}

const memo = new WeakMap<PriceEntry, Map<string, PriceEntry | null>>();

/** A price rounded up: a multiple is never below its product (a float's last bit aside). */
const up = (micros: number, m: number): number => Math.ceil(micros * m - 1e-6);
const scaledTier = <T extends PriceTier>(t: T, m: number): T => ({
  ...t, input: up(t.input, m), cachedInput: up(t.cachedInput, m), cacheWriteInput: up(t.cacheWriteInput, m), output: up(t.output, m),
  ...(t.cacheWrite1hInput !== undefined ? { cacheWrite1hInput: up(t.cacheWrite1hInput, m) } : {}),
});

/**
 * `entry` in `tiers` (standard ones ignored): a tier of its own replaces its token prices (at most one such tier),
 * then every multiplier applies. Null when a tier has no price for this model (`audio` without audio prices).
 */
export function priceAt(entry: PriceEntry, tiers: readonly string[]): PriceEntry | null {
  const wanted = [...new Set(tiers.filter((t) => t !== STANDARD))].sort();
  if (wanted.length === 0) return entry;
  const key = wanted.join(',');
  let byTiers = memo.get(entry);
  if (!byTiers) memo.set(entry, (byTiers = new Map()));
  const known = byTiers.get(key);
  if (known !== undefined) return known;
  const priced = compute(entry, wanted);
  byTiers.set(key, priced);
  return priced;
}

function compute(entry: PriceEntry, tiers: readonly string[]): PriceEntry | null {
  let base: PriceEntry = entry;
  let multiplier = 1;
  let replaced = false;
  for (const name of tiers) {
    if (name === AUDIO) {
      if (!entry.audio) return null;
      continue;
    }
    const t: TierEntry | undefined = entry.tiers?.get(name);
    if (!t) return null;
    if ('multiplier' in t) {
      multiplier *= t.multiplier;
      continue;
    }
    if (replaced) return null; // two tiers of their own prices: which one the provider bills is not declared
    replaced = true;
    // Its own prices replace the model's token prices whole: a price it does not give (a 1-hour write) has none.
    const { longContext, ...own } = t;
    const { cacheWrite1hInput: _base1h, longContext: _baseLong, ...rest } = base;
    base = { ...rest, ...own, ...(longContext ? { longContext } : {}) };
  }
  const scaled: PriceEntry = multiplier === 1 ? base : {
    ...scaledTier(base, multiplier),
    ...(base.longContext ? { longContext: scaledTier(base.longContext, multiplier) } : {}),
    ...(base.audio ? { audio: { input: up(base.audio.input, multiplier), cachedInput: up(base.audio.cachedInput, multiplier), output: up(base.audio.output, multiplier) } } : {}),
  };
  return Object.freeze({ ...scaled, source: `${entry.source} at ${tiers.join(' and ')}` });
}

/** The first choice `entry` does not price (undefined: every choice is priced). `entry` undefined: an unpriced model, which prices no tier. */
export function unpricedChoice(entry: PriceEntry | undefined, choices: readonly DimensionChoice[]): DimensionChoice | undefined {
  for (const c of choices) {
    if (c.tier === undefined || !entry || priceAt(entry, [c.tier]) === null) return c;
  }
  if (entry && choices.length > 1 && priceAt(entry, choices.map((c) => c.tier!)) === null) return choices[choices.length - 1];
  return undefined;
}

/** The refusal's words: the field and the value, and what to do. */
export function priceUnknownMessage(providerId: string, model: string | undefined, c: DimensionChoice): string {
  const what = c.field === 'route' ? `${c.value} (${c.name})` : `\`${c.field}\`: ${JSON.stringify(c.value)} (${c.name})`;
  const whose = model === undefined ? providerId : `${model} at ${providerId}`;
  return `${what} has no price for ${whose}. Under a cap (the token's budget_usd or tokens_per_minute, the organisation's spend_limit_usd) every request is priced before it is sent: leave it out, or price the tier (\`tiers\`) in KEYWARD_PRICES.`;
}

const NAME = /^[a-z][a-z0-9_]{0,39}$/;
const FIELD = /^[A-Za-z_][A-Za-z0-9_]{0,63}(\.[A-Za-z_][A-Za-z0-9_]{0,63}){0,3}$/;
const KEYS = new Set(['field', 'routes', 'values', 'present', 'reported', 'pricedBy', 'description']);

/** A provider file's `priceDimensions`, checked at load: each names one thing that selects a tier, and how. */
export function validateDimensions(raw: unknown, routes: readonly string[], fail: (problem: string) => never): void {
  if (raw === undefined) return;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) fail('`priceDimensions` must be an object of dimensions by name');
  for (const [name, value] of Object.entries(raw as object)) {
    const where = `\`priceDimensions.${name}\``;
    if (!NAME.test(name)) fail(`${where}: a name of lower-case letters, digits and _`);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(`${where} must be an object`);
    const d = value as Record<string, unknown>;
    for (const k of Object.keys(d)) if (!KEYS.has(k)) fail(`${where}: unknown key \`${k}\` (a dimension declares ${[...KEYS].join(', ')})`);
    const kinds = ['field', 'routes', 'pricedBy'].filter((k) => d[k] !== undefined);
    if (kinds.length !== 1 && !(kinds.length === 0 && d.reported !== undefined)) fail(`${where}: one of \`field\`, \`routes\` or \`pricedBy\` (or only \`reported\`)`);
    if (d.pricedBy !== undefined) {
      if (d.pricedBy !== 'tools' && d.pricedBy !== 'longContext') fail(`${where}.pricedBy must be tools or longContext`);
      if (Object.keys(d).some((k) => k !== 'pricedBy' && k !== 'description')) fail(`${where}: \`pricedBy\` stands alone`);
      continue;
    }
    if (d.field !== undefined && (typeof d.field !== 'string' || !FIELD.test(d.field))) fail(`${where}.field must be a body field name, dotted for a nested one`);
    if (d.routes !== undefined) {
      if (!Array.isArray(d.routes) || d.routes.length === 0) fail(`${where}.routes must list routes as \`METHOD path\``);
      for (const r of d.routes as unknown[]) if (typeof r !== 'string' || !routes.includes(r)) fail(`${where}.routes: ${JSON.stringify(r)} is not one of the provider's routes (\`METHOD path\`)`);
      if (d.present === undefined) fail(`${where}: a route dimension names its tier in \`present\``);
    }
    if (d.present !== undefined && (typeof d.present !== 'string' || !NAME.test(d.present))) fail(`${where}.present must be a tier name`);
    if (d.values !== undefined) {
      if (typeof d.values !== 'object' || d.values === null || Array.isArray(d.values)) fail(`${where}.values must map each value to a tier name`);
      for (const [v, t] of Object.entries(d.values as object)) if (typeof t !== 'string' || !NAME.test(t) || v.length === 0 || v.length > 64) fail(`${where}.values[${JSON.stringify(v)}] must be a tier name`);
    }
    if ((d.values === undefined) === (d.present === undefined)) fail(`${where}: either \`values\` (each value's tier) or \`present\` (the tier of any value)`);
    if (d.reported !== undefined && (typeof d.reported !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(d.reported) || d.values === undefined)) fail(`${where}.reported must be a response key, with \`values\``);
    if (d.description !== undefined && typeof d.description !== 'string') fail(`${where}.description must be a string`);
  }
}

/** Every body field any of `declared` reads (what a capped request's scan asks for). */
export function dimensionFields(declared: readonly (Declared)[]): string[] {
  return [...new Set(declared.flatMap((d) => Object.values(d ?? {}).flatMap((x) => (x.field ? [x.field] : []))))].sort();
}
