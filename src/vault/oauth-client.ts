/**
 * Keyward as the OAuth client of a SaaS (an upstream OAuth credential's authorization server): the
 * authorization URL with `state` and PKCE (S256), the code exchange, and the refresh, all through
 * openid-client (RFC 6749, RFC 7636; no discovery: a credential names its two endpoints). Every request
 * to the token endpoint is bounded: its URL passes the SSRF rules of identity fetches (https, or loopback
 * http under KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK), redirects are not followed, an answer takes at most
 * FETCH_TIMEOUT_MS and MAX_ANSWER_BYTES. Failures are sorted (`OAuthGrantError`): the SaaS refused the
 * grant (its `error` code kept, for the caller to decide), or could not be asked. Messages hold the
 * SaaS's error code and URL, never a token, code, verifier or secret.
 */
import * as oidc from 'openid-client';
import { fetchableUrl, OidcFetchError } from '../identity/oidc-fetch.js';
import type { OAuthClientSettings } from './oauth-credential.js';

const FETCH_TIMEOUT_MS = 10_000;
const MAX_ANSWER_BYTES = 64 * 1024;
/** An access token goes into a header: printable ASCII without spaces, bounded. */
const TOKEN_SHAPE = /^[\x21-\x7e]{1,4096}$/;
/** A SaaS that gives no `expires_in` (an access token that does not expire) is asked again this often. */
export const DEFAULT_LIFETIME_MS = 60 * 60_000;

/** A failed grant. `refusedWith`: the SaaS answered with this OAuth error code (`invalid_grant`…); absent: it could not be asked. */
export class OAuthGrantError extends Error {
  constructor(message: string, readonly refusedWith?: string) {
    super(message);
    this.name = 'OAuthGrantError';
  }
}

/** What a token endpoint gave, checked. */
export interface GrantedTokens {
  accessToken: string;
  refreshToken?: string;
  lifetimeMs: number;
}

/** A fetch under the SSRF rules and bounds above (openid-client's customFetch). */
function boundedFetch(allowHttpLoopback: boolean): oidc.CustomFetch {
  return async (url, options) => {
    fetchableUrl(url, allowHttpLoopback);
    const res = await fetch(url, { ...options, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) } as RequestInit);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) throw new OAuthGrantError(`${new URL(url).origin} answered more than ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(chunk);
    }
    return new Response(res.status === 204 || res.status === 304 ? null : Buffer.concat(chunks), { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

/** The openid-client configuration of one credential: no discovery, its two endpoints, its client. */
export function oauthClient(s: OAuthClientSettings, allowHttpLoopback: boolean): oidc.Configuration {
  const auth = s.clientSecret !== undefined ? oidc.ClientSecretPost(s.clientSecret) : oidc.None();
  const config = new oidc.Configuration(
    { issuer: new URL(s.authorizationUrl).origin, authorization_endpoint: s.authorizationUrl, token_endpoint: s.tokenUrl },
    s.clientId, undefined, auth,
  );
  config[oidc.customFetch] = boundedFetch(allowHttpLoopback);
  if (allowHttpLoopback && (new URL(s.tokenUrl).protocol === 'http:' || new URL(s.authorizationUrl).protocol === 'http:')) oidc.allowInsecureRequests(config);
  return config;
}

/** A new PKCE code verifier (RFC 7636: 43 characters of 32 random bytes). */
export const newVerifier = (): string => oidc.randomPKCECodeVerifier();

/** Where the browser goes to consent: the authorization endpoint with `state`, the verifier's S256 challenge and the scopes. */
export async function authorizationUrl(config: oidc.Configuration, s: OAuthClientSettings, redirectUri: string, state: string, verifier: string): Promise<string> {
  return oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri, response_type: 'code', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', state,
    ...(s.scopes.length > 0 ? { scope: s.scopes.join(' ') } : {}),
  }).href;
}

function checked(r: oidc.TokenEndpointResponse, from: string): GrantedTokens {
  if (typeof r.access_token !== 'string' || !TOKEN_SHAPE.test(r.access_token)) throw new OAuthGrantError(`${from} answered without a usable access_token`);
  if (r.refresh_token !== undefined && (typeof r.refresh_token !== 'string' || r.refresh_token.length === 0 || r.refresh_token.length > 8192)) throw new OAuthGrantError(`${from} answered an unusable refresh_token`);
  const expires = r.expires_in;
  if (expires !== undefined && (typeof expires !== 'number' || !Number.isFinite(expires) || expires < 1 || expires > 366 * 86_400)) throw new OAuthGrantError(`${from} answered an unusable expires_in`);
  return { accessToken: r.access_token, ...(r.refresh_token !== undefined ? { refreshToken: r.refresh_token } : {}), lifetimeMs: expires === undefined ? DEFAULT_LIFETIME_MS : expires * 1000 };
}

/** What a failed grant says: the SaaS's error code and description (bounded), or that it could not be asked. */
function failure(err: unknown, from: string): OAuthGrantError {
  if (err instanceof OAuthGrantError) return err;
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.AuthorizationResponseError) {
    const description = typeof err.error_description === 'string' ? `: ${err.error_description.replace(/[^\x20-\x7e]/g, ' ').slice(0, 200)}` : '';
    return new OAuthGrantError(`${from} refused the grant (${err.error.slice(0, 64)}${description})`, err.error.slice(0, 64));
  }
  if (err instanceof OidcFetchError) return new OAuthGrantError(`${from}: ${err.message}`);
  return new OAuthGrantError(`${from} could not be reached or answered something other than an OAuth token response`);
}

/** The refresh grant (RFC 6749 §6). */
export async function refreshGrant(config: oidc.Configuration, s: OAuthClientSettings, refreshToken: string): Promise<GrantedTokens> {
  const from = `The token endpoint ${new URL(s.tokenUrl).origin}${new URL(s.tokenUrl).pathname}`;
  try {
    return checked(await oidc.refreshTokenGrant(config, refreshToken), from);
  } catch (err) {
    throw failure(err, from);
  }
}

/** The authorization code grant with PKCE (RFC 6749 §4.1, RFC 7636), from the callback's URL (its `code`, `state`, or `error`). */
export async function codeGrant(config: oidc.Configuration, s: OAuthClientSettings, callbackUrl: URL, expected: { state: string; verifier: string }): Promise<GrantedTokens> {
  const from = `The token endpoint ${new URL(s.tokenUrl).origin}${new URL(s.tokenUrl).pathname}`;
  try {
    return checked(await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: expected.verifier, expectedState: expected.state, idTokenExpected: false }), from);
  } catch (err) {
    throw failure(err, from);
  }
}
