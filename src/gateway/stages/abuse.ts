/**
 * abuse (1000): the cool-down on failed authentication (src/controls/abuse-guard.ts).
 * It runs outermost but checks nothing up front: authentication runs first, so a
 * valid token is never refused by its address's cool-down. When a later stage
 * refuses with 401 and no token resolved, the failure is audited and counted,
 * and from a cooling address it becomes 429 too_many_failures.
 */
import { ApiError } from '../../errors.js';
import type { AbuseGuard } from '../../controls/abuse-guard.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class AbuseStage implements CoreStage {
  readonly name = 'abuse';
  readonly priority = 1000;

  constructor(private readonly guard: AbuseGuard) {}

  refused(ctx: RequestContext, err: unknown): ApiError | undefined {
    if (ctx.auth !== undefined || !(err instanceof ApiError) || err.status !== 401) return undefined;
    return this.guard.authFailed(ctx.ip, ctx.requestId, `/v1/proxy/${ctx.path}`, err);
  }
}
