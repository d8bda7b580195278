/**
 * The one error shape of the contract: status + {type, code, message}. Anything
 * thrown that is not an ApiError becomes a 500 `internal` whose message is fixed,
 * so no stack, argument or secret can leak through an error.
 * ERROR_CATALOGUE is the one list of the gateway's own codes: `Errors.*` take their
 * status and type from it, and the OpenAPI document (src/api/openapi/) derives its
 * `ErrorCode` schema and every error response from it.
 */

/** The `type` of an error: its family (the contract's table). */
export const ERROR_TYPES = ['invalid_request', 'authentication', 'permission', 'not_found', 'rate_limit', 'upstream', 'unavailable', 'internal'] as const;
export type ErrorType = (typeof ERROR_TYPES)[number];

export interface CatalogueEntry {
  status: number;
  type: ErrorType;
  /** When the gateway answers it (the OpenAPI document shows this line). */
  when: string;
  /** A second status the same code is sent with, where HTTP needs its own (431 for headers over the limit). */
  also?: { status: number; when: string };
}

/** Every error code the gateway itself makes: code → status, type and when. */
export const ERROR_CATALOGUE = {
  bad_request: {
    status: 400, type: 'invalid_request', when: 'Malformed HTTP (invalid header bytes, request smuggling forms), answered by the client-error handler on any path.',
    also: { status: 431, when: 'Request headers over 32 KiB, answered by the client-error handler on any path.' },
  },
  invalid_request: { status: 400, type: 'invalid_request', when: 'A bad JSON body, field, query parameter or Idempotency-Key (`param` names it).' },
  unknown_provider: { status: 400, type: 'invalid_request', when: 'A `provider` that is not loaded on this gateway.' },
  invalid_ttl: { status: 400, type: 'invalid_request', when: '`ttl` (or a team\'s `max_ttl`) missing, not `^[1-9][0-9]*[smhd]$`, over KEYWARD_MAX_TTL, or a team token\'s `ttl` over its team\'s `max_ttl`.' },
  invalid_scope: { status: 400, type: 'invalid_request', when: 'A token scope that can never match (empty array, a path off the allow-list, 0, negative).' },
  sign_in_failed: { status: 400, type: 'invalid_request', when: 'A single sign-on callback or device sign-in that is refused: its `state` or sign-in cookie is missing or not this sign-in\'s, the provider refused the code (a replayed code, an expired device code), the ID token did not verify (signature against the issuer\'s JWKS, issuer, audience, nonce, expiry), or the member\'s e-mail domain is not among the organisation\'s `allowed_domains`. The message says which, never a token.' },
  authorization_pending: { status: 400, type: 'invalid_request', when: '`keyward login`\'s device sign-in: the person has not finished signing in at the provider yet; poll again after `interval` seconds.' },
  issuer_not_allowed: { status: 400, type: 'invalid_request', when: 'A trust policy\'s `issuer` that the operator does not allow (KEYWARD_OIDC_ISSUERS).' },
  max_tokens_required: { status: 400, type: 'invalid_request', when: 'A request under a spend budget names no output cap (`max_tokens`, `max_completion_tokens`, `max_output_tokens`, `generationConfig.maxOutputTokens`, …) for a model with no known largest output, or references remote media or files for a model with no known context window: its worst case cannot be bounded.' },
  tools_unbounded: { status: 400, type: 'invalid_request', when: 'A request under a spend budget uses a provider-side tool (search, fetch, code execution, file search) whose cost nothing bounds: a tool billed by time, a per-use fee without a use limit in the request (`max_uses`, `max_tool_calls`), or a model with no known context window for the input the tool brings back.' },
  price_unknown: { status: 400, type: 'invalid_request', when: 'Under a cap (a token\'s `budget_usd` or `tokens_per_minute`, the organisation\'s `spend_limit_usd`), a request that sets a declared price dimension (`service_tier`, fast mode, a transcription or audio mode, …) to a value the price book does not price; the message names the field and value. Nothing is sent upstream.' },
  request_timeout: { status: 408, type: 'invalid_request', when: 'The request headers or body were not received within KEYWARD_HEADERS_TIMEOUT_MS / KEYWARD_BODY_TIMEOUT_MS.' },
  expectation_failed: { status: 417, type: 'invalid_request', when: 'An `Expect` header other than `100-continue`.' },
  unauthenticated: { status: 401, type: 'authentication', when: 'An admin route without a valid org token or admin key (or, for POST /v1/orgs, the operator\'s admin token); /metrics without KEYWARD_METRICS_TOKEN when one is set.' },
  invalid_token: { status: 401, type: 'authentication', when: 'A proxy request without a valid proxy token: missing, malformed, unknown, expired, revoked, or its credential deleted.' },
  limit_exceeded: { status: 403, type: 'permission', when: 'The free tier\'s stored-credential count (KEYWARD_FREE_CREDENTIALS) is reached.' },
  path_not_allowed: { status: 403, type: 'permission', when: 'A proxy method and path outside the provider\'s allow-list or the token\'s `paths`, or one that tries to leave the origin. Nothing is sent upstream.' },
  model_not_allowed: { status: 403, type: 'permission', when: 'A proxy request for a model outside the token\'s `models`.' },
  forbidden: { status: 403, type: 'permission', when: 'The admin key\'s role does not allow this route, a credential outside a minter\'s list, or a key above the caller\'s own role or lifetime.' },
  model_unpriced: { status: 403, type: 'permission', when: 'A request under a spend budget for a model with no price (or naming no model a price is known for); nothing is sent upstream.' },
  csrf_required: { status: 403, type: 'permission', when: 'A request signed in by the console\'s session cookie without the session\'s `X-Keyward-CSRF` value (from GET /v1/session).' },
  token_retiring: { status: 403, type: 'permission', when: 'An organisation token that is already retiring (it has an expiry from an earlier rotation) tried to rotate or to create a trust policy; only a current token may.' },
  not_found: { status: 404, type: 'not_found', when: 'An unknown route or id (another organisation\'s ids answer exactly the same).' },
  idempotency_conflict: { status: 409, type: 'invalid_request', when: 'An Idempotency-Key reused with another body (or while its first request is still running).' },
  payload_too_large: { status: 413, type: 'invalid_request', when: 'A body over KEYWARD_MAX_BODY (admin API: KEYWARD_MAX_ADMIN_BODY).' },
  quota_exceeded: { status: 429, type: 'rate_limit', when: 'The organisation\'s monthly proxy requests (KEYWARD_FREE_PROXY_REQUESTS) are used up; Retry-After counts to the next UTC month.' },
  token_exhausted: { status: 429, type: 'rate_limit', when: 'The proxy token has used all of its `max_requests`.' },
  tokens_per_minute_exceeded: { status: 429, type: 'rate_limit', when: 'The request\'s worst case does not fit in what is left of the token\'s (or its team\'s) `tokens_per_minute` this minute; see Retry-After.' },
  concurrency_exceeded: { status: 429, type: 'rate_limit', when: 'The token has `max_concurrent` requests or streams open already; see Retry-After.' },
  rate_limited: { status: 429, type: 'rate_limit', when: 'The token\'s `rate_limit` (proxy) or the organisation\'s KEYWARD_ADMIN_RATE (admin API); see Retry-After.' },
  budget_exhausted: { status: 429, type: 'rate_limit', when: 'The request\'s worst-case cost does not fit in what is left of the token\'s `budget_usd`, its member\'s or team\'s monthly `budget_usd` or the organisation\'s monthly `spend_limit_usd` (`detail.cap` names which; Retry-After: the month\'s end; none for a token\'s lifetime budget). Nothing was forwarded or counted.' },
  too_many_failures: { status: 429, type: 'rate_limit', when: 'Too many failed authentications from this IP (KEYWARD_AUTH_FAILURES); cooling down for KEYWARD_AUTH_COOLDOWN_S.' },
  body_buffer_exceeded: {
    status: 413, type: 'invalid_request', when: 'A middleware plugin\'s `requestBody` hook held back more of the request body than its declared `maxBuffer`; nothing was forwarded or counted.',
    also: { status: 502, when: 'A plugin\'s `responseBody` hook held back more of the response than its `maxBuffer` before any byte of it was sent (after that, the stream is cut).' },
  },
  internal: { status: 500, type: 'internal', when: 'An unexpected fault; the message is fixed and says nothing more.' },
  plugin_failed: { status: 502, type: 'internal', when: 'A middleware plugin\'s body hook failed (threw something other than a GatewayError, or answered what a hook may not); the message names the plugin, the log has its error\'s kind.' },
  upstream_unreachable: { status: 502, type: 'upstream', when: 'The provider cannot be reached.' },
  sso_unavailable: { status: 502, type: 'upstream', when: 'The organisation\'s OpenID provider could not be reached or answered something unusable (discovery document, JWKS, token endpoint).' },
  upstream_auth_failed: { status: 502, type: 'upstream', when: 'A cloud refused the access Keyward asks for on the credential\'s behalf: a federated credential\'s token exchange (AWS STS, Entra ID, Google STS or iamcredentials), or a rejected or revoked Google service-account key, or a minted access token that expires too soon to send; or an upstream OAuth credential that is not connected, or whose refresh token the SaaS refused (the account must be reconnected from the console). `message` carries the cloud\'s own words, masked of anything secret. Nothing was sent to the provider and nothing counted.' },
  unavailable: { status: 503, type: 'unavailable', when: 'The store or the key wrapper is down (the quota fails closed), or the instance is shutting down.' },
  overloaded: { status: 503, type: 'unavailable', when: 'Request bodies held while a token\'s scopes read them would pass KEYWARD_BUFFER_BUDGET; nothing was forwarded or counted.' },
  upstream_timeout: { status: 504, type: 'upstream', when: 'The provider did not connect (KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS) or went silent (KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS).' },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/** Brands ApiErrors so `instanceof` holds across copies of this module (a plugin built against another copy). */
const BRAND = Symbol.for('keyward.ApiError');

/**
 * What a cap's refusal adds to its error (`error.detail`): the cap (`token.budget_usd`, `member.budget_usd`,
 * `team.budget_usd`, `org.spend_limit_usd`, `token.tokens_per_minute`, `team.tokens_per_minute`), what the request needed at worst and what was left, in USD (decimal strings with six
 * places) or tokens (integers). A refusal for a price it does not know names the field and value instead.
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

export class ApiError extends Error {
  readonly [BRAND] = true;
  /** A body sent instead of the contract's error shape, for a client that reads another protocol's errors (an MCP client's JSON-RPC error). */
  readonly replyBody?: unknown;

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
    readonly detail?: RefusalDetail,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  body(): { error: { type: ErrorType; code: string; message: string; param?: string; detail?: RefusalDetail } } {
    const error: { type: ErrorType; code: string; message: string; param?: string; detail?: RefusalDetail } = { type: this.type, code: this.code, message: this.message };
    if (this.param) error.param = this.param;
    if (this.detail) error.detail = this.detail;
    return { error };
  }
}

/** The proxy's `WWW-Authenticate` challenge (RFC 6750): `Bearer realm="keyward"`, with any further auth-params after it. */
export function proxyChallenge(params: Record<string, string> = {}): string {
  return ['Bearer realm="keyward"', ...Object.entries(params).map(([k, v]) => `${k}="${v.replace(/["\\]/g, '\\$&')}"`)].join(', ');
}

/** An error of the catalogue: its status and type come from there (`status` only for a code's `also` status). */
function fail(code: ErrorCode, message: string, headers: Record<string, string> = {}, param?: string, status?: number, detail?: RefusalDetail): ApiError {
  const entry: CatalogueEntry = ERROR_CATALOGUE[code];
  return new ApiError(status ?? entry.status, entry.type, code, message, headers, param, detail);
}

/** µ$ as the refusal's detail writes them: USD with all six places ("0.012000"), so small amounts read exactly. */
export function usdDetail(micros: number): string {
  const abs = Math.abs(Math.round(micros));
  return `${micros < 0 ? '-' : ''}${Math.floor(abs / 1_000_000)}.${String(abs % 1_000_000).padStart(6, '0')}`;
}

/** The levels a spend budget nests in: token ≤ member ≤ team ≤ organisation. */
export type BudgetLevel = 'token' | 'member' | 'team' | 'org';
const BUDGET_LEVELS: Record<BudgetLevel, { says: string; field: string }> = {
  token: { says: 'this token\'s budget_usd', field: 'token.budget_usd' },
  member: { says: 'its member\'s monthly budget_usd', field: 'member.budget_usd' },
  team: { says: 'its team\'s monthly budget_usd', field: 'team.budget_usd' },
  org: { says: 'the organisation\'s monthly spend_limit_usd', field: 'org.spend_limit_usd' },
};

export const Errors = {
  badRequest: (message = 'Malformed HTTP request.') => fail('bad_request', message),
  headersTooLarge: () => fail('bad_request', 'The request headers are too large.', {}, undefined, ERROR_CATALOGUE.bad_request.also.status),
  invalidRequest: (message: string, param?: string) => fail('invalid_request', message, {}, param),
  unknownProvider: (provider: string) => fail('unknown_provider', `Unknown provider ${JSON.stringify(provider.slice(0, 64))}.`, {}, 'provider'),
  invalidTtl: (message: string, param = 'ttl') => fail('invalid_ttl', message, {}, param),
  invalidScope: (message: string, param: string) => fail('invalid_scope', message, {}, param),
  issuerNotAllowed: (allowed: string) => fail('issuer_not_allowed', `\`issuer\` must be one this gateway allows (KEYWARD_OIDC_ISSUERS): ${allowed}.`, {}, 'issuer'),
  requestTimeout: () => fail('request_timeout', 'The request was not received in time.'),
  expectationFailed: () => fail('expectation_failed', 'Only `Expect: 100-continue` is supported.'),
  unauthenticated: () => fail('unauthenticated', 'A valid organisation token or admin key is required: Authorization: Bearer otok_….', { 'www-authenticate': 'Bearer' }),
  signInFailed: (message: string) => fail('sign_in_failed', message),
  authorizationPending: (message = 'The sign-in at the provider is not finished yet; poll again after `interval` seconds.') => fail('authorization_pending', message),
  csrfRequired: () => fail('csrf_required', 'A request made with the session cookie must carry the session\'s X-Keyward-CSRF header (GET /v1/session gives it).'),
  ssoUnavailable: (message: string) => fail('sso_unavailable', message),
  metricsUnauthenticated: () => fail('unauthenticated', 'A valid metrics token is required: Authorization: Bearer <KEYWARD_METRICS_TOKEN>.', { 'www-authenticate': 'Bearer' }),
  /**
   * `finding`: where Keyward looked and what it found (catalog/presented-token.ts, refusal()). The challenge is RFC 6750's,
   * `Bearer realm="keyward"`; a route that adds parameters (an MCP route's `resource_metadata`) passes its own.
   */
  invalidToken: (finding?: string, challenge = proxyChallenge()) => fail('invalid_token', finding === undefined
    ? 'A valid proxy token is required: X-Proxy-Token: ptok_….'
    : `A valid proxy token is required. ${finding}`, { 'www-authenticate': challenge }),
  limitExceeded: (limit: number) => fail('limit_exceeded', `The free tier allows ${limit} stored credentials per organisation; delete one to store another.`),
  pathNotAllowed: (message = 'This method and path are not allowed for this provider or token.') => fail('path_not_allowed', message),
  modelNotAllowed: (model: string) => fail('model_not_allowed', `This token may not use model ${JSON.stringify(model.slice(0, 128))}.`),
  forbidden: (message = 'This key\'s role does not allow this request.') => fail('forbidden', message),
  tokenRetiring: (message = 'This organisation token is being retired by a rotation; only a current token may rotate.') => fail('token_retiring', message),
  notFound: (what = 'No such resource.') => fail('not_found', what),
  idempotencyConflict: () => fail('idempotency_conflict', 'This Idempotency-Key was used with a different request.'),
  toolsUnbounded: (message: string) => fail('tools_unbounded', message),
  priceUnknown: (message: string) => fail('price_unknown', message),
  payloadTooLarge: (limit: number) => fail('payload_too_large', `The request body is larger than ${limit} bytes.`),
  quotaExceeded: (limit: number, retryAfterS: number) =>
    fail('quota_exceeded', `The free tier allows ${limit} proxy requests per calendar month (UTC).`, { 'retry-after': String(retryAfterS) }),
  tokenExhausted: () => fail('token_exhausted', 'This token has used all of its max_requests.', { 'retry-after': '86400' }),
  /** `needed`: the request's worst-case tokens; `left`: what the token's (or, `team`, its team's) minute had left for it. */
  tokensPerMinuteExceeded: (retryAfterS: number, needed?: number, left?: number, of: 'token' | 'team' = 'token') => fail('tokens_per_minute_exceeded', needed === undefined || left === undefined
    ? `This request's worst-case tokens do not fit in what is left of the ${of}'s tokens_per_minute.`
    : `This request's worst case (${needed} tokens) does not fit in what is left of the ${of}'s tokens_per_minute (${left} tokens).`,
  { 'retry-after': String(retryAfterS) }, undefined, undefined,
  needed === undefined || left === undefined ? undefined : { cap: `${of}.tokens_per_minute`, needed_tokens: needed, left_tokens: left }),
  concurrencyExceeded: (retryAfterS: number) => fail('concurrency_exceeded', 'This token has max_concurrent requests open already.', { 'retry-after': String(retryAfterS) }),
  rateLimited: (retryAfterS: number, message = 'Too many requests; slow down.') => fail('rate_limited', message, { 'retry-after': String(retryAfterS) }),
  maxTokensRequired: (message: string) => fail('max_tokens_required', message),
  modelUnpriced: (model: string | undefined) => fail('model_unpriced', model === undefined
    ? 'This token or organisation has a spend budget, and the request names no model with a known price.'
    : `This token or organisation has a spend budget, and model ${JSON.stringify(model.slice(0, 128))} has no known price.`),
  /** `retryAfterS`: until the month ends (an organisation's, team's or member's cap); undefined for a token's lifetime budget (it never refills). */
  budgetExhausted: (what: BudgetLevel, retryAfterS?: number, amounts?: { neededMicros: number; leftMicros: number }) => {
    const cap = BUDGET_LEVELS[what] ?? BUDGET_LEVELS.org;
    const message = amounts
      ? `This request's worst-case cost ($${usdDetail(amounts.neededMicros)}) does not fit in what is left of ${cap.says} ($${usdDetail(amounts.leftMicros)}).`
      : `This request's worst-case cost does not fit in what is left of ${cap.says}.`;
    const detail = amounts && { cap: cap.field, needed_usd: usdDetail(amounts.neededMicros), left_usd: usdDetail(amounts.leftMicros) };
    return fail('budget_exhausted', message, retryAfterS === undefined ? {} : { 'retry-after': String(retryAfterS) }, undefined, undefined, detail);
  },
  tooManyFailures: (retryAfterS: number) =>
    fail('too_many_failures', 'Too many failed authentications from this address; try again later.', { 'retry-after': String(retryAfterS) }),
  upstreamUnreachable: (message = 'The provider could not be reached.') => fail('upstream_unreachable', message),
  /** `message`: what the cloud said (the caller's own configuration problem to fix), already masked of tokens and keys. */
  upstreamAuthFailed: (message: string) => fail('upstream_auth_failed', message),
  upstreamTimeout: () => fail('upstream_timeout', 'The provider did not answer in time.'),
  overloaded: () => fail('overloaded', 'The gateway is holding as many request bodies as it may; retry shortly.', { 'retry-after': '1' }),
  unavailable: () => fail('unavailable', 'The service is temporarily unavailable; retry shortly.', { 'retry-after': '1' }),
  internal: () => fail('internal', 'Internal error.'),
  /** `side`: which body the hook held (the request's is the caller's to shrink: 413; the response's: 502). */
  bodyBufferExceeded: (plugin: string, side: 'request' | 'response', limit: number) => fail('body_buffer_exceeded',
    `The plugin ${JSON.stringify(plugin)} held back more of the ${side} body than its maxBuffer (${limit} bytes).`, {}, undefined,
    side === 'request' ? undefined : ERROR_CATALOGUE.body_buffer_exceeded.also.status),
  pluginFailed: (plugin: string, side: 'request' | 'response') => fail('plugin_failed', `The plugin ${JSON.stringify(plugin)} failed on the ${side} body.`),
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

const OAUTH_BRAND = Symbol.for('keyward.OAuthError');

/**
 * The error codes of RFC 6749 §5.2 (and RFC 8693) that the token endpoints answer, RFC 8707's `invalid_target`,
 * RFC 7591's registration refusals and RFC 7009's `unsupported_token_type`.
 */
export type OAuthErrorCode = 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'server_error' | 'temporarily_unavailable'
  | 'invalid_client' | 'invalid_target' | 'invalid_client_metadata' | 'invalid_redirect_uri' | 'unsupported_token_type';

/**
 * An OAuth token endpoint's refusal (POST /v1/tokens/exchange): sent as RFC 6749's
 * `{"error", "error_description"}` by a route that declares `errorFormat: 'oauth'`, never in the
 * contract's shape. The description is fixed text: never a presented token or claim value.
 */
export class OAuthError extends ApiError {
  readonly [OAUTH_BRAND] = true;

  // ApiError's own check would hold for every ApiError: this one holds for OAuthErrors only.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[OAUTH_BRAND] === true;
  }

  constructor(readonly error: OAuthErrorCode, description: string, status = 400, headers: Record<string, string> = {}) {
    super(status, 'invalid_request', error, description, headers);
  }
}

/** Any error as RFC 6749 §5.2 words it: an OAuthError as itself, the gateway's own by its status. */
export function toOAuthError(err: unknown): OAuthError {
  if (err instanceof OAuthError) return err;
  const api = toApiError(err);
  if (api.status >= 500) return new OAuthError(api.status === 503 ? 'temporarily_unavailable' : 'server_error', api.message, api.status, api.headers);
  if (api.status === 429) return new OAuthError('temporarily_unavailable', api.message, 429, api.headers);
  // 413 keeps its status; every other refusal is a malformed request.
  return new OAuthError('invalid_request', api.message, api.status === 413 ? 413 : 400, api.headers);
}
