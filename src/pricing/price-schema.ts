/**
 * The schema of a price file: `providers/<id>.prices.json` beside a provider file, or the same table
 * written inline in a folder provider (`prices`, `pricesAsOf`, `pricesSource`). One schema for both,
 * checked once at start-up: a file that does not pass stops start-up with an error naming the file,
 * the entry and the field (PriceFileError).
 *
 * A file is dated (`as_of`, YYYY-MM-DD) with its source (`source`, an https URL) as a whole; an entry
 * may carry its own `as_of` and `source` where it was read elsewhere or on another day. Prices are
 * USD per million tokens (amounts with at most six decimal places: prices.ts priceEntry checks them).
 *
 * A file prices its own models (`models`: by name or `prefix*`, each with more names in `aliases`), and
 * may take another file's models (`families`): a model family sold on several platforms (Claude on
 * Anthropic, Bedrock and Vertex; Gemini on Gemini and Vertex) is priced once, in its publisher's file
 * (the one whose `publishes` names it), and each platform declares only its difference: its names for
 * the models it sells, a regional uplift, a field it prices otherwise or not at all (price-data.ts).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MODEL } from './model-name.js';
import { priceEntry, PriceError, PRICE_FIELDS } from './prices.js';
import type { ModelPrice } from './price-types.js';

const Day = Type.String({ pattern: '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$', description: 'the day the prices were read, YYYY-MM-DD' });
const Source = Type.String({ pattern: '^https://[^\\s]{1,500}$', description: 'the https URL the prices were read from' });
const Usd = Type.Number({ minimum: 0, description: 'USD per million tokens' });
const Tokens = Type.Integer({ minimum: 1, maximum: 100_000_000 });
const Name = Type.String({ pattern: MODEL.source, description: 'a model name or prefix*' });
const Words = Type.String({ minLength: 1, maxLength: 2000 });
const PROVIDER_ID = '^[a-z0-9][a-z0-9-]{0,39}$';

const cacheFields = { cachedInput: Type.Optional(Usd), cacheWriteInput: Type.Optional(Usd), cacheWrite1hInput: Type.Optional(Usd) };
const LongContext = Type.Object({ aboveInputTokens: Tokens, input: Usd, output: Usd, ...cacheFields }, { additionalProperties: false });
const Audio = Type.Object({ input: Usd, output: Usd, cachedInput: Type.Optional(Usd) }, { additionalProperties: false });

/** A tier a price dimension selects (TierPrice): a multiple of the model's prices, or prices of its own. */
const TierName = Type.String({ pattern: '^[a-z][a-z0-9_]{0,39}$' });
const Tier = Type.Union([
  Type.Object({ multiplier: Type.Number({ exclusiveMinimum: 0, maximum: 100 }) }, { additionalProperties: false }),
  Type.Object({ input: Usd, output: Usd, ...cacheFields, longContext: Type.Optional(LongContext) }, { additionalProperties: false }),
]);

/** A model's prices (ModelPrice, provider.ts) as a file writes them. */
const priceFields = {
  input: Usd, output: Usd, ...cacheFields,
  maxOutput: Type.Optional(Tokens), contextWindow: Type.Optional(Tokens), requestFee: Type.Optional(Type.Number({ minimum: 0, description: 'USD per request' })),
  longContext: Type.Optional(LongContext), audio: Type.Optional(Audio),
  perAudioSecond: Type.Optional(Type.Number({ minimum: 0, description: 'USD per second of input audio' })),
  tiers: Type.Optional(Type.Record(TierName, Tier, { additionalProperties: false })),
};

/** One model: its prices, more names for it, and where it was read when not where the file was. */
export const PriceFileEntry = Type.Object({
  ...priceFields,
  aliases: Type.Optional(Type.Array(Name, { minItems: 1, maxItems: 64 })),
  as_of: Type.Optional(Day),
  source: Type.Optional(Source),
  note: Type.Optional(Words),
}, { additionalProperties: false });

/** A price field a platform leaves out (the family's price of it does not apply there; the default takes its place). */
const Omittable = Type.Union(['cachedInput', 'cacheWriteInput', 'cacheWrite1hInput', 'maxOutput', 'contextWindow', 'requestFee', 'longContext', 'audio', 'perAudioSecond', 'tiers'].map((f) => Type.Literal(f)));

/** A platform's difference for one model of the family: fields priced otherwise, fields left out. */
const Difference = Type.Object({
  ...Type.Partial(Type.Object(priceFields)).properties,
  without: Type.Optional(Type.Array(Omittable, { minItems: 1 })),
  why: Words,
}, { additionalProperties: false });

/** A template of a price-book name from a platform's model id: `{id}` is the id (`us.{id}*`, `{id}@*`). */
const Template = Type.String({ pattern: '^[A-Za-z0-9._:/@+-]{0,100}\\{id\\}[A-Za-z0-9._:/@+-]{0,100}\\*?$' });

/** Another file's models, sold here: the publisher's prices with this platform's declared difference. */
export const FamilyReference = Type.Object({
  /** The publisher's provider id: its price file holds the family. */
  from: Type.String({ pattern: PROVIDER_ID }),
  /** Where this platform's difference was read, when not where the file was. */
  as_of: Type.Optional(Day),
  source: Type.Optional(Source),
  /** How a model id (`models`' string values) becomes the price book's names. Default `["{id}"]`. */
  names: Type.Optional(Type.Array(Template, { minItems: 1, maxItems: 32 })),
  /**
   * The publisher's entries sold here (by their key in its `models`), each under this platform's id (put
   * through `names`) or its exact price-book names (an array). An entry not listed is not sold here.
   */
  models: Type.Record(Name, Type.Union([Name, Type.Array(Name, { minItems: 1, maxItems: 32 })]), { minProperties: 1, additionalProperties: false }),
  /** Every price of the listed models times `multiplier` (a regional premium), on the names of `names` (default all), but for the entries of `except`. */
  uplift: Type.Optional(Type.Object({
    multiplier: Type.Number({ exclusiveMinimum: 0, maximum: 100 }),
    names: Type.Optional(Type.Array(Template, { minItems: 1 })),
    except: Type.Optional(Type.Array(Name, { minItems: 1 })),
    why: Words,
  }, { additionalProperties: false })),
  /** Models priced otherwise here, by the publisher's key: before the uplift. */
  differs: Type.Optional(Type.Record(Name, Difference, { additionalProperties: false })),
  /** The publisher's tiers (ModelPrice.tiers) sold here too, by name; any other tier has no price on this platform. Default none. */
  tiers: Type.Optional(Type.Array(TierName, { minItems: 1 })),
}, { additionalProperties: false });

/** A family whose home is this file: every model of it (names matching `models`) is priced here and nowhere else. */
const Publishes = Type.Object({ family: Type.String({ pattern: '^[a-z0-9-]{1,40}$' }), models: Type.String({ minLength: 2, maxLength: 200 }) }, { additionalProperties: false });

export const PriceFile = Type.Object({
  as_of: Day,
  source: Source,
  notes: Type.Optional(Type.Array(Words)),
  publishes: Type.Optional(Type.Array(Publishes, { minItems: 1 })),
  models: Type.Optional(Type.Record(Name, PriceFileEntry, { additionalProperties: false })),
  families: Type.Optional(Type.Array(FamilyReference, { minItems: 1 })),
}, { additionalProperties: false });

export type PriceFileData = Static<typeof PriceFile>;
export type PriceFileModel = Static<typeof PriceFileEntry>;
export type FamilyReferenceData = Static<typeof FamilyReference>;

/** A price file that is not one: the message names the file, the entry and the field. */
export class PriceFileError extends Error {
  /** The entry and field, then the problem (without the file). */
  readonly detail: string;

  constructor(readonly file: string, where: string, problem: string) {
    const detail = `${where ? `${where}: ` : ''}${problem}`;
    super(`price file ${file}: ${detail}`);
    this.name = 'PriceFileError';
    this.detail = detail;
  }
}

/** What a table's fields are called where it is written: a file's own names, or a provider's inline ones. */
export interface PriceFieldNames {
  readonly models: string;
  readonly as_of: string;
  readonly source: string;
}
const FILE_NAMES: PriceFieldNames = { models: 'models', as_of: 'as_of', source: 'source' };

/** `/models/claude-opus-5/input` → `models["claude-opus-5"].input`; `/families/0/models` → `families[0].models`. */
function whereOf(pointer: string, names: PriceFieldNames): string {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  let out = '';
  for (const [i, p] of parts.entries()) {
    const keyed = parts[i - 1] === 'models' || parts[i - 1] === 'differs';
    const named = i === 0 && p in names ? names[p as keyof PriceFieldNames] : p;
    out += /^\d+$/.test(p) && !keyed ? `[${p}]` : keyed ? `[${JSON.stringify(p)}]` : `${out ? '.' : ''}${named}`;
  }
  return out;
}

/** The price fields of an entry or a difference: what priceEntry checks. */
export function priceOf(entry: Partial<PriceFileModel> | Record<string, unknown>): ModelPrice {
  return Object.fromEntries(Object.entries(entry).filter(([k]) => (PRICE_FIELDS as readonly string[]).includes(k))) as unknown as ModelPrice;
}

/**
 * `json` (parsed) as a price file of `file`, or a PriceFileError naming the entry and field: the schema's
 * first problem, or an amount that is not a price (more than six decimal places, a threshold of no tokens).
 */
export function readPriceFile(file: string, json: unknown, names: PriceFieldNames = FILE_NAMES): PriceFileData {
  const problem = Value.Errors(PriceFile as TSchema, json).First();
  if (problem) {
    const shown = problem.value === undefined || typeof problem.value === 'object' ? '' : `, got ${JSON.stringify(problem.value).slice(0, 80)}`;
    // A key of a table of models that is not a model name (the schema's patterns) says so, rather than "unexpected".
    const badName = problem.message === 'Unexpected property' && /\/(models|differs)\/[^/]*$/.test(problem.path);
    throw new PriceFileError(file, whereOf(problem.path, names), badName ? 'not a model name or prefix*' : `${problem.message}${shown}`);
  }
  const data = json as PriceFileData;
  for (const [name, entry] of Object.entries(data.models ?? {})) {
    const where = `${names.models}[${JSON.stringify(name)}]`;
    try {
      priceEntry(where, priceOf(entry), file);
    } catch (err) {
      if (err instanceof PriceError) throw new PriceFileError(file, '', err.got === undefined ? err.message : `${err.message}, got ${JSON.stringify(err.got)}`);
      throw err;
    }
  }
  for (const [i, p] of (data.publishes ?? []).entries()) {
    try {
      new RegExp(p.models);
    } catch {
      throw new PriceFileError(file, `publishes[${i}].models`, 'a regular expression of the family\'s model names');
    }
  }
  return data;
}
