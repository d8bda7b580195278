// Stamps every response head with the status it goes out with (`x-stamp`), proxied or the gateway's own, and
// logs each request's end once (`stamp` lines): a test can see responseHead ran on every answer and the log
// hook once per request, whatever way the request ended.
export default {
  apiVersion: 1,
  name: 'stamp',
  priority: 320,
  create(host) {
    return {
      responseHead(_ctx, head) {
        head.setHeader('x-stamp', String(head.status));
      },
      log(ctx) {
        host.logger.info({ stamp: { request_id: ctx.requestId, status: ctx.status, forwarded: ctx.forwarded, error: ctx.error?.code } }, 'stamp');
      },
    };
  },
};
