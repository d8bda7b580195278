/**
 * auth: the proxy token → its credential. `X-Proxy-Token` is the spec's header
 * and wins when present; otherwise a `ptok_` is taken from where the providers'
 * own SDKs put a key (Authorization: Bearer, x-api-key, x-goog-api-key, or a
 * declared query parameter such as Gemini's `?key=`), so official SDKs work
 * with apiKey = ptok_…. Every refusal is the same 401 invalid_token (the abuse
 * stage, at 1000, counts it against the caller's address). Priority 900: the
 * first stage that checks anything.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Errors, type PluginHost, type PluginModule, type ProxyContext } from '../src/gateway/contracts.js';

const PREFIX = 'ptok_';

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? undefined : v;
}

/** Headers that can carry a proxy token: a request that repeats one is ambiguous and refused. */
const TOKEN_HEADERS = ['x-proxy-token', 'authorization', 'x-api-key', 'x-goog-api-key'] as const;

/**
 * The token the caller presents, or undefined (refused). Node keeps only the first of repeated
 * Authorization headers and joins other repeats with ", ", so repeats are judged on `distinct`
 * (req.headersDistinct): two copies of a credential header, or of a key query parameter, are
 * ambiguous, and neither is taken.
 */
export function presentedToken(headers: IncomingHttpHeaders, query: string, queryParams: readonly string[], distinct?: NodeJS.Dict<string[]>): string | undefined {
  if (distinct && TOKEN_HEADERS.some((h) => (distinct[h]?.length ?? 0) > 1)) return undefined;
  if (headers['x-proxy-token'] !== undefined) return single(headers['x-proxy-token']) ?? '';
  const authz = single(headers.authorization);
  if (authz) {
    const m = /^Bearer (ptok_\S+)$/i.exec(authz);
    if (m) return m[1];
  }
  for (const h of ['x-api-key', 'x-goog-api-key'] as const) {
    const v = single(headers[h]);
    if (v?.startsWith(PREFIX)) return v;
  }
  if (query !== '' && queryParams.length > 0) {
    const params = new URLSearchParams(query);
    for (const p of queryParams) {
      const all = params.getAll(p);
      if (all.length > 1) return undefined;
      if (all[0]?.startsWith(PREFIX)) return all[0];
    }
  }
  return undefined;
}

const auth: PluginModule<ProxyContext> = {
  name: 'auth',
  priority: 900,
  create(host: PluginHost) {
    return {
      async access(ctx: ProxyContext): Promise<void> {
        const presented = presentedToken(ctx.headers, ctx.query, host.providers.keyQueryParams, ctx.headersDistinct);
        if (!presented) throw Errors.invalidToken();
        const resolved = await host.tokens.resolve(presented);
        if (!resolved) throw Errors.invalidToken();
        ctx.auth = resolved;
      },
    };
  },
};

export default auth;
