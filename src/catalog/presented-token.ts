/**
 * Where a caller presents a proxy token: `X-Proxy-Token` (the spec's header,
 * which wins), else where the loaded providers say their own SDKs put a key
 * (their `tokenIn`: Authorization: Bearer, x-api-key, x-goog-api-key, a
 * browser's WebSocket subprotocol, Gemini's `?key=`, …). The auth stage
 * resolves what this finds; a realtime session re-resolves it while it is open.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TokenCarriers } from './registry.js';

const PREFIX = 'ptok_';

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? undefined : v;
}

/**
 * The token the caller presents, or undefined (refused). Node keeps only the first of repeated
 * Authorization headers and joins other repeats with ", ", so repeats are judged on the raw
 * lines (`raw`: the context's repeatedHeader): two copies of a credential header, or of a key query
 * parameter, are ambiguous, and neither is taken.
 */
export function presentedToken(headers: IncomingHttpHeaders, query: string, carriers: TokenCarriers, raw?: { repeatedHeader(name: string): boolean }): string | undefined {
  return presented(headers, query, carriers, raw)?.token;
}

/** The token and, when only a provider's own pattern found it, the providers it is taken for (HeaderCarrier.only). */
export function presented(headers: IncomingHttpHeaders, query: string, carriers: TokenCarriers, raw?: { repeatedHeader(name: string): boolean }): { token: string; only?: readonly string[] } | undefined {
  if (raw) {
    if (raw.repeatedHeader('x-proxy-token')) return undefined;
    for (const h of carriers.headerNames) if (raw.repeatedHeader(h)) return undefined;
  }
  if (headers['x-proxy-token'] !== undefined) return { token: single(headers['x-proxy-token']) ?? '' };
  for (const c of carriers.headers) {
    const v = single(headers[c.header]);
    if (!v) continue;
    const token = c.pattern ? c.pattern.exec(v)?.[1] : v;
    if (token?.startsWith(PREFIX)) return c.only ? { token, only: c.only } : { token };
  }
  if (query !== '' && carriers.query.length > 0) {
    const params = new URLSearchParams(query);
    for (const p of carriers.query) {
      const all = params.getAll(p);
      if (all.length > 1) return undefined;
      if (all[0]?.startsWith(PREFIX)) return { token: all[0] };
    }
  }
  return undefined;
}

