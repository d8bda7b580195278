/**
 * The one rule for what a forwarded request spent, applied by the exit (exchange.ts) when the response is
 * over (before the log hooks), so the usage counters, the budget's settlement, the metrics, the log line and
 * the span all count the same figure.
 */
import type { RequestView } from './contracts.js';

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
