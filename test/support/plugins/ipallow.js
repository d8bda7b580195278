// A middleware added with no code change: an IP allow-list, plain ESM, dropped into
// KEYWARD_PLUGINS_DIR and named in KEYWARD_PLUGINS. Its create validates its own
// configuration (ACME_ALLOWED_IPS, comma-separated) and throws, so a bad config stops
// start-up rather than failing requests.
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$/;

export default {
  apiVersion: 1,
  name: 'ipallow',
  priority: 400,
  create(host) {
    const raw = process.env.ACME_ALLOWED_IPS;
    if (raw === undefined || raw.trim() === '') throw new Error('ACME_ALLOWED_IPS must list the allowed IPv4 addresses, comma-separated');
    const ips = raw.split(',').map((s) => s.trim());
    for (const ip of ips) if (!IPV4.test(ip)) throw new Error(`ACME_ALLOWED_IPS: ${JSON.stringify(ip)} is not an IPv4 address`);
    const allowed = new Set(ips);
    return {
      access(ctx) {
        const ip = ctx.ip.startsWith('::ffff:') ? ctx.ip.slice(7) : ctx.ip;
        if (!allowed.has(ip)) {
          throw new host.GatewayError(403, 'permission', 'ip_not_allowed', 'Requests from this address are not allowed.');
        }
      },
    };
  },
};
