/**
 * quota: the free tier's proxy requests per organisation per calendar month
 * (KEYWARD_FREE_PROXY_REQUESTS). Priority 100, the last stage, right before the
 * request is forwarded, so whatever refuses does so before it counts; a request
 * never forwarded after all (caller gone, body cut off) gets its unit back.
 * Units are leased in blocks, so this costs no store round trip at steady
 * state. A refusal is audited (`quota.refused`); every response after a
 * reservation carries x-keyward-quota-remaining. A request counts as its
 * `requestUnits`: 1, or an MCP message's forwarded tools/call count (0: it
 * counts none, a batch of three calls counts three).
 */
import { Errors, GatewayError, type PluginHost, type PluginModule, type ProxyContext } from '../contracts.js';

const quota: PluginModule<ProxyContext> = {
  name: 'quota',
  priority: 100,
  create(host: PluginHost) {
    /** Audits a quota refusal, then rethrows whatever was thrown. */
    const refused = (ctx: ProxyContext, err: unknown): never => {
      if (err instanceof GatewayError && err.code === 'quota_exceeded') host.audit.refused(ctx, 'quota.refused');
      throw err;
    };
    /** Several units, one at a time; all or none (those taken go back on a refusal). */
    const reserveMany = async (ctx: ProxyContext, orgId: string, units: number): Promise<void> => {
      let taken = 0;
      try {
        for (; taken < units; taken++) ctx.quotaRemaining = await host.quota.reserve(orgId);
      } catch (err) {
        for (let i = 0; i < taken; i++) host.quota.refund(orgId);
        ctx.quotaRemaining = undefined;
        refused(ctx, err);
      }
    };
    return {
      // Synchronous while the instance holds leased units (the usual case): no promise per request.
      access(ctx: ProxyContext): void | Promise<void> {
        if (!ctx.auth) throw Errors.invalidToken();
        if (ctx.requestUnits !== 1) return ctx.requestUnits === 0 ? undefined : reserveMany(ctx, ctx.auth.credential.orgId, ctx.requestUnits);
        let left: number | Promise<number>;
        try {
          left = host.quota.reserve(ctx.auth.credential.orgId);
        } catch (err) {
          return refused(ctx, err);
        }
        if (typeof left === 'number') {
          ctx.quotaRemaining = left;
          return;
        }
        return left.then((n) => {
          ctx.quotaRemaining = n;
        }, (err: unknown) => refused(ctx, err));
      },
      undo(ctx: ProxyContext): void {
        for (let i = 0; i < ctx.requestUnits; i++) host.quota.refund(ctx.auth!.credential.orgId);
        ctx.quotaRemaining = undefined;
      },
      responseHead(ctx, head): void {
        if (ctx.quotaRemaining !== undefined) head.setHeader('x-keyward-quota-remaining', String(ctx.quotaRemaining));
      },
      close: () => host.quota.releaseAll(),
    };
  },
};

export default quota;
