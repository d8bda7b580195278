/**
 * The one error shape of the contract: status + {type, code, message}. Anything
 * thrown that is not an ApiError becomes a 500 `internal` whose message is fixed,
 * so no stack, argument or secret can leak through an error.
 */
export type ErrorType =
  | 'invalid_request' | 'authentication' | 'permission' | 'not_found'
  | 'rate_limit' | 'upstream' | 'unavailable' | 'internal';

/** Brands ApiErrors so `instanceof` holds across copies of this module (a plugin built against another copy). */
const BRAND = Symbol.for('keyward.ApiError');

export class ApiError extends Error {
  readonly [BRAND] = true;

  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly param?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): { error: { type: ErrorType; code: string; message: string; param?: string } } {
    const error: { type: ErrorType; code: string; message: string; param?: string } = { type: this.type, code: this.code, message: this.message };
    if (this.param) error.param = this.param;
    return { error };
  }
}

export const Errors = {
  badRequest: (message = 'Malformed HTTP request.') => new ApiError(400, 'invalid_request', 'bad_request', message),
  invalidRequest: (message: string, param?: string) => new ApiError(400, 'invalid_request', 'invalid_request', message, {}, param),
  unknownProvider: (provider: string) =>
    new ApiError(400, 'invalid_request', 'unknown_provider', `Unknown provider ${JSON.stringify(provider.slice(0, 64))}.`, {}, 'provider'),
  invalidTtl: (message: string) => new ApiError(400, 'invalid_request', 'invalid_ttl', message, {}, 'ttl'),
  invalidScope: (message: string, param: string) => new ApiError(400, 'invalid_request', 'invalid_scope', message, {}, param),
  unauthenticated: () => new ApiError(401, 'authentication', 'unauthenticated', 'A valid organisation token is required: Authorization: Bearer otok_….', { 'www-authenticate': 'Bearer' }),
  metricsUnauthenticated: () => new ApiError(401, 'authentication', 'unauthenticated', 'A valid metrics token is required: Authorization: Bearer <KEYWARD_METRICS_TOKEN>.', { 'www-authenticate': 'Bearer' }),
  invalidToken: () => new ApiError(401, 'authentication', 'invalid_token', 'A valid proxy token is required: X-Proxy-Token: ptok_….'),
  limitExceeded: (limit: number) =>
    new ApiError(403, 'permission', 'limit_exceeded', `The free tier allows ${limit} stored credentials per organisation; delete one to store another.`),
  pathNotAllowed: (message = 'This method and path are not allowed for this provider or token.') => new ApiError(403, 'permission', 'path_not_allowed', message),
  modelNotAllowed: (model: string) => new ApiError(403, 'permission', 'model_not_allowed', `This token may not use model ${JSON.stringify(model.slice(0, 128))}.`),
  tokenRetiring: () =>
    new ApiError(403, 'permission', 'token_retiring', 'This organisation token is being retired by a rotation; only a current token may rotate.'),
  notFound: (what = 'No such resource.') => new ApiError(404, 'not_found', 'not_found', what),
  idempotencyConflict: () => new ApiError(409, 'invalid_request', 'idempotency_conflict', 'This Idempotency-Key was used with a different request.'),
  payloadTooLarge: (limit: number) => new ApiError(413, 'invalid_request', 'payload_too_large', `The request body is larger than ${limit} bytes.`),
  quotaExceeded: (limit: number, retryAfterS: number) =>
    new ApiError(429, 'rate_limit', 'quota_exceeded', `The free tier allows ${limit} proxy requests per calendar month (UTC).`, { 'retry-after': String(retryAfterS) }),
  tokenExhausted: () => new ApiError(429, 'rate_limit', 'token_exhausted', 'This token has used all of its max_requests.', { 'retry-after': '86400' }),
  rateLimited: (retryAfterS: number, message = 'Too many requests; slow down.') => new ApiError(429, 'rate_limit', 'rate_limited', message, { 'retry-after': String(retryAfterS) }),
  tooManyFailures: (retryAfterS: number) =>
    new ApiError(429, 'rate_limit', 'too_many_failures', 'Too many failed authentications from this address; try again later.', { 'retry-after': String(retryAfterS) }),
  upstreamUnreachable: () => new ApiError(502, 'upstream', 'upstream_unreachable', 'The provider could not be reached.'),
  upstreamTimeout: () => new ApiError(504, 'upstream', 'upstream_timeout', 'The provider did not answer in time.'),
  overloaded: () =>
    new ApiError(503, 'unavailable', 'overloaded', 'The gateway is holding as many request bodies as it may; retry shortly.', { 'retry-after': '1' }),
  unavailable: () => new ApiError(503, 'unavailable', 'unavailable', 'The service is temporarily unavailable; retry shortly.', { 'retry-after': '1' }),
  internal: () => new ApiError(500, 'internal', 'internal', 'Internal error.'),
};

/** Raised by store and key-wrapper adapters when their backend cannot answer. */
export class BackendUnavailable extends Error {
  constructor(what: string, options?: { cause?: unknown }) {
    super(`${what} unavailable`, options);
    this.name = 'BackendUnavailable';
  }
}

export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof BackendUnavailable) return Errors.unavailable();
  return Errors.internal();
}
