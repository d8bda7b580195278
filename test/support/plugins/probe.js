// Records, in the log, what the core had done when this middleware's hooks ran:
// whether auth had resolved the token and whether quota had reserved yet.
export default function probe(host) {
  return {
    name: 'probe',
    onRequest(ctx) {
      host.logger.info({ probe: { hook: 'onRequest', auth: ctx.auth !== undefined, quota: ctx.quotaRemaining !== undefined, forwarded: ctx.forwarded } }, 'probe');
    },
    onDone(ctx) {
      host.logger.info({ probe: { hook: 'onDone', status: ctx.status, forwarded: ctx.forwarded } }, 'probe');
    },
  };
}
