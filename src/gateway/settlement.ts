/**
 * The one rule for what a forwarded request spent, applied by the core when the response is over (before
 * the log hooks), so the usage counters, the budget's settlement, the metrics, the log line and the span
 * all count the same figure.
 */
import type { RequestView } from './contracts.js';

/**
 * What a forwarded request spent (µ$), the one figure usage, budgets, metrics and the log line count: the
 * reported cost; nothing when the provider answered an error and reported nothing (nothing was generated);
 * the whole reservation when nothing was reported (caller gone, stream cut: the worst case stands);
 * undefined when the model is unpriced and no budget reserved anything.
 */
export function settledSpend(ctx: Pick<RequestView, "costMicros" | "reservedMicros" | "error" | "status">): number | undefined {
  if (ctx.costMicros !== undefined) return ctx.costMicros;
  if (ctx.reservedMicros === undefined) return undefined;
  if (ctx.error === undefined && ctx.status !== undefined && ctx.status >= 400) return 0;
  return ctx.reservedMicros;
}
