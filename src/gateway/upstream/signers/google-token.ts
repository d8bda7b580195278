/**
 * Google OAuth access tokens for the `google-oauth` signer: minted from a
 * service-account key by the JWT grant (RFC 7523, signed here with jose: RS256,
 * kid = private_key_id, iss = sub = client_email, aud = the token URI, scope
 * cloud-platform, one hour), or read from the metadata server of the machine
 * Keyward runs on (ambient). Cached per identity by minted-cache.ts (single
 * flight, refreshed in the background before expiry). Every fetch is bounded in
 * time and size (token-fetch.ts); a refused grant (a rejected or revoked key)
 * says Google's words, masked, and no error carries a token or a key.
 */
import type { Minted } from './minted-cache.js';
import { boundedFetch, boundedText, oauthRefusal, parseToken, TokenMintError } from './token-fetch.js';

/** jose, loaded when the first service-account token is minted: a deployment without Vertex keys skips its import at start-up. */
let joseLibrary: Promise<typeof import('jose')> | undefined;
const loadJose = () => (joseLibrary ??= import('jose'));

export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

export interface ServiceAccountKey {
  client_email: string;
  private_key_id: string;
  private_key: string;
}

/** The JWT grant: a signed assertion exchanged at `tokenUri` for an access token, dated on `clock` (the injected one). */
export async function mintFromServiceAccount(sa: ServiceAccountKey, tokenUri: string, clock: () => number = Date.now): Promise<Minted<string>> {
  const now = Math.floor(clock() / 1000);
  let assertion: string;
  const { SignJWT, importPKCS8 } = await loadJose();
  try {
    assertion = await new SignJWT({ scope: CLOUD_PLATFORM_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: sa.private_key_id })
      .setIssuer(sa.client_email)
      .setSubject(sa.client_email)
      .setAudience(tokenUri)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(await importPKCS8(sa.private_key, 'RS256'));
  } catch {
    throw new TokenMintError('the service account\'s private_key is not a usable RSA PKCS#8 key', true);
  }
  const res = await boundedFetch(tokenUri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  }, 'the Google token endpoint');
  const text = await boundedText(res, 'the Google token endpoint');
  // A rejected or revoked key: Google's words (invalid_grant: …), never the assertion.
  if (res.status !== 200) throw oauthRefusal(text, res.status, 'the Google token endpoint', [assertion, sa.private_key]);
  return parseToken(text, 'the Google token endpoint');
}

/** The metadata server's token for the machine's default service account (`metadataOrigin` from GCE_METADATA_HOST). */
export async function mintFromMetadata(metadataOrigin: string): Promise<Minted<string>> {
  const url = new URL('/computeMetadata/v1/instance/service-accounts/default/token', metadataOrigin);
  url.searchParams.set('scopes', CLOUD_PLATFORM_SCOPE);
  const res = await boundedFetch(url.href, { headers: { 'metadata-flavor': 'Google' } }, 'the metadata server');
  const text = await boundedText(res, 'the metadata server');
  // Anything else answering on that address is not Google's metadata server.
  if (res.headers.get('metadata-flavor') !== 'Google') throw new TokenMintError('the metadata server\'s answer lacks Metadata-Flavor: Google');
  if (res.status !== 200) throw new TokenMintError(`the metadata server refused a token (HTTP ${res.status})`, true);
  return parseToken(text, 'the metadata server');
}
