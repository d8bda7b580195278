/**
 * Google OAuth access tokens for the `google-oauth` signer: minted from a
 * service-account key by the JWT grant (RFC 7523, signed here with jose: RS256,
 * kid = private_key_id, iss = sub = client_email, aud = the token URI, scope
 * cloud-platform, one hour), or read from the metadata server of the machine
 * Keyward runs on (ambient). A token is cached per identity until shortly
 * before it expires and refreshed once for all the requests waiting on it
 * (single flight), never per request. Every fetch is bounded in time and size;
 * no error carries a token, a key or the endpoint's own words.
 */
import { createHash } from 'node:crypto';

/** jose, loaded when the first service-account token is minted: a deployment without Vertex keys skips its import at start-up. */
let joseLibrary: Promise<typeof import('jose')> | undefined;
const loadJose = () => (joseLibrary ??= import('jose'));

export const GOOGLE_TOKEN_URI = 'https://oauth2.googleapis.com/token';
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const FETCH_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 64 * 1024;
/** An access token goes into a header: printable ASCII without spaces, bounded. */
const TOKEN_SHAPE = /^[\x21-\x7e]{1,4096}$/;
/** Identities whose tokens are kept at once (one per stored key, plus the ambient one). */
const MAX_IDENTITIES = 10_000;

export interface ServiceAccountKey {
  client_email: string;
  private_key_id: string;
  private_key: string;
}

export interface MintedToken {
  token: string;
  expiresInS: number;
}

/** A refusal from minting: its message names what failed, never a value. */
export class TokenMintError extends Error {}

/** Reads a bounded body; a larger one is refused. */
async function boundedText(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw new TokenMintError('the token response is too large');
    }
    parts.push(value);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** `{access_token, expires_in}` from a token response body, checked. */
function parseToken(text: string, from: string): MintedToken {
  let body: { access_token?: unknown; expires_in?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new TokenMintError(`${from} answered something other than JSON`);
  }
  const token = body?.access_token;
  const expires = body?.expires_in;
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) throw new TokenMintError(`${from} answered without a usable access_token`);
  if (typeof expires !== 'number' || !Number.isFinite(expires) || expires < 1 || expires > 86_400) throw new TokenMintError(`${from} answered without a usable expires_in`);
  return { token, expiresInS: expires };
}

async function boundedFetch(url: string, init: RequestInit, from: string): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch {
    throw new TokenMintError(`${from} could not be reached`);
  }
}

/** The JWT grant: a signed assertion exchanged at `tokenUri` for an access token. */
export async function mintFromServiceAccount(sa: ServiceAccountKey, tokenUri: string): Promise<MintedToken> {
  const now = Math.floor(Date.now() / 1000);
  let assertion: string;
  const { SignJWT, importPKCS8 } = await loadJose();
  try {
    assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: sa.private_key_id })
      .setIssuer(sa.client_email)
      .setSubject(sa.client_email)
      .setAudience(tokenUri)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(await importPKCS8(sa.private_key, 'RS256'));
  } catch {
    throw new TokenMintError('the service account\'s private_key is not a usable RSA PKCS#8 key');
  }
  const res = await boundedFetch(tokenUri, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
  }, 'the Google token endpoint');
  const text = await boundedText(res);
  if (res.status !== 200) throw new TokenMintError(`the Google token endpoint refused the grant (HTTP ${res.status})`);
  return parseToken(text, 'the Google token endpoint');
}

/** The metadata server's token for the machine's default service account (`metadataOrigin` from GCE_METADATA_HOST). */
export async function mintFromMetadata(metadataOrigin: string): Promise<MintedToken> {
  const url = new URL('/computeMetadata/v1/instance/service-accounts/default/token', metadataOrigin);
  url.searchParams.set('scopes', SCOPE);
  const res = await boundedFetch(url.href, { headers: { 'metadata-flavor': 'Google' } }, 'the metadata server');
  const text = await boundedText(res);
  // Anything else answering on that address is not Google's metadata server.
  if (res.headers.get('metadata-flavor') !== 'Google') throw new TokenMintError('the metadata server\'s answer lacks Metadata-Flavor: Google');
  if (res.status !== 200) throw new TokenMintError(`the metadata server refused a token (HTTP ${res.status})`);
  return parseToken(text, 'the metadata server');
}

/** One identity's token: cached until shortly before expiry, one refresh at a time whoever asks. */
export class CachedToken {
  private current: { token: string; refreshAt: number } | undefined;
  private inflight: Promise<string> | undefined;
  /** Tokens handed out recently (the current one and the one before), for masking an echo. */
  private recent: string[] = [];
  mints = 0;

  constructor(private readonly mint: () => Promise<MintedToken>, private readonly now: () => number = Date.now) {}

  /** The cached token, or the one being minted for every concurrent caller. */
  get(): string | Promise<string> {
    const cur = this.current;
    if (cur && this.now() < cur.refreshAt) return cur.token;
    this.inflight ??= this.refresh().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** Values to mask in a response: the tokens recently used. */
  masks(): readonly string[] {
    return this.recent;
  }

  private async refresh(): Promise<string> {
    const started = this.now();
    this.mints++;
    const minted = await this.mint();
    // Refresh five minutes early, or half-way through a short-lived token.
    const lifetimeMs = minted.expiresInS * 1000;
    const refreshAt = started + Math.max(lifetimeMs - 300_000, lifetimeMs / 2);
    this.current = { token: minted.token, refreshAt };
    this.recent = [minted.token, ...this.recent.filter((t) => t !== minted.token)].slice(0, 2);
    return minted.token;
  }
}

/** Cached tokens by identity (a hash of the key, or the ambient identity), bounded: the oldest is dropped first. */
export class TokenCaches {
  private readonly byIdentity = new Map<string, CachedToken>();

  constructor(private readonly max = MAX_IDENTITIES) {}

  for(identity: string, mint: () => Promise<MintedToken>): CachedToken {
    const id = createHash('sha256').update(identity).digest('hex');
    let cache = this.byIdentity.get(id);
    if (!cache) {
      if (this.byIdentity.size >= this.max) this.byIdentity.delete(this.byIdentity.keys().next().value!);
      cache = new CachedToken(mint);
      this.byIdentity.set(id, cache);
    }
    return cache;
  }

  /** Tokens minted so far, over every identity (tests count them). */
  get mints(): number {
    let n = 0;
    for (const c of this.byIdentity.values()) n += c.mints;
    return n;
  }
}
