/**
 * GET /v1/providers: the providers loaded on this gateway and the fields their credentials take,
 * so a client (the console, a script) can build a credential form for every kind without knowing
 * the provider files. Derived from the same declarations the create body's schema is built from.
 * Each provider also says how current its prices are and which models the caller's organisation
 * named that have no price of their own (so someone can add one with KEYWARD_PRICES).
 */
import { Type } from '@sinclair/typebox';
import { named } from './common.js';

export const CredentialFieldInfo = named('CredentialFieldInfo', Type.Object({
  name: Type.String({ description: 'The body field of POST /v1/credentials.', examples: ['api_key'] }),
  secret: Type.Boolean({ description: 'Sealed with the key and never shown again (a rotation replaces it); else a plain field, shown in the credential and fixed at creation.' }),
  optional: Type.Boolean({ description: 'May be left out (the provider may still require one of several: see its error message).' }),
  pattern: Type.String({ description: 'An ECMA-262 pattern the value must match (the gateway checks it again, with the provider\'s own rules).' }),
  rule: Type.String({ description: 'Completes "`name` must be …".' }),
  max_length: Type.Integer({ minimum: 1, description: 'The longest value accepted.' }),
  description: Type.String({ description: 'What the field holds, from the provider file.' }),
  label: Type.String({ description: 'What a form calls the field, in plain words.', examples: ['API key'] }),
  help: Type.String({ description: 'A plain help line for a form: where to find the value and what it looks like (the description where the file gives no help).' }),
  flag: Type.Boolean({ description: 'A yes-flag: send `"true"` (or JSON `true`) or leave it out; a form shows a checkbox.' }),
}, { additionalProperties: false }));

export const UnpricedModel = named('UnpricedModel', Type.Object({
  model: Type.String({ description: 'The model a request named, as it named it.', examples: ['claude-opus-6'] }),
  requests: Type.Integer({ minimum: 1, description: 'Requests (and Responses API turns over WebSocket) that named it on this instance since it started.' }),
  first_seen: Type.String({ format: 'date-time' }),
  last_seen: Type.String({ format: 'date-time' }),
  priced_as: Type.Union([Type.String(), Type.Null()], {
    description: 'How it is priced now: `family_max:<family>` (KEYWARD_UNPRICED=family_max: the dearest price listed for its family, an upper bound only while no newer model of the family costs more), a name once KEYWARD_PRICES lists it, or null: no price (refused under a budget with `model_unpriced`; recorded at $0 without one).',
    examples: ['family_max:claude-opus'],
  }),
}, { additionalProperties: false }));

export const ProviderPricing = named('ProviderPricing', Type.Object({
  as_of: Type.Union([Type.String(), Type.Null()], { description: 'The date of the provider file\'s list prices (null: it prices nothing).', examples: ['2026-11-25'] }),
  unpriced_rule: Type.Union([Type.Literal('refuse'), Type.Literal('family_max')], { description: 'KEYWARD_UNPRICED: how a model with no price of its own is priced on this gateway.' }),
  unpriced_models: Type.Array(UnpricedModel, {
    description: 'Models your organisation\'s requests named that have no price of their own (neither their name nor a `prefix*` in the provider file or KEYWARD_PRICES), most requested first; at most 32. Per instance, since it started.',
  }),
  unpriced_other_requests: Type.Integer({ minimum: 0, description: 'Requests naming further unpriced models past the 32 listed.' }),
}, { additionalProperties: false }));
export const SdkSetupInfo = named('SdkSetupInfo', Type.Object({
  name: Type.String({ description: 'Who reads these variables or runs this code.', examples: ['OpenAI SDKs (Python, Node, …)'] }),
  env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Z][A-Z0-9_]*$' }), Type.String(), {
    description: 'Environment variable → value template, in order. `{proxy}` is `https://<gateway>/v1/proxy`, `{token}` the proxy token, `{<field>}` a plain field of the credential.',
    examples: [{ OPENAI_BASE_URL: '{proxy}/v1', OPENAI_API_KEY: '{token}' }],
  })),
  code: Type.Optional(Type.String({ description: 'A code snippet template (same placeholders), for SDKs that take the token only in their options.' })),
  note: Type.Optional(Type.String({ description: 'What else the SDK needs, in plain words.' })),
}, { additionalProperties: false, description: 'How one SDK is pointed at this gateway with a proxy token.' }));

export const ProviderInfo = named('ProviderInfo', Type.Object({
  id: Type.String({ description: 'The `provider` of a credential.', examples: ['openai'] }),
  object: Type.Literal('provider'),
  name: Type.String({ description: 'A human name.', examples: ['OpenAI'] }),
  kind: Type.Union([Type.Literal('llm'), Type.Literal('tool'), Type.Literal('mcp')], { description: '`llm`: a model API; `tool`: an HTTP API an agent calls (GitHub, a search API); `mcp`: a remote MCP server (a token may take a `tools` scope).' }),
  credential_fields: Type.Array(CredentialFieldInfo, { description: 'In the provider file\'s order.' }),
  pricing: ProviderPricing,
  sdk: Type.Array(SdkSetupInfo, { description: 'How its SDKs reach it through Keyward (empty where the provider file declares none).' }),
}, { additionalProperties: false }));

export const ProviderList = named('ProviderList', Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ProviderInfo),
  has_more: Type.Literal(false),
}, { additionalProperties: false, description: 'Every loaded provider, by id (one page: the list is short).' }));
