/**
 * max_requests (150): a token's lifetime request count, leased in blocks like
 * the quota (src/accounting/quota-ledger.ts), so no store round trip per
 * request. Before quota: a token that is used up never spends the
 * organisation's quota; a request refused later or never forwarded gives its unit back.
 */
import type { QuotaLedger } from '../../accounting/quota-ledger.js';
import type { RequestContext } from '../context.js';
import type { CoreStage } from '../pipeline.js';

export class MaxRequestsStage implements CoreStage {
  readonly name = 'max_requests';
  readonly priority = 150;

  constructor(private readonly ledger: QuotaLedger) {}

  access(ctx: RequestContext): Promise<void> | undefined {
    const token = ctx.auth!.token;
    return token.scopes.maxRequests ? this.ledger.reserveToken(token.id, token.scopes.maxRequests, token.expiresAt) : undefined;
  }

  undo(ctx: RequestContext): void {
    const token = ctx.auth!.token;
    if (token.scopes.maxRequests) this.ledger.refundToken(token.id);
  }
}
