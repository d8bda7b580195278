/**
 * GET /v1/providers: the providers loaded on this gateway and the fields their credentials take,
 * so a client (the console, a script) can build a credential form for every kind without knowing
 * the provider files. Derived from the same declarations the create body's schema is built from.
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
  credential_fields: Type.Array(CredentialFieldInfo, { description: 'In the provider file\'s order.' }),
  sdk: Type.Array(SdkSetupInfo, { description: 'How its SDKs reach it through Keyward (empty where the provider file declares none).' }),
}, { additionalProperties: false }));

export const ProviderList = named('ProviderList', Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ProviderInfo),
  has_more: Type.Literal(false),
}, { additionalProperties: false, description: 'Every loaded provider, by id (one page: the list is short).' }));
