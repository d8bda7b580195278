/**
 * Keyward's refusals as a plugin sees and makes them: one shape, status + `{ type, code, message }`. A plugin
 * refuses by throwing `host.GatewayError` (or one of `host.errors`); anything else it throws is answered as a
 * 500 `internal` whose message says nothing more. A plugin's own codes are any lower_snake_case word
 * (`content_refused`); ErrorCode lists the codes Keyward itself answers with.
 */

/** The family of an error (its `type`). */
export type ErrorType = 'invalid_request' | 'authentication' | 'permission' | 'not_found' | 'rate_limit' | 'upstream' | 'unavailable' | 'internal';

/** Every code Keyward's own refusals carry. */
export type ErrorCode =
  | 'bad_request' | 'invalid_request' | 'unknown_provider' | 'invalid_ttl' | 'invalid_scope' | 'issuer_not_allowed'
  | 'max_tokens_required' | 'tools_unbounded' | 'price_unknown' | 'request_timeout' | 'expectation_failed'
  | 'unauthenticated' | 'invalid_token' | 'limit_exceeded' | 'path_not_allowed' | 'model_not_allowed' | 'forbidden'
  | 'model_unpriced' | 'token_retiring' | 'not_found' | 'idempotency_conflict' | 'payload_too_large' | 'quota_exceeded'
  | 'token_exhausted' | 'tokens_per_minute_exceeded' | 'concurrency_exceeded' | 'rate_limited' | 'budget_exhausted'
  | 'too_many_failures' | 'internal' | 'upstream_unreachable' | 'upstream_auth_failed' | 'unavailable' | 'overloaded'
  | 'upstream_timeout';

/**
 * What a cap's refusal adds (`error.detail`): the cap, what the request needed at worst and what was left, in USD
 * (decimal strings with six places) or tokens; a refusal for a price it does not know names the field and value.
 */
export interface RefusalDetail {
  cap?: string;
  needed_usd?: string;
  left_usd?: string;
  needed_tokens?: number;
  left_tokens?: number;
  field?: string;
  value?: string;
}

/** A refusal: what the caller gets as its status and JSON error. */
export interface GatewayError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  /** Keyward's codes (ErrorCode) or a plugin's own lower_snake_case word. */
  readonly code: string;
  /** Headers sent with the refusal (`retry-after`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The request field the refusal is about, if one. */
  readonly param?: string;
  readonly detail?: RefusalDetail;
}

/** `new host.GatewayError(403, 'permission', 'ip_not_allowed', 'This address may not use this gateway.')`. */
export interface GatewayErrorConstructor {
  new (status: number, type: ErrorType, code: string, message: string, headers?: Record<string, string>, param?: string): GatewayError;
}

/** The refusals of Keyward's own codes a plugin may throw as they are: `throw host.errors.pathNotAllowed()`. */
export interface HostErrors {
  invalidRequest(message: string, param?: string): GatewayError;
  pathNotAllowed(message?: string): GatewayError;
  modelNotAllowed(model: string): GatewayError;
  forbidden(message?: string): GatewayError;
  notFound(what?: string): GatewayError;
  rateLimited(retryAfterS: number, message?: string): GatewayError;
  priceUnknown(message: string): GatewayError;
  unavailable(): GatewayError;
  internal(): GatewayError;
}
