/**
 * Admin keys: POST /v1/admin-keys (role, optional name, a minter's credential_ids, optional ttl), the key view,
 * lists and deletion; and GET /v1/orgs/self's `caller` (who the presented key is, and what it may do).
 * What a schema cannot say stays with the admin key service and is named in the descriptions: a role
 * above the caller's own, a key outliving its creator (403 `forbidden`), credentials of another
 * organisation (404) and the ttl's upper bound (366d).
 */
import { Type } from '@sinclair/typebox';
import { MAX_CREDENTIAL_IDS } from '../../vault/admin-key-service.js';
import { IdOf, listOf, Name, named, SecretOf, Time } from './common.js';
import { bodyContract, rule } from './validate.js';

export const KeyRole = named('AdminKeyRole', rule(Type.Union([Type.Literal('admin'), Type.Literal('minter'), Type.Literal('viewer')], {
  description: '`admin`: everything but the org token\'s rotation; `minter`: only POST /v1/tokens (for `credential_ids`, if set) and GET of the tokens it minted; `viewer`: GET only. A caller creates only roles it covers (an admin: admin, minter, viewer).',
}), 'one of admin, minter, viewer'));

export const CallerRole = named('CallerRole', Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('minter'), Type.Literal('viewer'), Type.Literal('member')], {
  description: '`owner` is the organisation token itself; `admin`, `minter` and `viewer` an admin key or a member signed in by single sign-on; `member` a signed-in member whose groups map to no other role.',
}));

const CredentialIds = rule(Type.Array(Type.String({ pattern: '^[A-Za-z0-9_]{1,64}$' }), {
  minItems: 1, maxItems: MAX_CREDENTIAL_IDS,
  description: 'A minter only: the credentials it may mint tokens for (each of this organisation, else 404). Left out: every credential.',
}), `a non-empty array of at most ${MAX_CREDENTIAL_IDS} credential ids`);

export const AdminKeyCreate = named('AdminKeyCreate', Type.Object({
  name: Type.Optional(Name),
  role: KeyRole,
  credential_ids: Type.Optional(CredentialIds),
  ttl: Type.Optional(rule(Type.String({
    pattern: '^[1-9][0-9]*[smhd]$',
    description: 'Lifetime, at most `366d`; left out: until deleted. A key made by an expiring key ends with it at the latest (a longer ttl → 403 `forbidden`).',
    examples: ['90d'],
  }), 'a positive integer without leading zeros and one unit of s, m, h, d, such as "90d"', 'invalid_ttl')),
}, { additionalProperties: false, examples: [{ name: 'ci minter', role: 'minter', credential_ids: ['cred_4kT9bQ2mXw7Zr1sVc8NpL3aY'], ttl: '90d' }] }));

const adminKeyProperties = {
  id: IdOf('akey', 'The key\'s id (not the secret); the `actor` of its audit events.'),
  object: Type.Literal('admin_key'),
  name: Type.Optional(Type.String({ description: 'What the key is for (keys named before names were limited to 64 characters may have up to 100).' })),
  role: KeyRole,
  credential_ids: Type.Optional(Type.Array(Type.String())),
  status: Type.Union([Type.Literal('active'), Type.Literal('expired')], { description: '`active` until `expires_at` (if any).' }),
  created_at: Time,
  expires_at: Type.Union([Time, Type.Null()], { description: 'null: until deleted.' }),
  created_by: Type.String({ description: 'Who created it: an `otk_` or `akey_` id, or `cli`.' }),
};

export const AdminKey = named('AdminKey', Type.Object(adminKeyProperties, { additionalProperties: false, description: 'An admin key (never its value).' }));

export const AdminKeyCreated = named('AdminKeyCreated', Type.Object({
  ...adminKeyProperties,
  token: Type.Optional(SecretOf('otok', 'The key: `Authorization: Bearer otok_…` on the admin API. Shown once.')),
}, { additionalProperties: false, description: 'A new admin key. `token` is shown here once and never again (absent from an idempotent replay).' }));

export const AdminKeyList = listOf('AdminKeyList', AdminKey, 'Admin keys (never their values).');

export const AdminKeyRevoked = named('AdminKeyRevoked', Type.Object({
  id: Type.String(), object: Type.Literal('admin_key'), revoked: Type.Literal(true),
}, { additionalProperties: false }));

export const Caller = named('Caller', Type.Object({
  id: Type.String({ description: 'The presented key\'s id: `otk_…` for the organisation token, `akey_…` for an admin key, `usr_…` for a member signed in by single sign-on.' }),
  role: CallerRole,
  credential_ids: Type.Optional(Type.Array(Type.String(), { description: 'A minter limited to these credentials.' })),
}, { additionalProperties: false }));

export const ADMIN_KEY_CREATE = bodyContract(AdminKeyCreate);
