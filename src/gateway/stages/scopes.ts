/**
 * scopes (700): the token's `paths` scope, and account routes (what the whole
 * provider account shares) only for a token whose `paths` names them exactly.
 * The `models` scope needs the body, so it is its own stage after the body
 * stage (models.ts).
 */
import { Errors } from '../../errors.js';
import { accountRouteAllowed, pathAllowed } from '../../catalog/scopes.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class ScopesStage implements CoreStage {
  readonly name = 'scopes';
  readonly priority = 700;

  access(ctx: RequestContext): void {
    const paths = ctx.auth!.token.scopes.paths;
    const route = ctx.route!;
    if (paths && !pathAllowed(paths, ctx.path, route.pattern)) {
      throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} is outside this token's paths.`);
    }
    if (route.account && !accountRouteAllowed(paths, ctx.path, route.pattern)) {
      throw Errors.pathNotAllowed(`${ctx.method} /${ctx.path} reaches what the whole ${ctx.provider!.id} account shares: the token's \`paths\` must name ${route.pattern} exactly.`);
    }
  }
}
