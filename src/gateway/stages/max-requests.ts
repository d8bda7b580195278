/**
 * max_requests (150): a token's lifetime request count, leased in blocks like
 * the quota (src/accounting/quota-ledger.ts), so no store round trip per
 * request. Before quota: a token that is used up never spends the
 * organisation's quota; a request refused later or never forwarded gives its unit back.
 */
import type { QuotaLedger } from '../../accounting/quota-ledger.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class MaxRequestsStage implements CoreStage {
  readonly name = 'max_requests';
  readonly priority = 150;

  constructor(private readonly ledger: QuotaLedger) {}

  /** A request counts its `requestUnits` (an MCP message: its tool calls; none for other methods), all or none. */
  access(ctx: RequestContext): Promise<void> | undefined {
    const token = ctx.auth!.token;
    const units = ctx.requestUnits;
    if (!token.scopes.maxRequests || units === 0) return undefined;
    if (units === 1) return this.ledger.reserveToken(token.id, token.scopes.maxRequests, token.expiresAt);
    return this.reserveMany(token.id, token.scopes.maxRequests, token.expiresAt, units);
  }

  undo(ctx: RequestContext): void {
    const token = ctx.auth!.token;
    if (token.scopes.maxRequests) for (let i = 0; i < ctx.requestUnits; i++) this.ledger.refundToken(token.id);
  }

  private async reserveMany(tokenId: string, max: number, expiresAt: number, units: number): Promise<void> {
    let taken = 0;
    try {
      for (; taken < units; taken++) await this.ledger.reserveToken(tokenId, max, expiresAt);
    } catch (err) {
      for (let i = 0; i < taken; i++) this.ledger.refundToken(tokenId);
      throw err;
    }
  }
}
