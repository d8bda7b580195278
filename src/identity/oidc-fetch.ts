/**
 * Fetching an OIDC issuer's discovery document and JWKS: the only outbound requests an exchange
 * can cause, so each is bounded. HTTPS only (plain http solely on a loopback address, and only
 * when the operator's test setting KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK allows it); no redirect is
 * followed (a discovery document names its keys' URL itself); at most `maxBytes` of body, counted
 * as it arrives (a larger `content-length` is refused before a byte is read); `timeoutMs` for the
 * whole request, body included. The answer must be a JSON object.
 */

export interface FetchLimits {
  allowHttpLoopback: boolean;
  maxBytes: number;
  timeoutMs: number;
}

export const DEFAULT_FETCH_LIMITS: Omit<FetchLimits, 'allowHttpLoopback'> = { maxBytes: 64 * 1024, timeoutMs: 5_000 };

/** Why a fetch failed, in words that may be logged (a URL of the issuer's, never a token). */
export class OidcFetchError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'OidcFetchError';
  }
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/** The URL if it may be fetched under these limits; else an OidcFetchError. */
export function fetchableUrl(raw: string, allowHttpLoopback: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OidcFetchError('not a URL');
  }
  const plainLoopback = url.protocol === 'http:' && allowHttpLoopback && LOOPBACK.has(url.hostname);
  if ((url.protocol !== 'https:' && !plainLoopback) || url.username || url.password) {
    throw new OidcFetchError(`refused to fetch ${url.origin}${url.pathname}: https only`);
  }
  return url;
}

export async function fetchJsonObject(raw: string, limits: FetchLimits): Promise<Record<string, unknown>> {
  const url = fetchableUrl(raw, limits.allowHttpLoopback);
  const where = `${url.origin}${url.pathname}`;
  const signal = AbortSignal.timeout(limits.timeoutMs);
  let res: Response;
  try {
    res = await fetch(url, { redirect: 'manual', signal, headers: { accept: 'application/json' } });
  } catch (err) {
    throw new OidcFetchError(`${where}: ${signal.aborted ? 'no answer in time' : 'unreachable'}`, { cause: err });
  }
  try {
    if (res.status !== 200) throw new OidcFetchError(`${where}: status ${res.status}`);
    const declared = Number(res.headers.get('content-length') ?? '0');
    if (declared > limits.maxBytes) throw new OidcFetchError(`${where}: larger than ${limits.maxBytes} bytes`);
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > limits.maxBytes) throw new OidcFetchError(`${where}: larger than ${limits.maxBytes} bytes`);
      chunks.push(chunk);
    }
    let value: unknown;
    try {
      value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new OidcFetchError(`${where}: not JSON`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new OidcFetchError(`${where}: not a JSON object`);
    return value as Record<string, unknown>;
  } catch (err) {
    if (err instanceof OidcFetchError) throw err;
    throw new OidcFetchError(`${where}: ${signal.aborted ? 'no answer in time' : 'the body was cut off'}`, { cause: err });
  } finally {
    // A refusal before or while reading must not leave the connection reading (a no-op once the body is read).
    await res.body?.cancel().catch(() => {});
  }
}
