/**
 * auth: the proxy token → its credential. `X-Proxy-Token` is the spec's header
 * and wins when present; otherwise a `ptok_` is taken from where the loaded
 * providers say their own SDKs put a key (their `tokenIn`: Authorization: Bearer,
 * x-api-key, x-goog-api-key, Gemini's `?key=`, …), so official SDKs work with
 * apiKey = ptok_…. Every refusal is the same 401 invalid_token (the abuse
 * stage, at 1000, counts it against the caller's address). Priority 900: the
 * first stage that checks anything.
 */
import { Errors, type PluginHost, type PluginModule, type ProxyContext, type ResolvedToken } from '../src/gateway/contracts.js';
import { presented as presentedWhere, presentedToken } from '../src/catalog/presented-token.js';

export { presentedToken };

/**
 * The resolved token, or the refusal: shared by the cached (synchronous) and the loading path. A token found only
 * where one provider's SDKs put a key (GitHub's `Authorization: token …`) is taken for that provider's credentials alone.
 */
function accepted(resolved: ResolvedToken | undefined, only: readonly string[] | undefined): ResolvedToken {
  if (!resolved || (only && !only.includes(resolved.credential.provider))) throw Errors.invalidToken();
  return resolved;
}

const auth: PluginModule<ProxyContext> = {
  name: 'auth',
  priority: 900,
  create(host: PluginHost) {
    return {
      // Synchronous when the token is cached (the usual case): no promise per request.
      access(ctx: ProxyContext): void | Promise<void> {
        const found = presentedWhere(ctx.headers, ctx.query, host.providers.tokenIn, ctx);
        if (!found?.token) throw Errors.invalidToken();
        const resolved = host.tokens.resolve(found.token);
        if (resolved instanceof Promise) {
          return resolved.then((r) => {
            ctx.auth = accepted(r, found.only);
          });
        }
        ctx.auth = accepted(resolved, found.only);
      },
    };
  },
};

export default auth;
