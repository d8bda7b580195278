/**
 * TypeBox schemas → the document's JSON Schema 2020-12 (OpenAPI 3.1's dialect). A schema marked
 * `named` (src/api/schemas/common.ts) is written once under `components.schemas` and referred to by
 * `$ref` everywhere else. TypeBox's own markers are symbols, so they never reach the document;
 * two of its forms are rewritten into plain keywords: a RegExp type (needed for `\p{…}` patterns,
 * which TypeBox compiles with the `u` flag) becomes `pattern`, and a union of literals becomes `enum`.
 */
import { Kind, type TSchema } from '@sinclair/typebox';
import { componentName } from '../schemas/common.js';

/** A JSON Schema object. */
export type JsonSchema = { [keyword: string]: unknown };

const SUBSCHEMA_LISTS = new Set(['anyOf', 'allOf', 'oneOf', 'prefixItems']);

export class SchemaComponents {
  readonly schemas: Record<string, JsonSchema> = {};

  /** The schema as it appears where it is used: a `$ref` if it is a named component. */
  use(schema: TSchema): JsonSchema {
    return this.convert(schema, false);
  }

  /** Defines a named schema's component even where nothing refers to it. */
  define(schema: TSchema): void {
    this.use(schema);
  }

  private convert(schema: TSchema, asComponent: boolean): JsonSchema {
    const name = componentName(schema);
    if (name !== undefined && !asComponent) {
      if (!Object.hasOwn(this.schemas, name)) {
        this.schemas[name] = {}; // claimed first: a schema that refers to itself stops here
        this.schemas[name] = this.convert(schema, true);
      }
      return { $ref: `#/components/schemas/${name}` };
    }
    const out: JsonSchema = {};
    for (const [keyword, value] of Object.entries(schema)) {
      if (keyword === 'properties') {
        out.properties = Object.fromEntries(Object.entries(value as Record<string, TSchema>).map(([k, s]) => [k, this.use(s)]));
      } else if (keyword === 'items' && !Array.isArray(value)) {
        out.items = this.use(value as TSchema);
      } else if (keyword === 'additionalProperties' && typeof value === 'object') {
        out.additionalProperties = this.use(value as TSchema);
      } else if (SUBSCHEMA_LISTS.has(keyword)) {
        out[keyword] = (value as TSchema[]).map((s) => this.use(s));
      } else {
        out[keyword] = value;
      }
    }
    if (schema[Kind] === 'RegExp') {
      delete out.source;
      delete out.flags;
      out.type = 'string';
      out.pattern = (schema as unknown as { source: string }).source;
    }
    const members = schema[Kind] === 'Union' ? (schema.anyOf as TSchema[]) : [];
    if (members.length > 0 && members.every((m) => m[Kind] === 'Literal' && typeof m.const === typeof members[0]!.const)) {
      delete out.anyOf;
      return { type: typeof members[0]!.const, enum: members.map((m) => m.const), ...out };
    }
    return out;
  }
}
