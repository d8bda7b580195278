/**
 * Trust policies: POST /v1/trust-policies, the policy view and lists. A policy carries every token
 * scope POST /v1/tokens takes, with the same schemas (taken from TokenCreate, so a scope added
 * there is taken here too). What a schema cannot say stays with the trust-policy service: the
 * issuer's allow-list (400 issuer_not_allowed), `*` only at the subject's end, the ttl bound and
 * each scope's fit with the credential's provider.
 */
import { Type } from '@sinclair/typebox';
import { IdOf, listOf, named, Time } from './common.js';
import { TokenCreate, Ttl } from './tokens.js';
import { bodyContract, rule } from './validate.js';

// A token's `name` is not a scope: a policy's tokens are not named by it.
const { credential_id: optionalCredentialId, pool_id: _pool, ttl: _ttl, name: _name, ...scopeFields } = TokenCreate.properties;
/** A policy mints for one credential (required here; POST /v1/tokens takes a pool instead). */
const credentialId = Type.Required(Type.Object({ c: optionalCredentialId })).properties.c;

/** The token scopes a policy's tokens carry: POST /v1/tokens's own fields. */
export const TRUST_POLICY_SCOPES = scopeFields;

const Issuer = rule(Type.String({
  minLength: 1, maxLength: 256, description: 'The OIDC issuer (`iss`), exactly as the operator allows it in KEYWARD_OIDC_ISSUERS.',
  examples: ['https://token.actions.githubusercontent.com'],
}), 'an issuer URL the gateway allows');

const Audience = rule(Type.String({
  minLength: 1, maxLength: 256, description: 'The audience (`aud`) the workload asks its token for; one of the token\'s audiences must equal it.',
  examples: ['https://keyward.example.com'],
}), 'a non-empty string of at most 256 characters');

const Subject = rule(Type.String({
  minLength: 1, maxLength: 512, pattern: '^[^*]+\\*?$',
  description: 'The token\'s `sub`, exactly, or a prefix followed by `*` that fixes the owner: GitHub `repo:<owner>/…*`, GitLab `project_path:<group>/…*` (Google\'s subjects are exact). A bare `*` is refused.',
  examples: ['repo:acme/app:ref:refs/heads/main', 'repo:acme/app:*'],
}), 'a subject, or a non-empty prefix followed by *');

const Claims = rule(Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.:-]{1,64}$' }), Type.Union([Type.String({ maxLength: 512 }), Type.Number(), Type.Boolean()]), {
  maxProperties: 20,
  description: 'Further claims the token must hold, each with exactly this value (`iss`, `sub`, `aud` and the time claims are checked by their own fields).',
  examples: [{ repository: 'acme/app', ref: 'refs/heads/main' }],
}), 'an object of at most 20 claim names and their exact string, number or boolean values');

export const TrustPolicyCreate = named('TrustPolicyCreate', Type.Object({
  issuer: Issuer,
  audience: Audience,
  subject: Subject,
  claims: Type.Optional(Claims),
  credential_id: credentialId,
  ttl: Ttl,
  ...scopeFields,
}, {
  additionalProperties: false,
  examples: [{
    issuer: 'https://token.actions.githubusercontent.com', audience: 'https://keyward.example.com', subject: 'repo:acme/app:ref:refs/heads/main',
    claims: { repository: 'acme/app' }, credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY', ttl: '15m', models: ['gpt-4o-mini'],
  }],
}));

export const TrustPolicy = named('TrustPolicy', Type.Object({
  id: IdOf('tp', 'The trust policy\'s id: name it as `policy_id` in an exchange.'),
  object: Type.Literal('trust_policy'),
  issuer: Issuer,
  audience: Audience,
  subject: Subject,
  claims: Claims,
  credential_id: IdOf('cred', 'The credential the minted tokens use.'),
  ttl: Ttl,
  created_at: Time,
  expires_at: Type.Union([Time, Type.Null()], { description: 'When the policy stops matching: the end of the admin key that created it. null: until deleted.' }),
  ...scopeFields,
}, { additionalProperties: false, description: 'Which workload identities may exchange their OIDC token for a proxy token, and what that token may do.' }));

export const TrustPolicyList = listOf('TrustPolicyList', TrustPolicy, 'Trust policies.');

export const TrustPolicyDeleted = named('TrustPolicyDeleted', Type.Object({
  id: Type.String(), object: Type.Literal('trust_policy'), deleted: Type.Literal(true),
}, { additionalProperties: false }));

export const TRUST_POLICY_CREATE = bodyContract(TrustPolicyCreate);
