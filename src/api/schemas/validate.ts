/**
 * Request validation derived from the wire schemas. Each schema is compiled once (TypeCompiler), when its
 * contract first parses a request, not at start (compiling every contract cost ~20 ms of the cold start),
 * so a good request costs one compiled check. Only a refused one is
 * looked at again, field by field in the schema's order, to name the field at fault (`param`): an
 * unknown field first (typos like `tll` fail loudly, as Stripe's API does), then a missing or
 * mistyped one, with the code and wording its schema carries (`rule`): invalid_request unless the
 * field says invalid_ttl or invalid_scope. Messages name fields, never echo values (a value may be a key),
 * except where a rule's `hint` shows the form it expects from a value that cannot be one (an amount sent as
 * a JSON number is shown back as the decimal string to send).
 */
import type { Static, TObject, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { formatUsd, parseUsd } from '../../pricing/money.js';
import { Errors, type ApiError } from '../../errors.js';
import type { BodyContract, QueryContract } from '../../http/router.js';

const FIELD_RULE = Symbol.for('keyward.fieldRule');

export interface FieldRule {
  /** Completes "`name` must be …" and "`name` is required: …". */
  must: string;
  /** The code a refusal of this field answers with (invalid_request by default). */
  code?: 'invalid_ttl' | 'invalid_scope';
  /** A sentence added after the rule for a value it recognises (never one that could be a secret). */
  hint?: (value: unknown) => string | undefined;
}

/** Attaches to a field's schema how a refusal of it is worded and coded. */
export function rule<T extends TSchema>(schema: T, must: string, code?: FieldRule['code'], hint?: FieldRule['hint']): T {
  return Object.assign(schema, { [FIELD_RULE]: { must, code, ...(hint ? { hint } : {}) } satisfies FieldRule });
}

/**
 * An amount of USD sent as a JSON number (`"budget_usd": 1`): shown as the string to send instead (`"1.00"`).
 * Amounts stay strings on the wire: a JSON number is a binary float to most clients, and 0.1 + 0.2 is not 0.3.
 */
export const usdNumberHint = (name: string) => (value: unknown): string | undefined => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) return undefined;
  const micros = parseUsd(String(value));
  return micros === undefined
    ? `It was a JSON number; send a string, such as "${name}": "12.50".`
    : `It was a JSON number; send "${name}": "${formatUsd(micros)}".`;
};

export function ruleOf(schema: TSchema): FieldRule | undefined {
  return (schema as { [FIELD_RULE]?: FieldRule })[FIELD_RULE];
}

interface Field {
  name: string;
  schema: TSchema;
  required: boolean;
  /** Compiled when first needed (fieldCheck). */
  check?: TypeCheck<TSchema>;
}

function fieldsOf(schema: TObject): Field[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, s]) => ({ name, schema: s, required: required.has(name) }));
}

function fieldCheck(f: Field): TypeCheck<TSchema> {
  return (f.check ??= TypeCompiler.Compile(f.schema));
}

function refuse(field: Field, missing: boolean, value?: unknown): ApiError {
  const r: FieldRule = ruleOf(field.schema) ?? { must: 'as the schema says' };
  const hint = missing ? undefined : r.hint?.(value);
  const message = missing ? `\`${field.name}\` is required: ${r.must}.` : `\`${field.name}\` must be ${r.must}.${hint ? ` ${hint}` : ''}`;
  if (r.code === 'invalid_ttl') return Errors.invalidTtl(message, field.name);
  if (r.code === 'invalid_scope') return Errors.invalidScope(message, field.name);
  return Errors.invalidRequest(message, field.name);
}

/** A JSON object body, or 400. */
export function asObject(value: unknown): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw Errors.invalidRequest('The request body must be a JSON object.');
  return value as Record<string, unknown>;
}

/** The first unknown field (an own key the schema does not declare; `__proto__` and `constructor` included). */
function unknownField(input: Record<string, unknown>, fields: readonly Field[]): string | undefined {
  return Object.keys(input).find((k) => !fields.some((f) => f.name === k));
}

export interface BodyOptions {
  /** An empty body means `{}` (a body that is present must still be an object). */
  optional?: boolean;
  /** Appended to "Unknown field "x"": what the endpoint takes instead, e.g. ` for provider openai (it takes …)`. */
  unknownHint?: string;
}

/** A body contract from an object schema: the compiled check, and on refusal the field at fault. */
export function bodyContract<T extends TObject>(schema: T, options: BodyOptions = {}): BodyContract<Static<T>> {
  let whole: TypeCheck<T> | undefined;
  const fields = fieldsOf(schema);
  return {
    schema,
    ...(options.optional ? { optional: true } : {}),
    parse(value: unknown): Static<T> {
      const input = value === undefined && options.optional ? {} : asObject(value);
      if ((whole ??= TypeCompiler.Compile(schema)).Check(input)) return input;
      const extra = unknownField(input, fields);
      if (extra !== undefined) throw Errors.invalidRequest(`Unknown field ${JSON.stringify(extra.slice(0, 64))}${options.unknownHint ?? ''}.`, extra.slice(0, 64));
      for (const f of fields) {
        const v = Object.hasOwn(input, f.name) ? input[f.name] : undefined;
        if (v === undefined) {
          if (f.required) throw refuse(f, true);
        } else if (!fieldCheck(f).Check(v)) {
          throw refuse(f, false, v);
        }
      }
      // Every field passes on its own: only a whole-object rule can be left (none is used today).
      throw Errors.invalidRequest('The request body does not match its schema.');
    },
  };
}

/** Digits only, no sign, no leading zero, no exponent: how an integer query parameter is written. */
const QUERY_INTEGER = /^(0|[1-9][0-9]{0,15})$/;

/**
 * A query contract from a flat object schema: unknown parameters refused by name, integers read from
 * their decimal form, absent ones given the schema's `default`; `map` shapes the result for the service.
 */
export function queryContract<T extends TObject, R = Static<T>>(schema: T, map: (q: Static<T>) => R = (q) => q as unknown as R): QueryContract<R> {
  const fields = fieldsOf(schema);
  return {
    schema,
    parse(query: URLSearchParams): R {
      for (const k of query.keys()) {
        if (!fields.some((f) => f.name === k)) throw Errors.invalidRequest(`Unknown query parameter ${JSON.stringify(k.slice(0, 64))}.`, k.slice(0, 64));
      }
      const out: Record<string, unknown> = {};
      for (const f of fields) {
        const raw = query.get(f.name);
        if (raw === null) {
          if (f.schema.default !== undefined) out[f.name] = f.schema.default;
          else if (f.required) throw refuse(f, true);
          continue;
        }
        const value = f.schema.type === 'integer' ? (QUERY_INTEGER.test(raw) ? Number(raw) : Number.NaN) : raw;
        if (!fieldCheck(f).Check(value)) throw refuse(f, false);
        out[f.name] = value;
      }
      return map(out as Static<T>);
    },
  };
}
