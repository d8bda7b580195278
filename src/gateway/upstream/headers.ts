/**
 * What crosses the gateway in headers. Upstream gets exactly one credential:
 * every header or query parameter that could carry the caller's (or anyone's)
 * credential is removed (the fixed credential headers and every key carrier any
 * loaded provider names), with hop-by-hop headers (and those named in
 * `Connection`) and the caller's Forwarded / X-Forwarded-*; then the provider's
 * signer sets the stored credential (signers/). Headers that pick which account,
 * organisation or project a key acts for are never the caller's: only the
 * credential's own plain fields set them.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Provider } from '../../catalog/registry.js';
import { CREDENTIAL_HEADERS, HOP_BY_HOP } from '../../catalog/header-names.js';

export { CREDENTIAL_HEADERS, HOP_BY_HOP };

/**
 * Account selection: with these a caller could act for another organisation or project the
 * stored key can reach. Stripped whatever the provider; a credential's plain fields set them.
 */
export const ACCOUNT_SELECTION_HEADERS = new Set(['openai-organization', 'openai-project', 'x-goog-user-project']);

const CLIENT_IDENTITY = new Set(['forwarded', 'via', 'x-real-ip', 'true-client-ip', 'x-client-ip', 'cf-connecting-ip']);

/**
 * Method overrides: some APIs (Google's among them) honour these, which would let an allowed
 * POST act as a method the allow-list refuses. The method upstream sees is the one matched.
 */
const METHOD_OVERRIDE = new Set(['x-http-method-override', 'x-http-method', 'x-method-override']);

const NONE_NAMED: ReadonlySet<string> = new Set();

function namedInConnection(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const connection = headers.connection;
  const proxyConnection = headers['proxy-connection'];
  // Most requests name nothing, or only keep-alive: no Set made for them.
  if ((connection === undefined || connection === 'keep-alive') && proxyConnection === undefined) return NONE_NAMED;
  const named = new Set<string>();
  for (const v of [connection, proxyConnection]) {
    if (typeof v === 'string') for (const token of v.split(',')) named.add(token.trim().toLowerCase());
  }
  return named;
}

/** What every request loses, whatever its provider: derived once from all loaded providers (ProviderRegistry). */
export interface StrippedHeaders {
  /** Every header that can carry a key. */
  readonly keyHeaders: ReadonlySet<string>;
  /** Every header a credential's plain field sets. */
  readonly fieldHeaders: ReadonlySet<string>;
}

/**
 * The caller's headers as they may go upstream, the provider's defaults and the credential's plain-field
 * headers (`plain`: its plain fields), with `accept-encoding: identity`; no credential yet (the signer's part).
 */
export function upstreamHeaders(incoming: IncomingHttpHeaders, provider: Provider, stripped: StrippedHeaders, plain: Readonly<Record<string, string>>): Record<string, string | string[]> {
  const named = namedInConnection(incoming);
  const out: Record<string, string | string[]> = {};
  for (const name of Object.keys(incoming)) {
    const value = incoming[name];
    // HTTP/2 pseudo-headers (`:authority`, `:path`…) describe the caller's leg only.
    if (value === undefined || name.charCodeAt(0) === 58) continue;
    if (stripped.keyHeaders.has(name) || HOP_BY_HOP.has(name) || CLIENT_IDENTITY.has(name) || METHOD_OVERRIDE.has(name) || named.has(name)) continue;
    if (name.startsWith('x-forwarded-') || name.startsWith('x-keyward-')) continue;
    if (ACCOUNT_SELECTION_HEADERS.has(name) || stripped.fieldHeaders.has(name)) continue;
    out[name] = value;
  }
  for (const [name, value] of Object.entries(provider.headers)) {
    if (out[name] === undefined) out[name] = value;
  }
  for (const f of provider.fields) {
    if (f.header && Object.hasOwn(plain, f.name)) out[f.header] = plain[f.name]!;
  }
  // Identity encoding, so the key-masking scan sees the bytes as they are.
  out['accept-encoding'] = 'identity';
  return out;
}

/** The query string with every key-carrying parameter the providers declare removed. */
export function stripKeyParams(query: string, params: readonly string[]): string {
  if (query === '' || params.length === 0) return query;
  // Fast path: nothing that could name a key parameter, even percent-encoded.
  if (!query.includes('%') && !params.some((p) => query.includes(p))) return query;
  return query
    .split('&')
    .filter((pair) => {
      const name = pair.split('=', 1)[0]!;
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch { /* keep raw */ }
      return !params.includes(decoded);
    })
    .join('&');
}

/*
 * Reading one header from Node's raw lines (names as sent, then values): reading `headers` or
 * `headersDistinct` instead makes Node build the whole object. `name` is in lower case.
 */
const isNamed = (raw: string, name: string): boolean => raw.length === name.length && raw.toLowerCase() === name;

/** The header's value, repeats joined with ", " as Node's `headers` joins them; undefined when absent. */
export function rawHeader(rawHeaders: readonly string[], name: string): string | undefined {
  let value: string | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (isNamed(rawHeaders[i]!, name)) value = value === undefined ? rawHeaders[i + 1]! : `${value}, ${rawHeaders[i + 1]!}`;
  }
  return value;
}

/** How many times the header was sent. */
export function rawHeaderCount(rawHeaders: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (isNamed(rawHeaders[i]!, name)) n++;
  return n;
}

const RESPONSE_HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'trailer', 'te']);

/**
 * Response headers as the provider sent them (raw names, duplicates kept), minus hop-by-hop.
 * `mask` applies to names as well as values: an echoing upstream may put the key in either
 * (`*` is a valid header-name character, so a masked name is still a valid header).
 */
export function downstreamHeaders(rawHeaders: string[], mask: (v: string) => string, decoded = false): string[] {
  const out: string[] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const lower = name.toLowerCase();
    if (RESPONSE_HOP_BY_HOP.has(lower) || lower.startsWith('x-keyward-')) continue;
    // A body the gateway decompressed has neither that encoding nor that length any more.
    if (decoded && (lower === 'content-encoding' || lower === 'content-length')) continue;
    out.push(mask(name), mask(rawHeaders[i + 1]!));
  }
  return out;
}
