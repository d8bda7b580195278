/**
 * auth: the proxy token → its credential. `X-Proxy-Token` is the spec's header
 * and wins when present; otherwise a `ptok_` is taken from where the loaded
 * providers say their own SDKs put a key (their `tokenIn`: Authorization: Bearer,
 * x-api-key, x-goog-api-key, Gemini's `?key=`, …), so official SDKs work with
 * apiKey = ptok_…. Every refusal is a 401 invalid_token with `WWW-Authenticate:
 * Bearer realm="keyward"` whose message says where Keyward looked and what it
 * found there, never the value, and one answer for every token it does not accept
 * (unknown, mistyped, expired, revoked); the abuse stage, at 1000, counts it
 * against the caller's address. Priority 900: the first stage that checks anything.
 */
import { Errors, type PluginHost, type PluginModule, type ProxyContext, type ResolvedToken } from '../contracts.js';
import type { TokenCarriers } from '../../catalog/registry.js';
import { presented as presentedWhere, presentedToken, refusal, type Presented } from '../../catalog/presented-token.js';

export { presentedToken };

/**
 * The resolved token, or the refusal: shared by the cached (synchronous) and the loading path. A token found only
 * where one provider's SDKs put a key (GitHub's `Authorization: token …`) is taken for that provider's credentials alone.
 */
function accepted(resolved: ResolvedToken | undefined, found: Presented, ctx: ProxyContext, carriers: TokenCarriers): ResolvedToken {
  if (!resolved || (found.only && !found.only.includes(resolved.credential.provider))) refuse(ctx, carriers, found);
  return resolved;
}

/** The 401, saying where Keyward looked and what it found (worked out only now: the accepted path pays nothing for it). */
function refuse(ctx: ProxyContext, carriers: TokenCarriers, found?: Presented): never {
  throw Errors.invalidToken(refusal(ctx.headers, ctx.query, carriers, ctx, found));
}

const auth: PluginModule<ProxyContext> = {
  name: 'auth',
  priority: 900,
  create(host: PluginHost) {
    return {
      // Synchronous when the token is cached (the usual case): no promise per request.
      access(ctx: ProxyContext): void | Promise<void> {
        const carriers = host.providers.tokenIn;
        const found = presentedWhere(ctx.headers, ctx.query, carriers, ctx);
        if (!found?.token) return refuse(ctx, carriers, found);
        const resolved = host.tokens.resolve(found.token);
        if (resolved instanceof Promise) {
          return resolved.then((r) => {
            ctx.auth = accepted(r, found, ctx, carriers);
          });
        }
        ctx.auth = accepted(resolved, found, ctx, carriers);
      },
    };
  },
};

export default auth;
