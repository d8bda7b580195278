/** Single sign-on, members and sessions: the wire shapes of /v1/orgs/self/sso, /v1/sso/*, /v1/session and /v1/members. */
import { Type } from '@sinclair/typebox';
import { USD_AMOUNT } from '../../pricing/money.js';
import type { QueryContract } from '../../http/router.js';
import { IdOf, listOf, named, SecretOf, Time } from './common.js';
import { Name } from './common.js';
import { Ttl } from './tokens.js';
import { bodyContract, queryContract, rule, usdNumberHint } from './validate.js';

const MemberRoleSchema = Type.Union([Type.Literal('admin'), Type.Literal('minter'), Type.Literal('viewer'), Type.Literal('member')], {
  description: 'What a member may do: `admin`, `minter` and `viewer` as admin keys of that role; `member` only its own session, its personal tokens and GET /v1/orgs/self.',
});

export const SsoConfigPut = named('SsoConfigPut', Type.Object({
  issuer: rule(Type.String({ minLength: 8, maxLength: 2048, pattern: '^https?://', description: 'The OpenID provider\'s issuer URL (its `iss`, exactly); `<issuer>/.well-known/openid-configuration` is fetched at once. https only (http on a loopback address only with KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK).', examples: ['https://acme.okta.com'] }), 'an https URL'),
  client_id: rule(Type.String({ minLength: 1, maxLength: 256, description: 'The confidential client registered at the provider for Keyward.' }), '1 to 256 characters'),
  client_secret: rule(Type.String({ minLength: 1, maxLength: 2048, description: 'The client\'s secret: sealed like a provider key, never returned (the API shows its last four characters).' }), '1 to 2048 characters'),
  allowed_domains: Type.Optional(rule(Type.Array(Type.String({ minLength: 3, maxLength: 253 }), { maxItems: 50, description: 'E-mail domains a member must be at (`example.com`); left out or empty: any.' }), 'an array of at most 50 domain names')),
  groups_claim: Type.Optional(rule(Type.Union([Type.String({ minLength: 1, maxLength: 128 }), Type.Null()], { description: 'The ID token claim listing the member\'s groups (default `groups` when `role_map` is set).' }), 'a claim name, or null')),
  role_map: Type.Optional(rule(Type.Record(Type.String({ minLength: 1, maxLength: 256 }), MemberRoleSchema, { maxProperties: 100, description: 'Provider group → role; a member takes the highest role its groups map to (admin > minter > viewer > member), `member` when none does.' }), 'an object of at most 100 groups, each mapped to admin, minter, viewer or member')),
}, { additionalProperties: false, examples: [{ issuer: 'https://acme.okta.com', client_id: '0oa1keyward', client_secret: '…', allowed_domains: ['acme.com'], role_map: { 'platform-admins': 'admin' } }] }));

export const SsoConfig = named('SsoConfig', Type.Object({
  object: Type.Literal('sso_config'),
  issuer: Type.String(),
  client_id: Type.String(),
  client_secret_hint: Type.String({ description: 'The last four characters of the client secret (the secret itself is never returned).' }),
  allowed_domains: Type.Array(Type.String()),
  groups_claim: Type.Union([Type.String(), Type.Null()]),
  role_map: Type.Record(Type.String(), MemberRoleSchema),
  redirect_uri: Type.String({ description: 'The callback to register at the provider: `<KEYWARD_PUBLIC_URL>/v1/sso/callback`.' }),
  updated_at: Time,
}, { additionalProperties: false, description: 'The organisation\'s single sign-on (never the client secret).' }));

export const Member = named('Member', Type.Object({
  id: IdOf('usr', 'The member\'s id.'),
  object: Type.Literal('member'),
  email: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  role: MemberRoleSchema,
  issuer: Type.String({ description: 'The provider that signed the member in.' }),
  subject: Type.String({ description: 'The member\'s `sub` at that provider.' }),
  budget_usd: Type.Union([Type.String(), Type.Null()], { description: 'The member\'s monthly budget in US dollars, or null for none.' }),
  created_at: Time,
  last_sign_in_at: Time,
}, { additionalProperties: false, description: 'A person of the organisation, made at its first sign-in by single sign-on.' }));

export const MemberList = listOf('MemberList', Member, 'The organisation\'s members.');

export const MemberRemoved = named('MemberRemoved', Type.Object({
  id: Type.String(), object: Type.Literal('member'), deleted: Type.Literal(true),
}, { additionalProperties: false }));

const BudgetUsd = Type.Union([
  Type.String({ pattern: USD_AMOUNT.source, description: 'US dollars per UTC calendar month, a decimal string with at most six places, above 0.', examples: ['50.00'] }),
  Type.Null({ description: 'No budget.' }),
]);

export const MemberUpdate = named('MemberUpdate', Type.Object({
  budget_usd: rule(BudgetUsd, 'a decimal string of US dollars above 0 with at most six decimal places, such as "50.00", or null', undefined, usdNumberHint('budget_usd')),
}, { additionalProperties: false, examples: [{ budget_usd: '50.00' }] }));

export const Session = named('Session', Type.Object({
  object: Type.Literal('session'),
  org: Type.Object({ id: IdOf('org', 'The organisation.'), name: Type.String() }, { additionalProperties: false }),
  member: Member,
  csrf: Type.Optional(Type.String({ description: 'The console session\'s anti-CSRF value: send it as `X-Keyward-CSRF` on every other admin call made with the cookie.' })),
  expires_at: Time,
}, { additionalProperties: false, description: 'Who is signed in.' }));

export const SessionEnded = named('SessionEnded', Type.Object({ object: Type.Literal('session'), deleted: Type.Literal(true) }, { additionalProperties: false }));

export const SignInRedirect = named('SignInRedirect', Type.Object({
  location: Type.String({ description: 'Where the browser is sent (also the `Location` header).' }),
}, { additionalProperties: false }));

/** An organisation's id, or its name (the names of organisations with single sign-on are matched exactly, ignoring case). */
const OrgRef = rule(Type.String({ minLength: 1, maxLength: 100, description: 'The organisation signing in: its id (`org_…`) or its name.' }), 'an organisation id (org_…) or name');

export const SignInStartQuery = Type.Object({
  org: OrgRef,
  cli_redirect: Type.Optional(rule(Type.String({ maxLength: 200, pattern: '^http://(127\\.0\\.0\\.1|\\[::1\\]):[0-9]{1,5}/[A-Za-z0-9/_-]*$', description: '`keyward login`\'s loopback redirect (RFC 8252): where the browser is sent back with a one-time code instead of to the console.' }), 'http://127.0.0.1:<port>/<path>')),
  cli_challenge: Type.Optional(rule(Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'With `cli_redirect`: the S256 PKCE challenge of the verifier the CLI redeems the code with.' }), 'a PKCE S256 challenge (43 base64url characters)')),
});

export const ProviderQuery = Type.Object({ org: OrgRef });

export const SsoProvider = named('SsoProvider', Type.Object({
  object: Type.Literal('sso_provider'),
  provider: Type.String({ description: 'What the console names the provider ("Sign in with …"): its issuer\'s host.' }),
  device_grant: Type.Boolean({ description: 'Whether the provider offers the device authorization grant (`keyward login` uses it; else a loopback redirect).' }),
}, { additionalProperties: false, description: 'That the organisation signs in by single sign-on, and with what (nothing else about it).' }));

export const CliCodeRedeem = named('CliCodeRedeem', Type.Object({
  code: rule(Type.String({ minLength: 1, maxLength: 8192 }), 'the code the loopback redirect carried'),
  code_verifier: rule(Type.String({ pattern: '^[A-Za-z0-9._~-]{43,128}$' }), 'the PKCE verifier (43 to 128 characters)'),
}, { additionalProperties: false }));

export const CallbackQuery = Type.Object({
  code: Type.Optional(Type.String({ description: 'The provider\'s authorization code.' })),
  state: Type.Optional(Type.String({ description: 'The `state` this sign-in was started with.' })),
  iss: Type.Optional(Type.String({ description: 'RFC 9207: the provider\'s issuer.' })),
  error: Type.Optional(Type.String({ description: 'The provider\'s refusal.' })),
}, { description: 'What the provider appends to the redirect (other parameters it adds are passed to the checks as they are).' });

/** The callback's query goes to openid-client whole: the provider decides what it appends. */
export const CALLBACK_QUERY: QueryContract<URLSearchParams> = { schema: CallbackQuery, parse: (q) => q };
export const SIGN_IN_START = queryContract(SignInStartQuery);
export const PROVIDER_QUERY = queryContract(ProviderQuery);

export const DeviceStart = named('DeviceStart', Type.Object({
  org: OrgRef,
}, { additionalProperties: false }));

export const DeviceStarted = named('DeviceStarted', Type.Object({
  object: Type.Literal('device_sign_in'),
  device_handle: Type.String({ description: 'What to poll POST /v1/sso/device/token with (sealed; the provider\'s device code never leaves the gateway in clear).' }),
  user_code: Type.String(),
  verification_uri: Type.String(),
  verification_uri_complete: Type.Optional(Type.String()),
  expires_in: Type.Integer(),
  interval: Type.Integer(),
}, { additionalProperties: false }));

export const DevicePoll = named('DevicePoll', Type.Object({
  device_handle: rule(Type.String({ minLength: 1, maxLength: 8192 }), 'the device_handle POST /v1/sso/device answered'),
}, { additionalProperties: false }));

export const CliSession = named('CliSession', Type.Object({
  object: Type.Literal('session'),
  session: Type.Optional(SecretOf('kses', 'The CLI\'s session: `Authorization: Bearer kses_…` on the admin API. Shown once.')),
  refresh_token: Type.Optional(SecretOf('kref', 'Renews the session once (POST /v1/session/refresh). Shown once.')),
  expires_at: Time,
  refresh_expires_at: Time,
  member: Member,
}, { additionalProperties: false, description: '`keyward login`\'s session (stored by the CLI with mode 0600).' }));

export const SessionRefresh = named('SessionRefresh', Type.Object({
  refresh_token: rule(Type.String({ minLength: 1, maxLength: 128 }), 'a kref_… value'),
}, { additionalProperties: false }));

export const PersonalTokenCreate = named('PersonalTokenCreate', Type.Object({
  credential_id: Type.Optional(Type.String({ minLength: 1, description: 'A credential of the organisation. Exactly one of `credential_id` and `pool_id`.' })),
  pool_id: Type.Optional(Type.String({ minLength: 1, description: 'A pool of the organisation.' })),
  ttl: Type.Optional(Ttl),
  name: Type.Optional(Name),
}, { additionalProperties: false, examples: [{ credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY', ttl: '1h' }] }));

export const SSO_CONFIG_PUT = bodyContract(SsoConfigPut);
export const MEMBER_UPDATE = bodyContract(MemberUpdate);
export const DEVICE_START = bodyContract(DeviceStart);
export const CLI_CODE_REDEEM = bodyContract(CliCodeRedeem);
export const DEVICE_POLL = bodyContract(DevicePoll);
export const SESSION_REFRESH = bodyContract(SessionRefresh);
export const PERSONAL_TOKEN_CREATE = bodyContract(PersonalTokenCreate);
