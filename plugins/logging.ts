/**
 * logging: one JSON line per proxied request after its last byte (a `log`
 * hook), in Cloud Logging's shape (`httpRequest`) plus Keyward's ids, tokens
 * and spend (`spend_usd`, a decimal string, when the usage was priced). Ids
 * only: never a key, a token value, a header or a body. Priority 300, the
 * lowest an operator plugin may take: its line comes after other plugins' logs.
 * Written as an outside author writes a plugin: it imports only the SDK's types,
 * and everything it uses at run time comes from the host.
 */
import type { Host, MiddlewarePlugin, RequestView } from '@keyward/sdk';

const logging = {
  apiVersion: 1,
  name: 'logging',
  priority: 300,
  create(host: Host) {
    return {
      log(ctx: RequestView): void {
        const status = ctx.status ?? 499;
        const latencyS = Number(process.hrtime.bigint() - ctx.startedAt) / 1e9;
        const userAgent = ctx.headers['user-agent'];
        // Optional fields are set, not spread from a conditional object: one object fewer each (this runs per request).
        const httpRequest: Record<string, unknown> = {
          requestMethod: ctx.method,
          requestUrl: `/v1/proxy/${ctx.path}`,
          status,
          responseSize: String(ctx.bytesOut),
          latency: `${latencyS.toFixed(6)}s`,
        };
        if (typeof userAgent === 'string') httpRequest.userAgent = userAgent.slice(0, 256);
        httpRequest.remoteIp = ctx.ip;
        const keyward: Record<string, unknown> = {
          request_id: ctx.requestId,
          org: ctx.orgId,
          credential: ctx.credentialId,
          token: ctx.tokenId,
          provider: ctx.providerId,
          forwarded: ctx.forwarded,
        };
        if (ctx.error) keyward.error = ctx.error.code;
        if (ctx.ttfbMs !== undefined) keyward.ttfb_ms = Math.round(ctx.ttfbMs * 1000) / 1000;
        if (ctx.usage.inputTokens || ctx.usage.outputTokens) {
          keyward.input_tokens = ctx.usage.inputTokens;
          keyward.output_tokens = ctx.usage.outputTokens;
        }
        if (ctx.spentMicros !== undefined) keyward.spend_usd = host.usd(ctx.spentMicros);
        const fields = Object.assign({ httpRequest, keyward }, host.traceFields(ctx.headers));
        if (status >= 500) host.logger.warn(fields, 'proxy request');
        else host.logger.info(fields, 'proxy request');
      },
    };
  },
} satisfies MiddlewarePlugin;

export default logging;
