// A middleware whose need for the body appears only after the body stage has run (as a cap learned while a
// request waited would): its `when` holds once its own access has run, for requests with `x-late-cap: 1`. The
// gate's last check must then refuse the request (503 unavailable), since nothing read the body for it.
export default {
  apiVersion: 1,
  name: 'latecap',
  priority: 350,
  body: { fields: ['cap'], when: (ctx) => ctx.state.latecap === true },
  create() {
    return {
      access(ctx) {
        if (ctx.headers['x-late-cap'] === '1') ctx.state.latecap = true;
      },
    };
  },
};
