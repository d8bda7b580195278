/**
 * quota (100): the free tier's proxy requests per organisation per calendar month
 * (KEYWARD_FREE_PROXY_REQUESTS). The last stage, right before the request is
 * forwarded, so whatever refuses does so before it counts; a request never
 * forwarded after all (caller gone, body cut off) gets its unit back.
 * Units are leased in blocks (src/accounting/quota-ledger.ts), so this costs no
 * store round trip at steady state. A refusal is audited (`quota.refused`);
 * every response after a reservation carries x-keyward-quota-remaining. A
 * request counts as its `requestUnits`: 1, or an MCP message's forwarded
 * tools/call count (0: it counts none, a batch of three calls counts three).
 * A core stage: on unless the operator turns it off (KEYWARD_QUOTA=off).
 */
import { ApiError } from '../../errors.js';
import type { QuotaLedger } from '../../accounting/quota-ledger.js';
import type { RequestView, ResponseHead } from '../pipeline/contracts.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';

export class QuotaStage implements CoreStage {
  readonly name = 'quota';
  readonly priority = 100;

  /** `auditRefusal`: records a refusal in the audit trail (aggregated per organisation, action, address and minute). */
  constructor(private readonly ledger: Pick<QuotaLedger, 'reserve' | 'refund' | 'releaseAll'>, private readonly auditRefusal: (ctx: RequestView, action: string) => void) {}

  // Synchronous while the instance holds leased units (the usual case): no promise per request.
  access(ctx: RequestContext): void | Promise<void> {
    const orgId = ctx.auth!.credential.orgId;
    if (ctx.requestUnits !== 1) return ctx.requestUnits === 0 ? undefined : this.reserveMany(ctx, orgId, ctx.requestUnits);
    let left: number | Promise<number>;
    try {
      left = this.ledger.reserve(orgId);
    } catch (err) {
      return this.audited(ctx, err);
    }
    if (typeof left === 'number') {
      ctx.quotaRemaining = left;
      return;
    }
    return left.then((n) => {
      ctx.quotaRemaining = n;
    }, (err: unknown) => this.audited(ctx, err));
  }

  undo(ctx: RequestContext): void {
    for (let i = 0; i < ctx.requestUnits; i++) this.ledger.refund(ctx.auth!.credential.orgId);
    ctx.quotaRemaining = undefined;
  }

  responseHead(ctx: RequestContext, head: ResponseHead): void {
    if (ctx.quotaRemaining !== undefined) head.setHeader('x-keyward-quota-remaining', String(ctx.quotaRemaining));
  }

  /** Leased quota goes back at shutdown before the drain: another instance may need it meanwhile. */
  close(): Promise<void> {
    return this.ledger.releaseAll();
  }

  /** Audits a quota refusal, then rethrows whatever was thrown. */
  private audited(ctx: RequestContext, err: unknown): never {
    if (err instanceof ApiError && err.code === 'quota_exceeded') this.auditRefusal(ctx, 'quota.refused');
    throw err;
  }

  /** Several units, one at a time; all or none (those taken go back on a refusal). */
  private async reserveMany(ctx: RequestContext, orgId: string, units: number): Promise<void> {
    let taken = 0;
    try {
      for (; taken < units; taken++) ctx.quotaRemaining = await this.ledger.reserve(orgId);
    } catch (err) {
      for (let i = 0; i < taken; i++) this.ledger.refund(orgId);
      ctx.quotaRemaining = undefined;
      this.audited(ctx, err);
    }
  }
}
