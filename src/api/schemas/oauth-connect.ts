/**
 * Upstream OAuth credentials on the wire: the `kind: oauth` create body (its providers are the loaded
 * MCP and tool providers), the view's OAuth fields and `connection`, and the connect flow's two bodies
 * (start: nothing; completion: what the SaaS put on the callback URL, and the browser binding).
 */
import { Type, type TObject } from '@sinclair/typebox';
import type { ProviderRegistry } from '../../catalog/registry.js';
import { Name, named, Time } from './common.js';
import { bodyContract } from './validate.js';

const Url = (what: string) => Type.String({ minLength: 1, maxLength: 2000, description: `${what}: https (http only on a loopback address, under KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK).` });
const Scopes = Type.Array(Type.String({ pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,200}$' }), { maxItems: 50, description: 'The OAuth scopes Keyward asks for when it is connected.' });

/** POST /v1/credentials with `kind: oauth`: an MCP or tool provider's credential whose upstream takes OAuth access tokens. */
export function oauthCredentialCreateSchema(registry: ProviderRegistry): TObject {
  const providers = registry.ids().filter((id) => ['mcp', 'tool'].includes(registry.get(id)!.kind ?? 'llm'));
  return named('OAuthCredentialCreate', Type.Object({
    provider: Type.Union(providers.map((id) => Type.Literal(id)), { description: 'An MCP server or tool API loaded here.' }),
    kind: Type.Literal('oauth'),
    name: Type.Optional(Name),
    authorization_url: Url('The SaaS\'s authorization endpoint'),
    token_url: Url('The SaaS\'s token endpoint'),
    client_id: Type.String({ minLength: 1, maxLength: 500, description: 'The OAuth client id the SaaS gave the organisation\'s app.' }),
    client_secret: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, writeOnly: true, description: 'The app\'s client secret: sealed like a key, never shown again (left out: a public client, PKCE alone).' })),
    scopes: Type.Optional(Scopes),
    per_member: Type.Optional(Type.Boolean({ description: 'true: each member connects their own account (a personal token acts as its member); default: one connection for the organisation.' })),
  }, {
    additionalProperties: false,
    description: 'An upstream OAuth credential: connected once from the console (POST /v1/credentials/{id}/connect), then Keyward refreshes its access tokens and sends them upstream. No token is ever returned.',
  }));
}

/** The view's OAuth part (besides the base: `kind`, the endpoints, `client_id`, `scopes`, `per_member`, `connection`). */
export const OAuthConnection = named('OAuthConnection', Type.Object({
  state: Type.Union([Type.Literal('not_connected'), Type.Literal('connected'), Type.Literal('reconnect')], {
    description: '`reconnect`: the SaaS refused the refresh token (revoked, expired); requests get 502 `upstream_auth_failed` until someone connects again. For a per-member credential, the calling member\'s own.',
  }),
  connected_at: Type.Optional(Time),
  updated_at: Type.Optional(Time),
  members: Type.Optional(Type.Object({ connected: Type.Integer({ minimum: 0 }), reconnect: Type.Integer({ minimum: 0 }) }, { additionalProperties: false, description: 'A per-member credential: how many members are connected, and how many must reconnect.' })),
}, { additionalProperties: false }));

export const OAuthViewFields = {
  kind: Type.Optional(Type.Literal('oauth', { description: 'An upstream OAuth credential.' })),
  authorization_url: Type.Optional(Type.String()),
  token_url: Type.Optional(Type.String()),
  client_id: Type.Optional(Type.String()),
  scopes: Type.Optional(Type.Array(Type.String())),
  per_member: Type.Optional(Type.Boolean()),
  connection: Type.Optional(OAuthConnection),
};

export const OAuthAuthorization = named('OAuthAuthorization', Type.Object({
  object: Type.Literal('oauth_authorization'),
  authorization_url: Type.String({ description: 'Where the browser goes to consent (the SaaS\'s authorization endpoint with `state` and a PKCE S256 challenge).' }),
  redirect_uri: Type.String({ description: 'Where the SaaS sends the browser back: register it with the SaaS\'s OAuth app (`<KEYWARD_ISSUER_URL>/console/oauth-callback`).' }),
  binding: Type.String({ description: 'Kept by the browser that started (the console keeps it in this tab) and sent with the completion: a callback carried to another browser is refused. Shown once.' }),
  expires_at: Time,
}, { additionalProperties: false }));

export const OAUTH_COMPLETE = bodyContract(named('OAuthComplete', Type.Object({
  state: Type.String({ minLength: 1, maxLength: 4096 }),
  binding: Type.String({ minLength: 1, maxLength: 200 }),
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  error: Type.Optional(Type.String({ maxLength: 200 })),
  error_description: Type.Optional(Type.String({ maxLength: 1000 })),
}, { additionalProperties: false, description: 'What the SaaS put on the callback URL (`code` and `state`, or `error`), and the binding the start gave this browser.' })));

export const OAUTH_START = bodyContract(Type.Object({}, { additionalProperties: false }), { optional: true });
