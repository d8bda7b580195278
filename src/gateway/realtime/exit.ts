/**
 * The one way out of an upgrade, whatever happened: refused before the
 * upgrade, failed upstream, or a session that ran and closed. It counts the
 * request (a forwarded upgrade is one request: the session; its responses'
 * tokens and spend were counted as each settled), the metrics and the span,
 * and runs every stage's `log` hook, once.
 *
 * This is the seam the gate's exchange (src/gateway/exchange.ts, one exit per
 * request) replaces: `finish` is the only place an upgrade ends.
 */
import type { UsageRecorder } from '../../accounting/usage-recorder.js';
import type { PriceBook } from '../../catalog/prices.js';
import type { TokenUsage } from '../../catalog/provider.js';
import type { UnpricedModels } from '../../catalog/unpriced-models.js';
import type { Metrics } from '../../metrics.js';
import type { RequestContext } from '../context.js';
import type { Pipeline } from '../pipeline.js';

export class UpgradeExit {
  private readonly done = new WeakSet<RequestContext>();

  constructor(
    private readonly pipeline: Pipeline, private readonly usage: UsageRecorder, private readonly metrics: Metrics, private readonly prices: PriceBook,
    private readonly unpriced: UnpricedModels,
  ) {}

  /** One response of a session settled: its tokens and what it was charged, counted now (a session may last hours). */
  settled(ctx: RequestContext, usage: TokenUsage | undefined, micros: number | undefined, model: string | undefined): void {
    const auth = ctx.auth!;
    if (usage) {
      ctx.usage.inputTokens += usage.inputTokens;
      ctx.usage.outputTokens += usage.outputTokens;
    }
    if (micros !== undefined) ctx.spentMicros = (ctx.spentMicros ?? 0) + micros;
    const provider = ctx.provider!.id;
    const priced = this.pricedName(provider, model);
    this.usage.record({
      orgId: auth.credential.orgId, credentialId: auth.credential.id, tokenId: auth.token.id, requests: 0,
      inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0, spendMicros: micros ?? 0, model: priced,
    });
    this.metrics.spent(provider, priced, micros ?? 0);
  }

  /** The upgrade is over (refused, failed, or a session that closed): counted and logged once. */
  async finish(ctx: RequestContext): Promise<void> {
    if (this.done.has(ctx)) return;
    this.done.add(ctx);
    const provider = ctx.provider?.id ?? 'unknown';
    // The session's model as its upgrade named it (the Responses API names one per response.create: noted there).
    if (ctx.auth) this.unpriced.observe(ctx.auth.credential.orgId, provider, ctx.model);
    if (ctx.forwarded) {
      this.metrics.proxied(provider, ctx.status ?? 499, Number(process.hrtime.bigint() - ctx.forwardedAt) / 1e9, ctx.ttfbMs === undefined ? undefined : ctx.ttfbMs / 1000);
      const auth = ctx.auth!;
      this.usage.record({
        orgId: auth.credential.orgId, credentialId: auth.credential.id, tokenId: auth.token.id, requests: 1, inputTokens: 0, outputTokens: 0, spendMicros: 0,
        model: this.pricedName(provider, ctx.model),
      });
    } else if (ctx.error) {
      this.metrics.refused(ctx.error.code, ctx.provider?.id, ctx.error.status);
    }
    ctx.span?.end(ctx);
    await this.pipeline.logAll(ctx);
  }

  /** The price table's name for a model (metrics and the usage breakdown count by it), or `unpriced`. */
  private pricedName(provider: string, model: string | undefined): string {
    return (model === undefined ? undefined : this.prices.match(provider, model))?.name ?? 'unpriced';
  }
}
