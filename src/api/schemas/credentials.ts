/**
 * Stored credentials: POST /v1/credentials (its fields depend on the provider), rotation, the view
 * and lists. Everything provider-dependent is built at start from `credentialDeclarations`, the one
 * function that reads what the loaded providers declare about their credentials. Provider existence
 * is answered 400 unknown_provider; the credential service keeps its own checks of the same fields.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Errors } from '../../errors.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { BodyContract } from '../../http/router.js';
import { IdOf, listOf, named, Time } from './common.js';
import { UsageCounts } from './usage.js';
import { asObject, bodyContract, rule } from './validate.js';

/** One field of a provider's credential, as the admin API takes it. */
export interface CredentialFieldDeclaration {
  name: string;
  /** Sealed with the key and never shown again; else stored in clear and shown in the view. */
  secret: boolean;
  optional: boolean;
  /** A JSON Schema (ECMA-262) pattern the value must match. */
  pattern: string;
  /** Completes "`name` must be …". */
  must: string;
  description: string;
}

const API_KEY = { pattern: '^[\\x21-\\x7e]{8,4096}$', must: 'a string of 8 to 4096 printable characters without spaces' };
const PLAIN = { pattern: '^[\\x21-\\x7e]{1,200}$', must: 'a string of 1 to 200 printable characters without spaces' };

/**
 * What each loaded provider's credentials carry, by provider id: today `api_key` (every provider's one
 * secret) and the plain `credentialFields` it declares. The create body, the view and the document
 * follow from this; it is the one place to point at richer declarations (secret fields, own patterns).
 */
export function credentialDeclarations(registry: ProviderRegistry): Map<string, CredentialFieldDeclaration[]> {
  return new Map(registry.ids().map((id) => [id, [
    { name: 'api_key', secret: true, optional: false, ...API_KEY, description: 'The provider key. Stored encrypted, never shown again.' },
    ...(registry.get(id)!.credentialFields ?? []).map((f) => ({
      name: f.name,
      secret: false,
      optional: true,
      ...PLAIN,
      description: `${f.description ?? 'A plain credential field'}: set by the organisation and sent upstream as \`${f.header}\` (the caller's own copy of that header never is).`,
    })),
  ]]));
}

const fieldSchema = (f: CredentialFieldDeclaration): TSchema => {
  const s = rule(Type.String({ pattern: f.pattern, description: f.description, ...(f.secret ? { writeOnly: true } : {}) }), f.must);
  return f.optional ? Type.Optional(s) : s;
};

/** POST /v1/credentials: one variant per provider, `provider` naming it. */
export function credentialCreateSchema(declarations: Map<string, CredentialFieldDeclaration[]>): TSchema {
  const variants = [...declarations].map(([provider, fields]) => Type.Object({
    provider: Type.Literal(provider),
    ...Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])),
  }, { additionalProperties: false, title: provider }));
  return named('CredentialCreate', Type.Union(variants, {
    description: 'The provider and its credential; the fields depend on the provider (one variant each). A `provider` not loaded here → 400 `unknown_provider`.',
    examples: [{ provider: 'openai', api_key: 'sk-…' }],
  }));
}

export type CredentialCreateBody = { provider: string } & Record<string, string>;

/** The create body's validator: `provider` first (it picks the variant), then that variant's fields. */
export function credentialCreateContract(schema: TSchema): BodyContract<CredentialCreateBody> {
  const variants = ('anyOf' in schema ? schema.anyOf : [schema]) as TObject[];
  const byProvider = new Map(variants.map((v) => {
    const provider = (v.properties.provider as unknown as { const: string }).const;
    const takes = Object.keys(v.properties).join(', ');
    return [provider, bodyContract(v, { unknownHint: ` for provider ${provider} (it takes ${takes})` })] as const;
  }));
  // The fields every provider takes: before `provider` is known, anything else is unknown to all of them.
  const common = Object.keys(variants[0]!.properties).filter((k) => variants.every((v) => Object.hasOwn(v.properties, k)));
  return {
    schema,
    parse(value: unknown): CredentialCreateBody {
      const input = asObject(value);
      const provider = Object.hasOwn(input, 'provider') ? input.provider : undefined;
      if (typeof provider !== 'string' || provider === '') {
        const extra = Object.keys(input).find((k) => !common.includes(k));
        if (extra !== undefined) throw Errors.invalidRequest(`Unknown field ${JSON.stringify(extra.slice(0, 64))}.`, extra.slice(0, 64));
        throw Errors.invalidRequest('`provider` is required: a provider id such as "openai".', 'provider');
      }
      const variant = byProvider.get(provider);
      if (!variant) throw Errors.unknownProvider(provider);
      return variant.parse(input) as CredentialCreateBody;
    },
  };
}

export const CredentialRotate = named('CredentialRotate', Type.Object({
  api_key: rule(Type.String({ pattern: API_KEY.pattern, writeOnly: true, description: 'The new provider key; its tokens keep working with it at once.' }), API_KEY.must),
}, { additionalProperties: false, examples: [{ api_key: 'sk-…' }] }));

export const CREDENTIAL_ROTATE = bodyContract(CredentialRotate);

/** The loaded providers (the `provider` of a credential). */
export const providerSchema = (registry: ProviderRegistry) =>
  named('Provider', Type.Union(registry.ids().map((id) => Type.Literal(id)), { description: 'A provider loaded on this gateway (one file in `providers/`).' }));

/** The view's own fields; the plain fields the providers declare are added beside them. */
export const CredentialViewBase = Type.Object({
  id: IdOf('cred', 'The credential\'s id.'),
  object: Type.Literal('credential'),
  provider: Type.String(),
  key_hint: Type.String({ pattern: '^…[\\x21-\\x7e]{4}$', description: '"…" and the key\'s last 4 characters.', examples: ['…wxyz'] }),
  created_at: Time,
  updated_at: Time,
  usage: Type.Optional(UsageCounts),
});
export type CredentialView = Static<typeof CredentialViewBase> & { [field: string]: unknown };

/** The credential view: the base, the loaded providers as `provider`, and every declared plain field (never a secret one). */
export function credentialViewSchema(registry: ProviderRegistry, declarations: Map<string, CredentialFieldDeclaration[]>): TObject {
  const plain = new Map<string, string[]>();
  for (const [provider, fields] of declarations) {
    for (const f of fields) if (!f.secret) plain.set(f.name, [...(plain.get(f.name) ?? []), `${provider}: ${f.description}`]);
  }
  const fields = Object.fromEntries([...plain].sort(([a], [b]) => a.localeCompare(b)).map(([name, uses]) => [name, Type.Optional(Type.String({
    pattern: PLAIN.pattern,
    description: `A plain credential field, only for the providers that declare it (any other → 400 \`invalid_request\`). ${uses.join('; ')}`,
  }))]));
  return named('Credential', Type.Object({ ...CredentialViewBase.properties, provider: providerSchema(registry), ...fields }, {
    additionalProperties: false,
    description: 'A stored provider key (never the key itself). `usage` on GET /v1/credentials/{id} only.',
  }));
}

export const credentialListSchema = (view: TObject) => listOf('CredentialList', view, 'Credentials.');

export const CredentialDeleted = named('CredentialDeleted', Type.Object({
  id: Type.String(), object: Type.Literal('credential'), deleted: Type.Literal(true),
}, { additionalProperties: false }));
