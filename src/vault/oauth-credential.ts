/**
 * Upstream OAuth credentials (`kind: oauth`): an MCP or tool credential whose upstream takes OAuth
 * access tokens, which Keyward gets itself as the OAuth client the organisation registered at the SaaS.
 * What its create body holds and how it is checked (`parseOAuthCredentialInput`: a 400 naming the field,
 * before anything is stored), and how it is kept: `client_secret` sealed like a key (the credential's
 * secret), the rest plain in the record's fields (`kind`, the two endpoints, `client_id`, `scopes` joined
 * by spaces, `per_member`). Both endpoints are https, or http on a loopback address only under
 * KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK (tests), as every URL Keyward fetches for identity (identity/oidc-fetch.ts).
 */
import type { CredentialSecrets } from '../catalog/provider.js';
import { Errors } from '../errors.js';
import { fetchableUrl, OidcFetchError } from '../identity/oidc-fetch.js';

export const OAUTH_KIND = 'oauth';

/** The create body's keys besides `provider`, `name` and `kind`. */
export const OAUTH_FIELDS = ['authorization_url', 'token_url', 'client_id', 'client_secret', 'scopes', 'per_member'] as const;

/** RFC 6749 §3.3 scope-token: printable ASCII except space, `"` and `\`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/;
const CLIENT_ID = /^[\x21-\x7e]{1,500}$/;
const CLIENT_SECRET = /^[\x21-\x7e]{1,4096}$/;
const MAX_SCOPES = 50;

/** Whether a stored credential is an upstream OAuth one. */
export const isOAuthCredential = (plain: Readonly<Record<string, string>> | undefined): boolean => plain?.kind === OAUTH_KIND;

/** Whether a stored OAuth credential keeps one connection per member. */
export const isPerMember = (plain: Readonly<Record<string, string>> | undefined): boolean => plain?.per_member === 'true';

/** A stored OAuth credential's settings, read back from its values. */
export interface OAuthClientSettings {
  authorizationUrl: string;
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  scopes: string[];
  perMember: boolean;
}

export function oauthSettings(c: CredentialSecrets): OAuthClientSettings {
  return {
    authorizationUrl: c.plain.authorization_url ?? '', tokenUrl: c.plain.token_url ?? '', clientId: c.plain.client_id ?? '',
    ...(c.secrets.client_secret !== undefined ? { clientSecret: c.secrets.client_secret } : {}),
    scopes: (c.plain.scopes ?? '').split(' ').filter(Boolean), perMember: isPerMember(c.plain),
  };
}

function endpoint(body: Readonly<Record<string, unknown>>, field: string, allowHttpLoopback: boolean): string {
  const raw = body[field];
  if (typeof raw !== 'string' || raw.length > 2000) throw Errors.invalidRequest(`\`${field}\` must be the SaaS's https URL (at most 2000 characters).`, field);
  try {
    const url = fetchableUrl(raw, allowHttpLoopback);
    if (url.hash || raw.includes('#')) throw new OidcFetchError('no fragment');
    return url.href;
  } catch (err) {
    if (!(err instanceof OidcFetchError)) throw err;
    throw Errors.invalidRequest(`\`${field}\` must be an https URL without user or fragment${allowHttpLoopback ? ' (or http on 127.0.0.1 or [::1])' : ''}.`, field);
  }
}

/**
 * A `kind: oauth` create body → the credential's values: `client_secret` secret, the rest plain. Every key
 * must be one of OAUTH_FIELDS or `provider`, `name`, `kind`.
 */
export function parseOAuthCredentialInput(body: Readonly<Record<string, unknown>>, allowHttpLoopback: boolean): CredentialSecrets {
  for (const key of Object.keys(body)) {
    if (!['provider', 'name', 'kind', ...OAUTH_FIELDS].includes(key)) {
      throw Errors.invalidRequest(`Unknown field ${JSON.stringify(key.slice(0, 64))} for an OAuth credential (it takes provider, name, kind, ${OAUTH_FIELDS.join(', ')}).`, key.slice(0, 64));
    }
  }
  const plain: Record<string, string> = {
    kind: OAUTH_KIND,
    authorization_url: endpoint(body, 'authorization_url', allowHttpLoopback),
    token_url: endpoint(body, 'token_url', allowHttpLoopback),
  };
  if (typeof body.client_id !== 'string' || !CLIENT_ID.test(body.client_id)) throw Errors.invalidRequest('`client_id` must be the client id the SaaS gave (1 to 500 printable characters without spaces).', 'client_id');
  plain.client_id = body.client_id;
  const scopes = body.scopes ?? [];
  if (!Array.isArray(scopes) || scopes.length > MAX_SCOPES || !scopes.every((s) => typeof s === 'string' && SCOPE_TOKEN.test(s))) {
    throw Errors.invalidRequest(`\`scopes\` must be a list of at most ${MAX_SCOPES} OAuth scopes (printable, without spaces, quotes or backslashes).`, 'scopes');
  }
  if (scopes.length > 0) plain.scopes = [...new Set(scopes as string[])].join(' ');
  if (body.per_member !== undefined) {
    if (typeof body.per_member !== 'boolean') throw Errors.invalidRequest('`per_member` must be true or false.', 'per_member');
    if (body.per_member) plain.per_member = 'true';
  }
  const secrets: Record<string, string> = {};
  if (body.client_secret !== undefined) {
    if (typeof body.client_secret !== 'string' || !CLIENT_SECRET.test(body.client_secret)) throw Errors.invalidRequest('`client_secret` must be the client secret the SaaS gave (printable, without spaces).', 'client_secret');
    secrets.client_secret = body.client_secret;
  }
  return { secrets, plain };
}

/** A rotate body for an OAuth credential: a new `client_secret` only. */
export function parseOAuthRotateInput(body: Readonly<Record<string, unknown>>): Record<string, string> {
  for (const key of Object.keys(body)) {
    if (key !== 'client_secret') throw Errors.invalidRequest(`An OAuth credential's rotation takes \`client_secret\` only (its other fields are fixed at creation).`, key.slice(0, 64));
  }
  if (typeof body.client_secret !== 'string' || !CLIENT_SECRET.test(body.client_secret)) throw Errors.invalidRequest('`client_secret` must be the client secret the SaaS gave (printable, without spaces).', 'client_secret');
  return { client_secret: body.client_secret };
}
