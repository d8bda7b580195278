/**
 * Keyward's authorization server for its MCP routes: the token endpoint's request (form or JSON; unknown fields
 * ignored, as RFC 6749 §3.2 asks) and response, dynamic client registration (RFC 7591) and revocation (RFC 7009).
 * The values are checked by the authorization service (src/identity/mcp-auth/authorization.ts).
 */
import { Type } from '@sinclair/typebox';
import { named, SecretOf } from './common.js';
import { bodyContract, rule } from './validate.js';

const text = (description: string, maxLength = 2048) => Type.Optional(rule(Type.String({ minLength: 1, maxLength, description }), `a string of 1 to ${maxLength} characters`));

export const McpTokenRequest = named('McpTokenRequest', Type.Object({
  grant_type: rule(Type.String({ minLength: 1, maxLength: 64, description: '`authorization_code` or `refresh_token` (else `unsupported_grant_type`).' }), 'a grant type'),
  code: text('With authorization_code: the code from the redirect (60 s, once; a second use revokes every token issued from it).', 256),
  code_verifier: text('With authorization_code: the PKCE verifier whose S256 hash is the request\'s code_challenge.', 128),
  redirect_uri: text('With authorization_code: the authorization request\'s redirect_uri, exactly.'),
  client_id: text('The client: a registered `mcpc_…` id or the URL of its metadata document.'),
  refresh_token: text('With refresh_token: the newest refresh token of the grant (an earlier one revokes the whole family).', 256),
  resource: text('The MCP route, `<issuer>/v1/mcp/<credential id>`: if given, the grant\'s own (else `invalid_target`).'),
}, { additionalProperties: true, examples: [{ grant_type: 'authorization_code', code: 'kwc_…', code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk', redirect_uri: 'http://127.0.0.1:33418/callback', client_id: 'mcpc_4kT9bQ2mXw7Zr1sVc8NpL3aY', resource: 'https://keyward.example.com/v1/mcp/cred_4kT9bQ2mXw7Zr1sVc8NpL3aY' }] }));

export const McpTokenResponse = named('McpTokenResponse', Type.Object({
  access_token: SecretOf('ptok', 'An access token for the one MCP route of the grant (its audience), allowed the consented tools: `Authorization: Bearer …` there, refused anywhere else.'),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer({ minimum: 1, description: 'Seconds the access token is valid: KEYWARD_MCP_TOKEN_TTL (default 3600), never past the grant.' }),
  refresh_token: Type.String({ pattern: '^kwr_mcpg_[0-9A-Za-z]{24}_[0-9A-Za-z]{43}$', description: 'The next refresh token: the one presented is spent (rotation).' }),
}, { additionalProperties: false }));

export const McpClientRegistration = named('McpClientRegistration', Type.Object({
  redirect_uris: Type.Array(Type.String({ maxLength: 2000 }), { minItems: 1, maxItems: 10, description: 'https, http on a loopback host (any port is then accepted), or a private-use scheme; no fragment.' }),
  client_name: Type.Optional(Type.String({ maxLength: 200, description: 'Shown on the consent page (cut to 100 characters).' })),
  token_endpoint_auth_method: Type.Optional(Type.String({ description: '`none` if given: every client is public (PKCE binds its code).' })),
  grant_types: Type.Optional(Type.Array(Type.String(), { description: '`authorization_code` and `refresh_token` only.' })),
}, { additionalProperties: true, examples: [{ client_name: 'Claude Code', redirect_uris: ['http://localhost:33418/callback'], token_endpoint_auth_method: 'none' }] }));

export const McpClientInformation = named('McpClientInformation', Type.Object({
  client_id: Type.String({ pattern: '^mcpc_[0-9A-Za-z]{24}$' }),
  client_id_issued_at: Type.Integer({ description: 'Seconds since the epoch.' }),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('none'),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
}, { additionalProperties: false }));

export const McpRevocationRequest = named('McpRevocationRequest', Type.Object({
  token: rule(Type.String({ minLength: 1, maxLength: 256, description: 'An access token or refresh token Keyward issued for an MCP route.' }), 'a token'),
  token_type_hint: Type.Optional(Type.String({ description: 'Ignored: the token says what it is.' })),
  client_id: Type.Optional(Type.String()),
}, { additionalProperties: true }));

export const McpRevocationResponse = named('McpRevocationResponse', Type.Object({}, { additionalProperties: false, description: 'Always empty: an unknown or spent token is answered the same (RFC 7009 §2.2).' }));

export const MCP_TOKEN = bodyContract(McpTokenRequest);
export const MCP_REGISTRATION = bodyContract(McpClientRegistration);
export const MCP_REVOCATION = bodyContract(McpRevocationRequest);
