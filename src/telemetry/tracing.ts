/**
 * The tracing port the gateway and the composition root talk to. It imports
 * nothing from OpenTelemetry: without OTEL_EXPORTER_OTLP_ENDPOINT the default is
 * `noTracing`, whose calls do nothing and return at once, and the SDK is never
 * loaded (container.ts imports otel.ts dynamically, only when configured).
 */
import type { IncomingHttpHeaders } from 'node:http';

/**
 * What a request span reads of the proxied request when it ends (RequestContext
 * satisfies it). Ids and counts only: nothing here can hold a key or a token.
 */
export interface TracedRequest {
  readonly requestId: string;
  readonly method: string;
  readonly ip: string;
  readonly orgId: string | undefined;
  readonly credentialId: string | undefined;
  readonly tokenId: string | undefined;
  readonly provider: { readonly id: string } | undefined;
  /** The matched route of the provider's allow-list: its declared pattern, e.g. `v1/chat/completions`. */
  readonly route: { readonly path: string } | undefined;
  readonly model: string | undefined;
  /** The tools an MCP request called (`tools/call` names), when it was one. */
  readonly toolCalls?: readonly string[] | undefined;
  /** The model the response named, when the request's own was not read. */
  readonly responseModel?: string | undefined;
  readonly forwarded: boolean;
  readonly status: number | undefined;
  readonly error: { readonly code: string } | undefined;
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number };
  /** What the request spent, in micro-dollars (gateway.ts settledSpend), when priced or budgeted. */
  readonly spentMicros?: number | undefined;
  /** A pooled request's attempts: the member tried and how it went (a status, `error` or `timeout`). */
  readonly attempts?: ReadonlyArray<{ readonly credentialId: string; readonly outcome: string }> | undefined;
}

/** One proxied request's span. */
export interface RequestSpan {
  /** Runs `fn` inside the span: store and KMS calls it makes (and what they await) become its children. */
  run<T>(fn: () => T): T;
  /** Sets the request's attributes and ends the span; a second call does nothing. */
  end(request: TracedRequest): void;
}

export interface Tracing {
  /** A span for a proxied request, the caller's `traceparent` its parent; undefined when tracing is off. */
  startRequest(headers: IncomingHttpHeaders): RequestSpan | undefined;
  /** `target` with a span around each of its asynchronous methods (store and KMS ports), or `target` itself when off. */
  traceCalls<T extends object>(target: T, component: 'store' | 'kms', system: string): T;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

export const noTracing: Tracing = {
  startRequest: () => undefined,
  traceCalls: (target) => target,
  shutdown: async () => {},
};
