/**
 * rate (250): the token's `rate_limit` per minute (src/accounting/rate-limiter.ts).
 * After the operator plugins, so only requests they let through spend it; a
 * request refused later (max_requests, quota) or never forwarded gets its unit back.
 */
import type { RateLimiter } from '../../accounting/rate-limiter.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class RateStage implements CoreStage {
  readonly name = 'rate';
  readonly priority = 250;

  constructor(private readonly limiter: RateLimiter) {}

  access(ctx: RequestContext): void {
    const token = ctx.auth!.token;
    if (token.scopes.rateLimit) this.limiter.take(`tok:${token.id}`, token.scopes.rateLimit);
  }

  undo(ctx: RequestContext): void {
    const token = ctx.auth!.token;
    if (token.scopes.rateLimit) this.limiter.refund(`tok:${token.id}`, token.scopes.rateLimit);
  }
}
