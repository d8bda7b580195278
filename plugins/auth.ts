/**
 * auth: the proxy token → its credential. `X-Proxy-Token` is the spec's header
 * and wins when present; otherwise a `ptok_` is taken from where the loaded
 * providers say their own SDKs put a key (their `tokenIn`: Authorization: Bearer,
 * x-api-key, x-goog-api-key, Gemini's `?key=`, …), so official SDKs work with
 * apiKey = ptok_…. Every refusal is the same 401 invalid_token (the abuse
 * stage, at 1000, counts it against the caller's address). Priority 900: the
 * first stage that checks anything.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Errors, type PluginHost, type PluginModule, type ProxyContext, type ResolvedToken, type TokenCarriers } from '../src/gateway/contracts.js';

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
export function presentedToken(headers: IncomingHttpHeaders, query: string, carriers: TokenCarriers, raw?: Pick<ProxyContext, 'repeatedHeader'>): string | undefined {
  if (raw) {
    if (raw.repeatedHeader('x-proxy-token')) return undefined;
    for (const h of carriers.headerNames) if (raw.repeatedHeader(h)) return undefined;
  }
  if (headers['x-proxy-token'] !== undefined) return single(headers['x-proxy-token']) ?? '';
  for (const c of carriers.headers) {
    const v = single(headers[c.header]);
    if (!v) continue;
    const token = c.pattern ? c.pattern.exec(v)?.[1] : v;
    if (token?.startsWith(PREFIX)) return token;
  }
  if (query !== '' && carriers.query.length > 0) {
    const params = new URLSearchParams(query);
    for (const p of carriers.query) {
      const all = params.getAll(p);
      if (all.length > 1) return undefined;
      if (all[0]?.startsWith(PREFIX)) return all[0];
    }
  }
  return undefined;
}

/** The resolved token, or the refusal: shared by the cached (synchronous) and the loading path. */
function accepted(resolved: ResolvedToken | undefined): ResolvedToken {
  if (!resolved) throw Errors.invalidToken();
  return resolved;
}

const auth: PluginModule<ProxyContext> = {
  name: 'auth',
  priority: 900,
  create(host: PluginHost) {
    return {
      // Synchronous when the token is cached (the usual case): no promise per request.
      access(ctx: ProxyContext): void | Promise<void> {
        const presented = presentedToken(ctx.headers, ctx.query, host.providers.tokenIn, ctx);
        if (!presented) throw Errors.invalidToken();
        const resolved = host.tokens.resolve(presented);
        if (resolved instanceof Promise) {
          return resolved.then((r) => {
            ctx.auth = accepted(r);
          });
        }
        ctx.auth = accepted(resolved);
      },
    };
  },
};

export default auth;
