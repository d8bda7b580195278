/**
 * quota: the free tier's proxy requests per organisation per calendar month
 * (KEYWARD_FREE_PROXY_REQUESTS). Priority 100, the last stage, right before the
 * request is forwarded, so whatever refuses does so before it counts; a request
 * never forwarded after all (caller gone, body cut off) gets its unit back.
 * Units are leased in blocks, so this costs no store round trip at steady
 * state. A refusal is audited (`quota.refused`); every response after a
 * reservation carries x-keyward-quota-remaining.
 */
import { Errors, GatewayError, type PluginHost, type PluginModule, type ProxyContext } from '../src/gateway/contracts.js';

const quota: PluginModule<ProxyContext> = {
  name: 'quota',
  priority: 100,
  create(host: PluginHost) {
    /** Audits a quota refusal, then rethrows whatever was thrown. */
    const refused = (ctx: ProxyContext, err: unknown): never => {
      if (err instanceof GatewayError && err.code === 'quota_exceeded') host.audit.refused(ctx, 'quota.refused');
      throw err;
    };
    return {
      // Synchronous while the instance holds leased units (the usual case): no promise per request.
      access(ctx: ProxyContext): void | Promise<void> {
        if (!ctx.auth) throw Errors.invalidToken();
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
        host.quota.refund(ctx.auth!.credential.orgId);
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
