/**
 * logging: one JSON line per proxied request after its last byte, in Cloud
 * Logging's shape (`httpRequest`) plus Keyward's ids. Ids only: never a key,
 * a token value, a header or a body.
 */
import type { MiddlewarePlugin, PluginHost, ProxyContext } from '../src/gateway/contracts.js';
import { traceFields } from '../src/trace.js';

export default class LoggingPlugin implements MiddlewarePlugin {
  readonly name = 'logging';

  constructor(private readonly host: PluginHost) {}

  onDone(ctx: ProxyContext): void {
    const status = ctx.status ?? 499;
    const latencyS = Number(process.hrtime.bigint() - ctx.startedAt) / 1e9;
    const userAgent = ctx.req.headers['user-agent'];
    const fields = {
      httpRequest: {
        requestMethod: ctx.method,
        requestUrl: `/v1/proxy/${ctx.path}`,
        status,
        responseSize: String(ctx.bytesOut),
        latency: `${latencyS.toFixed(6)}s`,
        ...(typeof userAgent === 'string' ? { userAgent: userAgent.slice(0, 256) } : {}),
        remoteIp: ctx.ip,
      },
      keyward: {
        request_id: ctx.requestId,
        org: ctx.auth?.credential.orgId,
        credential: ctx.auth?.credential.id,
        token: ctx.auth?.token.id,
        provider: ctx.provider?.id,
        forwarded: ctx.forwarded,
        ...(ctx.error ? { error: ctx.error.code } : {}),
        ...(ctx.ttfbMs !== undefined ? { ttfb_ms: Math.round(ctx.ttfbMs * 1000) / 1000 } : {}),
        ...(ctx.usage.inputTokens || ctx.usage.outputTokens ? { input_tokens: ctx.usage.inputTokens, output_tokens: ctx.usage.outputTokens } : {}),
      },
      ...traceFields(ctx.req.headers, this.host.config.gcpProject),
    };
    if (status >= 500) this.host.logger.warn(fields, 'proxy request');
    else this.host.logger.info(fields, 'proxy request');
  }
}
