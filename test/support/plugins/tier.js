// A middleware that reads a body field (`tier`) with no `when`: the body stage must read it whenever a body
// follows. A body naming `"tier": "forbidden"` is refused (403 tier_not_allowed); a body with no `tier`, or
// one the scan could not read, never reaches its access unread (the gate refuses it first).
export default {
  apiVersion: 1,
  name: 'tier',
  priority: 450,
  body: { fields: ['tier'] },
  create(host) {
    return {
      access(ctx) {
        if (ctx.bodyFollows && ctx.bodyFields === undefined) throw new host.GatewayError(500, 'internal', 'tier_unread', 'tier was not read');
        const tier = ctx.bodyFields?.get('tier');
        if (tier?.kind === 'string' && tier.value === 'forbidden') throw new host.GatewayError(403, 'permission', 'tier_not_allowed', 'This tier is not allowed.');
      },
    };
  },
};
