/**
 * route (800): the credential's provider, and the request's method and
 * normalised path on that provider's allow-list (403 path_not_allowed, nothing
 * sent). A path that did not normalise (it could leave the provider's origin)
 * reaches here as ''. Sets ctx.provider, ctx.route, ctx.params, and ctx.model
 * when the route's path names one. A path parameter a plain field pins
 * (`pinsPath`) must equal the credential's value.
 */
import { Errors } from '../../errors.js';
import { matchRoute } from '../../catalog/path.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class RouteStage implements CoreStage {
  readonly name = 'route';
  readonly priority = 800;

  constructor(private readonly providers: ProviderRegistry) {}

  access(ctx: RequestContext): void {
    const auth = ctx.auth;
    if (!auth) throw Errors.invalidToken();
    const provider = this.providers.get(auth.credential.provider);
    if (!provider) throw Errors.pathNotAllowed(`The provider ${JSON.stringify(auth.credential.provider)} is not loaded on this gateway.`);
    ctx.provider = provider;
    // Keyward's own MCP route goes to the credential's MCP endpoint (the auth stage held the token to the credential).
    if (ctx.mcpRoute) ctx.path = provider.mcpEndpoint ?? '';
    if (ctx.path === '') throw Errors.pathNotAllowed(ctx.mcpRoute ? 'This credential is not an MCP server\'s.' : undefined);
    // An upgrade matches only websocket routes, a plain request only plain ones (src/gateway/realtime/).
    const match = matchRoute(provider.routes, ctx.method, ctx.path, ctx.upgrade ? ctx.query : undefined);
    if (!match) throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} is not on the ${provider.id} allow-list.`);
    // A plain field that pins a path parameter (Vertex's project and location): the path names the credential's own, or nothing is sent.
    for (const f of provider.fields) {
      if (!f.pinsPath || match.params[f.name] === undefined) continue;
      if (match.params[f.name] !== auth.credential.fields?.[f.name]) {
        throw Errors.pathNotAllowed(`The path's {${f.name}} must be this credential's ${f.name}.`);
      }
    }
    ctx.route = match.route;
    ctx.params = match.params;
    // A resource id (a Bedrock ARN) arrives with its `/` encoded; scopes and prices see the id itself.
    if (match.params.model !== undefined) ctx.model = match.params.model.replaceAll('%2F', '/');
  }
}
