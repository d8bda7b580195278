/** Organisations: POST /v1/orgs, GET /v1/orgs/self, the org token's rotation, and the org's settings (its monthly spend limit). */
import { Type } from '@sinclair/typebox';
import { USD_AMOUNT } from '../../pricing/money.js';
import { ORG_NAME } from '../../vault/org-service.js';
import { Caller } from './admin-keys.js';
import { IdOf, named, SecretOf, Time } from './common.js';
import { bodyContract, rule, usdNumberHint } from './validate.js';

export const OrgCreate = named('OrgCreate', Type.Object({
  name: rule(Type.RegExp(ORG_NAME, {
    minLength: 1,
    maxLength: 100,
    description: 'Letters, digits, spaces or `._\'&()-`, starting with a letter or digit and not ending with a space (the org service checks the last).',
  }), '1 to 100 letters, digits, spaces or ._\'&()- and start with a letter or digit'),
}, { additionalProperties: false, examples: [{ name: 'acme' }] }));

export const Organization = named('Organization', Type.Object({
  id: IdOf('org', 'The organisation\'s id.'),
  object: Type.Literal('organization'),
  name: Type.String(),
  token: Type.Optional(SecretOf('otok', 'The organisation token: `Authorization: Bearer otok_…` on the admin API. Shown once.')),
  created_at: Time,
}, { additionalProperties: false, description: 'A new organisation. `token` is shown here once and never again (absent from an idempotent replay).' }));

/** What a cloud's trust names to accept this organisation's federated credentials (docs/operate/identity.md). */
export const Federation = named('Federation', Type.Union([
  Type.Object({
    issuer: Type.String({ description: 'Keyward\'s OIDC issuer URL (KEYWARD_ISSUER_URL): the `iss` of the JWTs it signs for this organisation.', examples: ['https://keyward.example.com'] }),
    subject: Type.String({ pattern: '^org:org_', description: 'The `sub` of every JWT Keyward signs for this organisation: what an AWS role, Entra federated credential or Google pool provider trusts.', examples: ['org:org_2Vh…'] }),
  }, { additionalProperties: false }),
  Type.Null({ description: 'This gateway is no OIDC issuer (KEYWARD_ISSUER_URL is unset): federated credentials cannot be used here.' }),
]));

export const OrgSelf = named('OrgSelf', Type.Object({
  id: IdOf('org', 'The organisation\'s id.'),
  object: Type.Literal('organization'),
  name: Type.String(),
  created_at: Time,
  spend_limit_usd: Type.Union([Type.String(), Type.Null()], { description: 'The monthly spend cap (UTC calendar month), or null for none.' }),
  federation: Federation,
  caller: Caller,
}, { additionalProperties: false, description: 'The calling organisation, and who the presented key is (its role says what it may do).' }));

export const OrgTokenRotate = named('OrgTokenRotate', Type.Object({
  grace_s: Type.Optional(rule(Type.Integer({ minimum: 0, maximum: 2_592_000, default: 0, description: 'Seconds the current token keeps working (a token already retiring never gets longer).' }),
    'an integer number of seconds from 0 to 2592000')),
}, { additionalProperties: false, examples: [{ grace_s: 300 }] }));

export const OrgTokenRotated = named('OrgTokenRotated', Type.Object({
  id: IdOf('org', 'The organisation\'s id.'),
  object: Type.Literal('organization'),
  token: Type.Optional(SecretOf('otok', 'The new organisation token. Shown once.')),
  token_id: IdOf('otk', 'The new token\'s id (the `actor` in audit events).'),
}, { additionalProperties: false, description: 'The new organisation token, shown once (absent from an idempotent replay).' }));

const SpendLimitUsd = Type.Union([
  Type.String({ pattern: USD_AMOUNT.source, description: 'US dollars per UTC calendar month, a decimal string with at most six places, above 0.', examples: ['250.00'] }),
  Type.Null({ description: 'No limit.' }),
]);

export const OrgUpdate = named('OrgUpdate', Type.Object({
  spend_limit_usd: rule(SpendLimitUsd, 'a decimal string of US dollars above 0 with at most six decimal places, such as "250.00", or null for no limit', undefined, usdNumberHint('spend_limit_usd')),
}, { additionalProperties: false, examples: [{ spend_limit_usd: '250.00' }, { spend_limit_usd: null }] }));

export const OrganizationSettings = named('OrganizationSettings', Type.Object({
  id: IdOf('org', 'The organisation\'s id.'),
  object: Type.Literal('organization'),
  name: Type.String(),
  created_at: Time,
  spend_limit_usd: Type.Union([Type.String(), Type.Null()], { description: 'The monthly spend cap (UTC calendar month), or null for none.' }),
}, { additionalProperties: false, description: 'The calling organisation and its settings.' }));

export const ORG_CREATE = bodyContract(OrgCreate);
export const ORG_UPDATE = bodyContract(OrgUpdate);
/** No body means the defaults; a body that is present must be an object (`null` is not one). */
export const ORG_TOKEN_ROTATE = bodyContract(OrgTokenRotate, { optional: true });
