/**
 * quota: the free tier's proxy requests per organisation per calendar month
 * (KEYWARD_FREE_PROXY_REQUESTS). The core runs it last, right before the
 * request is forwarded, so a request counts exactly when it is sent upstream.
 * Units are leased in blocks, so this costs no store round trip at steady state.
 */
import { Errors, type MiddlewarePlugin, type PluginHost, type ProxyContext } from '../src/gateway/contracts.js';

export default class QuotaPlugin implements MiddlewarePlugin {
  readonly name = 'quota';

  constructor(private readonly host: PluginHost) {}

  async onRequest(ctx: ProxyContext): Promise<void> {
    if (!ctx.auth) throw Errors.invalidToken();
    ctx.quotaRemaining = await this.host.quota.reserve(ctx.auth.credential.orgId);
  }

  async close(): Promise<void> {
    await this.host.quota.releaseAll();
  }
}
