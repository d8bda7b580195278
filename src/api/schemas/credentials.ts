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
import { IdOf, listOf, Name, named, Time } from './common.js';
import { UsageCounts } from './usage.js';
import { asObject, bodyContract, rule } from './validate.js';
import { OAuthViewFields } from './oauth-connect.js';

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
  /** A yes-flag: "true" or JSON true (catalog: CredentialField.flag). */
  flag?: boolean;
  /** A secret shown as a plain field in a federated credential. */
  plainWhenFederated?: boolean;
}


/**
 * What each loaded provider's credentials carry, by provider id, from its declaration
 * (`credential.fields`: secret fields sealed and never shown, plain ones shown and maybe sent
 * upstream). The create body, the view and the document follow from this. The credential
 * service checks the same fields again with the provider's own rules (catalog/credential-fields.ts):
 * the schema says what a field is; the service is the last word on a value.
 */
export function credentialDeclarations(registry: ProviderRegistry): Map<string, CredentialFieldDeclaration[]> {
  return new Map(registry.ids().map((id) => [id, registry.get(id)!.fields.map((f) => {
    // A flag-free declared pattern is also a JSON Schema (ECMA-262) pattern; otherwise the service's check alone.
    const declared = f.pattern && f.pattern.flags === '' ? f.pattern.source : undefined;
    const pattern = declared ?? `^[\\x21-\\x7e]{${f.secret ? 8 : 1},${f.maxLength}}$`;
    const must = declared ? `a string matching ${declared}` : f.secret ? `a string of 8 to ${f.maxLength} printable characters without spaces` : `a string of 1 to ${f.maxLength} printable characters without spaces`;
    const upstream = f.header ? ` Sent upstream as \`${f.header}\` (the caller's own copy of that header never is).` : '';
    const description = f.secret
      ? `${f.description ?? 'A secret of the provider\'s credential'}. ${f.plainWhenFederated ? 'Stored encrypted and never shown again, except in a federated credential, where it names an identity and is shown.' : 'Stored encrypted, never shown again.'}`
      : `${f.description ?? 'A plain credential field'}: set by the organisation, shown in the credential.${upstream}`;
    return { name: f.name, secret: f.secret, optional: f.optional, pattern, must: f.flag ? '"true" (or JSON true)' : must, description, ...(f.flag ? { flag: true } : {}), ...(f.plainWhenFederated ? { plainWhenFederated: true } : {}) };
  })]));
}

const fieldSchema = (f: CredentialFieldDeclaration): TSchema => {
  const s = f.flag
    ? rule(Type.Union([Type.Literal('true'), Type.Literal(true)], { description: f.description }), f.must)
    : rule(Type.String({ pattern: f.pattern, description: f.description, ...(f.secret ? { writeOnly: true } : {}) }), f.must);
  return f.optional ? Type.Optional(s) : s;
};

/** POST /v1/credentials: one variant per provider, `provider` naming it. */
export function credentialCreateSchema(declarations: Map<string, CredentialFieldDeclaration[]>, oauth?: TObject): TSchema {
  const variants = [...declarations].map(([provider, fields]) => Type.Object({
    provider: Type.Literal(provider),
    name: Type.Optional(Name),
    ...Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])),
  }, { additionalProperties: false, title: provider }));
  return named('CredentialCreate', Type.Union(oauth ? [...variants as TObject[], oauth] : variants as TObject[], {
    description: 'The provider and its credential; the fields depend on the provider (one variant each). A `provider` not loaded here → 400 `unknown_provider`.',
    examples: [{ provider: 'openai', name: 'prod openai', api_key: 'sk-…' }],
  }));
}

export type CredentialCreateBody = { provider: string; name?: string } & Record<string, string>;

/** The create body's validator: `provider` first (it picks the variant), then that variant's fields. */
export function credentialCreateContract(schema: TSchema, oauth?: TObject): BodyContract<CredentialCreateBody> {
  const oauthBody = oauth && bodyContract(oauth, { unknownHint: ` for an OAuth credential (it takes ${Object.keys(oauth.properties).join(', ')})` });
  const variants = ('anyOf' in schema ? schema.anyOf : [schema]).filter((v: TObject) => v !== oauth) as TObject[];
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
      // An upstream OAuth credential (`kind: oauth`) of an MCP or tool provider: fields of its own, whatever the provider declares.
      if (Object.hasOwn(input, 'kind')) {
        if (!oauthBody || input.kind !== 'oauth') throw Errors.invalidRequest('`kind` is "oauth" (an upstream OAuth credential of an MCP server or tool API), or left out.', 'kind');
        return oauthBody.parse(input) as unknown as CredentialCreateBody;
      }
      return variant.parse(input) as CredentialCreateBody;
    },
  };
}

/**
 * POST /v1/credentials/:id/rotate: the credential's secret fields, every one its provider requires
 * (`api_key` for a key-based provider). The route does not know the provider before it loads the
 * credential, so the schema takes any declared secret field and the service checks them against
 * the credential's own provider. Plain fields are fixed at creation.
 */
/**
 * Field names in code-unit order (they are ASCII identifiers). Not localeCompare: its first call loads ICU's
 * collator, about 7 ms of a cold start.
 */
const byName = ([a]: [string, unknown], [b]: [string, unknown]): number => (a < b ? -1 : a > b ? 1 : 0);

export function credentialRotateContract(declarations: Map<string, CredentialFieldDeclaration[]>): BodyContract<Record<string, string>> {
  const secrets = new Map<string, string[]>();
  for (const [provider, fields] of declarations) for (const f of fields) if (f.secret) secrets.set(f.name, [...(secrets.get(f.name) ?? []), provider]);
  const schema = named('CredentialRotate', Type.Object(Object.fromEntries([...secrets].sort(byName).map(([name, providers]) => [
    name, Type.Optional(Type.String({ writeOnly: true, minLength: 1, maxLength: 65536, description: `A new secret (${providers.join(', ')}); its tokens keep working with it at once.` })),
  ])), { additionalProperties: false, examples: [{ api_key: 'sk-…' }] }));
  return bodyContract(schema) as BodyContract<Record<string, string>>;
}

/** The loaded providers (the `provider` of a credential). */
export const providerSchema = (registry: ProviderRegistry) =>
  named('Provider', Type.Union(registry.ids().map((id) => Type.Literal(id)), { description: 'A provider loaded on this gateway (one file in `providers/`).' }));

/** The view's own fields; the plain fields the providers declare are added beside them. */
export const CredentialViewBase = Type.Object({
  id: IdOf('cred', 'The credential\'s id.'),
  object: Type.Literal('credential'),
  provider: Type.String(),
  name: Type.Optional(Name),
  key_hint: Type.String({ pattern: '^…([\\x21-\\x7e]{4})?$', description: '"…" and the key\'s last 4 characters ("…" alone when the credential holds no secret: ambient or federated).', examples: ['…wxyz'] }),
  created_at: Time,
  updated_at: Time,
  usage: Type.Optional(UsageCounts),
});
export type CredentialView = Static<typeof CredentialViewBase> & { [field: string]: unknown };

/** The credential view: the base, the loaded providers as `provider`, and every declared plain field (never a secret one). */
export function credentialViewSchema(registry: ProviderRegistry, declarations: Map<string, CredentialFieldDeclaration[]>): TObject {
  const plain = new Map<string, string[]>();
  for (const [provider, fields] of declarations) {
    for (const f of fields) if (!f.secret || f.plainWhenFederated) plain.set(f.name, [...(plain.get(f.name) ?? []), `${provider}: ${f.description}`]);
  }
  const fields = Object.fromEntries([...plain].sort(byName).map(([name, uses]) => [name, Type.Optional(Type.String({
    description: `A plain credential field, only for the providers that declare it (any other → 400 \`invalid_request\`). ${uses.join('; ')}`,
  }))]));
  return named('Credential', Type.Object({ ...CredentialViewBase.properties, provider: providerSchema(registry), ...fields, ...OAuthViewFields }, {
    additionalProperties: false,
    description: 'A stored provider key (never the key itself). `usage` on GET /v1/credentials/{id} only.',
  }));
}

export const credentialListSchema = (view: TObject) => listOf('CredentialList', view, 'Credentials.');

export const CredentialDeleted = named('CredentialDeleted', Type.Object({
  id: Type.String(), object: Type.Literal('credential'), deleted: Type.Literal(true),
}, { additionalProperties: false }));
