// Records, in the log, what the core had done when this middleware's hooks ran:
// whether auth had resolved the token and whether quota had reserved yet; and
// whether the raw req/res are out of its reach.
export default {
  apiVersion: 1,
  name: 'probe',
  priority: 400,
  create(host) {
    return {
      access(ctx) {
        host.logger.info({ probe: { hook: 'access', auth: ctx.tokenId !== undefined, quota: ctx.quotaRemaining !== undefined, forwarded: ctx.forwarded, raw: 'req' in ctx || 'res' in ctx } }, 'probe');
      },
      log(ctx) {
        host.logger.info({ probe: { hook: 'log', status: ctx.status, forwarded: ctx.forwarded } }, 'probe');
      },
    };
  },
};
