/**
 * Building blocks of the admin wire shapes: ids, secrets shown once, times, counts, lists, names, and the
 * component names the OpenAPI document refers to them by. A schema marked with `named` becomes
 * `#/components/schemas/<name>` wherever it is used (src/api/openapi/json-schema.ts).
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { NAME, NAME_RULE } from '../../vault/names.js';
import { bodyContract, rule } from './validate.js';

const COMPONENT = Symbol.for('keyward.component');

/** Marks a schema as the document's component `name` (a `$ref` wherever another schema uses it). */
export function named<T extends TSchema>(name: string, schema: T): T {
  return Object.assign(schema, { [COMPONENT]: name });
}

export function componentName(schema: TSchema): string | undefined {
  return (schema as { [COMPONENT]?: string })[COMPONENT];
}

export const Time = Type.String({
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  description: 'RFC 3339 UTC with milliseconds.',
  examples: ['2026-11-03T09:15:27.123Z'],
});

export const Count = Type.Integer({ minimum: 0 });

/** An id of one of Keyward's records (`tok_…`): a prefix and 24 base-62 characters (src/ids.ts). */
export const IdOf = (prefix: string, description: string) =>
  Type.String({ pattern: `^${prefix}_[0-9A-Za-z]{24}$`, description, examples: [`${prefix}_4kT9bQ2mXw7Zr1sVc8NpL3aY`] });

/** A bearer secret (`ptok_…`, `otok_…`), shown in one response only. */
export const SecretOf = (prefix: string, description: string) =>
  Type.String({ pattern: `^${prefix}_[0-9A-Za-z]{38}$`, description, examples: [`${prefix}_…`] });

/** A page of `item`, newest first. */
export function listOf<T extends TSchema>(name: string, item: T, description: string) {
  return named(name, Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    has_more: Type.Boolean({ description: 'More items follow the last one of `data`.' }),
  }, {
    additionalProperties: false,
    description: `${description} Newest first; page with \`limit\` and \`starting_after\` = the last id of this page while \`has_more\`.`,
  }));
}

export const Health = named('Health', Type.Object({ status: Type.Union([Type.Literal('ok'), Type.Literal('ready'), Type.Literal('draining'), Type.Literal('unavailable')]) }, { additionalProperties: false }));

/**
 * The optional `name` of credentials, tokens, admin keys and pools (vault/names.ts has the rule): shown in
 * lists, the console and the audit trail's `target_name`; a list's `?name=` finds it by prefix.
 */
export const Name = named('Name', rule(Type.RegExp(NAME, {
  description: 'What the organisation calls it: 1 to 64 printable characters (no control or formatting characters), not starting or ending with a space. Need not be unique.',
  examples: ['prod openai', 'ci: nightly evals'],
}), NAME_RULE));

/** PATCH of a named record: its new name, or null to remove it. */
export const NameChange = named('NameChange', Type.Object({
  name: rule(Type.Union([Name, Type.Null()], { description: 'The new name, or null to remove it.' }), `${NAME_RULE}, or null to remove it`),
}, { additionalProperties: false, examples: [{ name: 'prod openai' }] }));

export const NAME_CHANGE = bodyContract(NameChange);
