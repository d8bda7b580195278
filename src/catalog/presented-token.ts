/**
 * Where a caller presents a proxy token: `X-Proxy-Token` (the spec's header,
 * which wins), else where the loaded providers say their own SDKs put a key
 * (their `tokenIn`: Authorization: Bearer, x-api-key, x-goog-api-key, a
 * browser's WebSocket subprotocol, Gemini's `?key=`, …). The auth stage
 * resolves what this finds; a realtime session re-resolves it while it is open.
 * A refusal says where Keyward looked and what it found there (refusal()),
 * never the value itself.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { headerLabel, type TokenCarriers } from './registry.js';

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

/** A token found: where (a refusal names the place), and, when only a provider's own pattern found it, the providers it is taken for (HeaderCarrier.only). */
export interface Presented {
  token: string;
  only?: readonly string[];
  where: string;
}

/** The token and where it was found, or undefined (nothing to resolve: refusal() says why). */
export function presented(headers: IncomingHttpHeaders, query: string, carriers: TokenCarriers, raw?: { repeatedHeader(name: string): boolean }): Presented | undefined {
  if (raw) {
    if (raw.repeatedHeader('x-proxy-token')) return undefined;
    for (const h of carriers.headerNames) if (raw.repeatedHeader(h)) return undefined;
  }
  if (headers['x-proxy-token'] !== undefined) return { token: single(headers['x-proxy-token']) ?? '', where: 'X-Proxy-Token' };
  for (const c of carriers.headers) {
    const v = single(headers[c.header]);
    if (!v) continue;
    const token = c.pattern ? c.pattern.exec(v)?.[1] : v;
    if (token?.startsWith(PREFIX)) return c.only ? { token, only: c.only, where: c.label } : { token, where: c.label };
  }
  if (query !== '' && carriers.query.length > 0) {
    const params = new URLSearchParams(query);
    for (const p of carriers.query) {
      const all = params.getAll(p);
      if (all.length > 1) return undefined;
      if (all[0]?.startsWith(PREFIX)) return { token: all[0], where: `?${p}=` };
    }
  }
  return undefined;
}

/**
 * Why no token was taken, in the caller's terms: the places looked in and what was there. `found`: the token that
 * was found and not accepted (unknown, mistyped, expired, revoked: one answer for all, so a refusal tells nothing
 * of a token's state). Never a value: only header and parameter names.
 */
export function refusal(headers: IncomingHttpHeaders, query: string, carriers: TokenCarriers, raw?: { repeatedHeader(name: string): boolean }, found?: Presented): string {
  const looked = `Keyward looks for a ptok_ token in ${carriers.places}.`;
  if (found && found.token.startsWith(PREFIX)) return `The ptok_ token in ${found.where} is not accepted: it is unknown, mistyped, expired or revoked, or its credential was deleted.`;
  if (found?.where === 'X-Proxy-Token') {
    return `X-Proxy-Token ${found.token === '' ? 'was empty' : 'carried a value that is not a ptok_ token'} (it wins over every other place). ${looked}`;
  }
  const repeated = raw && ['x-proxy-token', ...carriers.headerNames].find((h) => raw.repeatedHeader(h));
  if (repeated) return `${headerLabel(repeated)} was sent more than once: send one proxy token, once.`;
  const params = query === '' ? undefined : new URLSearchParams(query);
  const doubled = params && carriers.query.find((p) => params.getAll(p).length > 1);
  if (doubled) return `The query parameter ${doubled} was sent more than once: send one proxy token, once.`;
  // What was there instead: each header that carried something, by the place its value matched (`Authorization: Bearer`) or its name.
  const seen: string[] = [];
  for (const header of carriers.headerNames) {
    const v = single(headers[header]);
    if (!v) continue;
    const matched = carriers.headers.find((c) => c.header === header && c.pattern?.test(v) === true);
    seen.push(matched ? matched.label : headerLabel(header));
  }
  for (const p of carriers.query) if (params?.has(p)) seen.push(`?${p}=`);
  if (seen.length === 0) return `No proxy token was sent. ${looked}`;
  const places = [...new Set(seen)];
  return `${places.join(', ')} carried ${places.length === 1 ? 'a value that is' : 'values that are'} not a ptok_ token (a provider key or an organisation token is never accepted on the proxy). ${looked}`;
}

