/**
 * The token requests signers make themselves (Google's JWT grant and metadata server, Entra ID's
 * client-credentials grant): bounded in time and size, redirects never followed, and their failures
 * sorted for the caller. A cloud that answered and refused is 502 `upstream_auth_failed` with the
 * cloud's own words (the caller's configuration to fix); one that could not be asked is 502
 * `upstream_unreachable`. Every message is one line, masked of the values given (the JWT or key just
 * presented) and of anything shaped like a JWT, and bounded.
 */
import { ApiError, Errors } from '../../../errors.js';
import { maskString } from '../../wire/masking.js';

const FETCH_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_MESSAGE = 400;
/** A compact JWS (three base64url parts, the first a JSON header): redacted wherever a cloud's words quote one. */
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/** Something minted and how long it lives, counted from when its mint began. */
export interface Minted<T> {
  value: T;
  lifetimeMs: number;
  /** When it was minted (the cache's clock), when not just now: a value read back from where another mint stored it. */
  issuedAt?: number;
}

/** An access token goes into a header: printable ASCII without spaces, bounded. */
export const TOKEN_SHAPE = /^[\x21-\x7e]{1,4096}$/;

/** A failed mint: `refused` when the endpoint answered no. Its message names what failed, masked. */
export class TokenMintError extends Error {
  constructor(message: string, readonly refused = false) {
    super(message);
    this.name = 'TokenMintError';
  }
}

/** A cloud's words, fit for a caller: one line, no JWT, none of `secrets`, bounded. */
export function cloudWords(words: string, secrets: readonly string[] = []): string {
  const line = maskString(String(words).replace(/\s+/g, ' ').trim(), secrets).replace(JWT_SHAPE, '[jwt]');
  return line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE)}…` : line;
}

/**
 * The cloud answered with something that expires too soon to send (within twice the send margin): refused like a
 * cloud's no (502 upstream_auth_failed), since retrying cannot help while the identity grants such short lives.
 */
export class ShortLivedError extends TokenMintError {
  constructor(what: string, lifetimeMs: number, neededMs: number) {
    super(`${what.charAt(0).toUpperCase()}${what.slice(1)} was minted with ${Math.max(0, Math.round(lifetimeMs / 1000))} s to live, too short to send `
      + `(more than ${neededMs / 1000} s is needed): the minted token is unusable. Check the lifetime the credential's identity grants its tokens.`, true);
    this.name = 'ShortLivedError';
  }
}

/** The caller's answer for a failed mint (an ApiError passes as it is). */
export function mintFailure(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof TokenMintError) return err.refused ? Errors.upstreamAuthFailed(err.message) : Errors.upstreamUnreachable(err.message);
  return Errors.upstreamUnreachable();
}

/** Reads a bounded body; a larger one is refused. */
export async function boundedText(res: Response, from: string): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const parts: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch {
      throw new TokenMintError(`${from} broke off its answer`);
    }
    if (chunk.done) break;
    size += chunk.value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => {});
      throw new TokenMintError(`${from} answered more than ${MAX_RESPONSE_BYTES} bytes`);
    }
    parts.push(chunk.value);
  }
  return Buffer.concat(parts).toString('utf8');
}

export async function boundedFetch(url: string, init: RequestInit, from: string): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  } catch {
    throw new TokenMintError(`${from} could not be reached`);
  }
}

/** An OAuth token endpoint's refusal (RFC 6749 §5.2 `error`, `error_description`), as its words. */
export function oauthRefusal(text: string, status: number, from: string, secrets: readonly string[]): TokenMintError {
  let words = `HTTP ${status}`;
  try {
    const body = JSON.parse(text) as { error?: unknown; error_description?: unknown };
    if (typeof body.error === 'string') words += ` ${body.error}`;
    if (typeof body.error_description === 'string') words += `: ${body.error_description}`;
  } catch { /* not JSON: the status alone */ }
  return new TokenMintError(`${from} refused the grant: ${cloudWords(words, secrets)}`, true);
}

/** `{access_token, expires_in}` from an OAuth token response body, checked. */
export function parseToken(text: string, from: string): Minted<string> {
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
  return { value: token, lifetimeMs: expires * 1000 };
}
