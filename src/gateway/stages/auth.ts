/**
 * auth (900): the proxy token → its credential. `X-Proxy-Token` is the spec's header
 * and wins when present; otherwise a `ptok_` is taken from where the loaded
 * providers say their own SDKs put a key (their `tokenIn`: Authorization: Bearer,
 * x-api-key, x-goog-api-key, Gemini's `?key=`, …), so official SDKs work with
 * apiKey = ptok_…. Every refusal is a 401 invalid_token with `WWW-Authenticate:
 * Bearer realm="keyward"` whose message says where Keyward looked and what it
 * found there, never the value, and one answer for every token it does not accept
 * (unknown, mistyped, expired, revoked); the abuse stage, at 1000, counts it
 * against the caller's address. The first stage that checks anything; a core
 * stage, always on: no configuration removes or moves it.
 */
import { Errors, proxyChallenge } from '../../errors.js';
import type { ProviderRegistry, TokenCarriers } from '../../catalog/registry.js';
import { presented as presentedWhere, refusal, type Presented } from '../../catalog/presented-token.js';
import type { ResolvedToken } from '../../vault/token-service.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

/** Resolves a presented proxy token (cache first), or undefined when it is not valid now: at once when cached. */
export type TokenResolver = (presented: string) => ResolvedToken | undefined | Promise<ResolvedToken | undefined>;

/**
 * The resolved token, or the refusal: shared by the cached (synchronous) and the loading path. A token found only
 * where one provider's SDKs put a key (GitHub's `Authorization: token …`) is taken for that provider's credentials alone.
 */
function accepted(resolved: ResolvedToken | undefined, found: Presented, ctx: RequestContext, carriers: TokenCarriers): ResolvedToken {
  if (!resolved || (found.only && !found.only.includes(resolved.credential.provider)) || !audienceFits(resolved, ctx)) refuse(ctx, carriers, found);
  return resolved;
}

/**
 * On Keyward's own MCP route, a proxy token of that credential (not pooled), or an OAuth access token whose
 * audience is exactly that route; anywhere else, never an OAuth access token (it is for its route alone).
 */
function audienceFits(resolved: ResolvedToken, ctx: RequestContext): boolean {
  const audience = resolved.token.scopes.resource;
  const route = ctx.mcpRoute;
  if (!route) return audience === undefined;
  return resolved.pool === undefined && resolved.token.credentialId === route.credentialId && (audience === undefined || audience === route.resource);
}

/**
 * The 401, saying where Keyward looked and what it found (worked out only now: the accepted path pays nothing for
 * it); on an MCP route, its challenge names the protected-resource metadata (RFC 9728), where an MCP client starts.
 */
function refuse(ctx: RequestContext, carriers: TokenCarriers, found?: Presented): never {
  const route = ctx.mcpRoute;
  throw Errors.invalidToken(refusal(ctx.headers, ctx.query, carriers, ctx, found), route ? proxyChallenge({ resource_metadata: route.metadataUrl }) : undefined);
}

export class AuthStage implements CoreStage {
  readonly name = 'auth';
  readonly priority = 900;
  private readonly carriers: TokenCarriers;

  constructor(private readonly resolve: TokenResolver, providers: Pick<ProviderRegistry, 'tokenCarriers'>) {
    this.carriers = providers.tokenCarriers;
  }

  // Synchronous when the token is cached (the usual case): no promise per request.
  access(ctx: RequestContext): void | Promise<void> {
    const carriers = this.carriers;
    const found = presentedWhere(ctx.headers, ctx.query, carriers, ctx);
    if (!found?.token) return refuse(ctx, carriers, found);
    const resolved = this.resolve(found.token);
    if (resolved instanceof Promise) {
      return resolved.then((r) => {
        ctx.auth = accepted(r, found, ctx, carriers);
      });
    }
    ctx.auth = accepted(resolved, found, ctx, carriers);
  }
}
