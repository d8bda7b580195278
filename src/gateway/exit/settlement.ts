/**
 * The one rule for what a forwarded request spent, applied by the exit (exchange.ts) when the response is
 * over (before the log hooks), so the usage counters, the budget's settlement, the metrics, the log line and
 * the span all count the same figure.
 */
import type { RequestView } from '../pipeline/contracts.js';

/** How a provider's response ended, as the upstream leg saw it. */
export interface ResponseEnd {
  /** The whole response arrived (not cut by the provider, the caller or the gateway). */
  readonly complete: boolean;
  /** A stream of events (SSE, AWS event stream) rather than one JSON body. */
  readonly eventStream: boolean;
  /** The provider's own end-of-message signal was read whole (the usage reader's `final`). */
  readonly endOfMessage: boolean;
}

/**
 * Whether the usage read is the provider's final word: its end-of-message signal was seen, or the response was
 * one complete body (not a stream).
 */
export function usageFinal(end: ResponseEnd | undefined): boolean {
  if (!end) return false;
  return end.endOfMessage || (end.complete && !end.eventStream);
}

/**
 * What a forwarded request spent (µ$), the one figure usage, budgets, metrics and the log line count. The
 * provider's usage is final only when it said the message ended (`usageFinal`): then the request spent what
 * it reported, nothing for an error answer that reported nothing (nothing was generated), and the whole
 * reservation for a success that reported nothing (it may bill what it did not say). Anything else (the
 * caller left, the stream was cut, a stream that ended without its end-of-message event, partial usage such
 * as Anthropic's `message_start`) is charged the larger of the usage seen and the whole reservation, so what
 * is charged is never below what the provider can bill. The most the request's provider-side tools can add in
 * fees (`toolFeeMicros`, part of the reservation) is charged on top of reported usage, which counts no
 * searches. A response that reported what the price book does not price (`usageUnpriced`: a tier no declaration
 * prices, a usage field the reader does not know) is charged no less than the reservation either (fail closed).
 * Undefined when the model is unpriced and no budget reserved anything.
 */
export function settledSpend(ctx: Pick<RequestView, 'costMicros' | 'reservedMicros' | 'toolFeeMicros' | 'usageFinal' | 'status'> & { readonly usageUnpriced?: boolean }): number | undefined {
  // Provider-side tool fees (searches) are billed beside the tokens a usage reports: always charged in full.
  const cost = ctx.costMicros === undefined ? undefined : ctx.costMicros + (ctx.toolFeeMicros ?? 0);
  const reserved = ctx.reservedMicros;
  if (reserved === undefined) return cost;
  if (!ctx.usageFinal || ctx.usageUnpriced) return Math.max(cost ?? 0, reserved);
  if (cost !== undefined) return cost;
  return ctx.status !== undefined && ctx.status >= 400 ? 0 : reserved;
}
