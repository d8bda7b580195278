/**
 * POST /v1/tokens/exchange (RFC 8693): the request's fields (form or JSON), the token response,
 * and RFC 6749's error shape. Unknown fields are ignored, as RFC 6749 §3.2 asks of a token
 * endpoint; the token exchange service checks the values (grant type, token types).
 */
import { Type } from '@sinclair/typebox';
import { named, SecretOf } from './common.js';
import { bodyContract, rule } from './validate.js';

const text = (description: string, maxLength = 512) => rule(Type.String({ minLength: 1, maxLength, description }), `a string of 1 to ${maxLength} characters`);

export const TokenExchangeRequest = named('TokenExchangeRequest', Type.Object({
  grant_type: text('`urn:ietf:params:oauth:grant-type:token-exchange` (else `unsupported_grant_type`).'),
  subject_token: text('The workload\'s OIDC token (a signed JWT).', 16_384),
  subject_token_type: text('`urn:ietf:params:oauth:token-type:jwt` (or `…:id_token`).'),
  policy_id: Type.Optional(rule(Type.String({ pattern: '^tp_[0-9A-Za-z]{24}$', description: 'The trust policy to use; without it, the oldest matching policy (of one organisation only).' }), 'a trust policy id (tp_…)')),
  requested_token_type: Type.Optional(text('`urn:ietf:params:oauth:token-type:access_token` if given.')),
  audience: Type.Optional(Type.String({ description: 'Ignored: the trust policy decides the token.' })),
  resource: Type.Optional(Type.String({ description: 'Ignored: the trust policy decides the token.' })),
  scope: Type.Optional(Type.String({ description: 'Ignored: the trust policy decides the token\'s scopes.' })),
  actor_token: Type.Optional(Type.String({ description: 'Not supported (delegation): refused with `invalid_request`.' })),
  actor_token_type: Type.Optional(Type.String({ description: 'Not supported.' })),
}, {
  additionalProperties: true,
  examples: [{
    grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange', subject_token: 'eyJhbGciOiJSUzI1NiIsImtpZCI6…',
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', policy_id: 'tp_4kT9bQ2mXw7Zr1sVc8NpL3aY',
  }],
}));

export const TokenExchangeResponse = named('TokenExchangeResponse', Type.Object({
  access_token: SecretOf('ptok', 'A proxy token for the policy\'s credential, with its scopes: `X-Proxy-Token: ptok_…` (or an SDK\'s `apiKey`).'),
  issued_token_type: Type.Literal('urn:ietf:params:oauth:token-type:access_token'),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ minimum: 1, description: 'Seconds the token is valid: the policy\'s ttl, at most KEYWARD_MAX_TTL.' }),
}, { additionalProperties: false }));

export const OAuthErrorBody = named('OAuthError', Type.Object({
  error: Type.Union([
    Type.Literal('invalid_request'), Type.Literal('invalid_grant'), Type.Literal('unsupported_grant_type'),
    Type.Literal('temporarily_unavailable'), Type.Literal('server_error'), Type.Literal('invalid_client'), Type.Literal('invalid_target'),
    Type.Literal('invalid_client_metadata'), Type.Literal('invalid_redirect_uri'), Type.Literal('unsupported_token_type'),
  ], { description: '`invalid_grant`: the token, code or refresh token did not verify (or no trust policy matches it); `invalid_request` / `unsupported_grant_type`: a malformed request; `invalid_client`: a code or refresh token of another client; `invalid_target`: another resource than the grant\'s; `invalid_client_metadata` / `invalid_redirect_uri`: a registration Keyward does not take.' }),
  error_description: Type.String({ description: 'What was wrong, in words (never the token).' }),
}, { additionalProperties: false, description: 'RFC 6749 §5.2\'s error response, which OAuth clients expect of a token endpoint (not the gateway\'s usual error shape).' }));

export const TOKEN_EXCHANGE = bodyContract(TokenExchangeRequest);
