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
}, { additionalProperties: false }));

export const ProviderInfo = named('ProviderInfo', Type.Object({
  id: Type.String({ description: 'The `provider` of a credential.', examples: ['openai'] }),
  object: Type.Literal('provider'),
  name: Type.String({ description: 'A human name.', examples: ['OpenAI'] }),
  credential_fields: Type.Array(CredentialFieldInfo, { description: 'In the provider file\'s order.' }),
}, { additionalProperties: false }));

export const ProviderList = named('ProviderList', Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ProviderInfo),
  has_more: Type.Literal(false),
}, { additionalProperties: false, description: 'Every loaded provider, by id (one page: the list is short).' }));
