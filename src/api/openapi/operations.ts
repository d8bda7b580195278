/**
 * The paths that are not admin routes of the router: the proxy (the providers' own APIs through the
 * gateway), health, readiness, metrics and this document; and the security schemes that say where a
 * proxy token may travel (every place an official SDK puts its key).
 */
import type { JsonSchema } from './json-schema.js';
import { errorResponse, ref, RETRY_AFTER, type ResponseObject } from './responses.js';

export type SecuritySchemeObject =
  | { type: 'http'; scheme: 'bearer'; bearerFormat?: string; description: string }
  | { type: 'apiKey'; in: 'header' | 'query'; name: string; description: string };

export type Operation = { [field: string]: unknown; responses: Record<string, unknown> };
export type PathItem = { [method: string]: unknown };

const PROXY_KEY_HELP = 'Accepted where official SDKs put their key, so `apiKey = ptok_…` works unchanged. If `X-Proxy-Token` is present it wins; a repeated credential header is refused.';

export function securitySchemes(keyQueryParams: readonly string[]): Record<string, SecuritySchemeObject> {
  const schemes: Record<string, SecuritySchemeObject> = {
    orgToken: { type: 'http', scheme: 'bearer', bearerFormat: 'otok_…', description: 'The organisation token from POST /v1/orgs or `npx keyward org create` (role `owner`), or an admin key from POST /v1/admin-keys (its own role): `Authorization: Bearer otok_…`.' },
    adminToken: { type: 'http', scheme: 'bearer', description: 'The operator\'s token, the value of KEYWARD_ADMIN_TOKEN (POST /v1/orgs only).' },
    proxyToken: { type: 'apiKey', in: 'header', name: 'X-Proxy-Token', description: 'A proxy token `ptok_…` from POST /v1/tokens.' },
    proxyBearer: { type: 'http', scheme: 'bearer', bearerFormat: 'ptok_…', description: `\`Authorization: Bearer ptok_…\` (OpenAI-style SDKs). ${PROXY_KEY_HELP}` },
    proxyApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: `\`x-api-key: ptok_…\` (Anthropic SDKs). ${PROXY_KEY_HELP}` },
    proxyGoogApiKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: `\`x-goog-api-key: ptok_…\` (Google AI SDKs). ${PROXY_KEY_HELP}` },
  };
  for (const q of keyQueryParams) {
    schemes[`proxyQuery_${q}`] = { type: 'apiKey', in: 'query', name: q, description: `\`?${q}=ptok_…\`, a credential query parameter a provider declares (Gemini's \`key\`). ${PROXY_KEY_HELP}` };
  }
  return schemes;
}

const PROXY_PATH_PARAMETER = {
  name: 'path',
  in: 'path',
  required: true,
  description: 'The provider\'s own API path, slashes included, exactly as on the provider\'s API (`v1/chat/completions` for OpenAI, `v1/messages` for Anthropic, `v1beta/models/{model}:streamGenerateContent` for Gemini). The query string is forwarded too. It must be on the provider\'s allow-list (and the token\'s `paths`); it is decoded and normalised once, and anything that could leave the origin is refused with 403 `path_not_allowed`.',
  schema: { type: 'string', examples: ['v1/chat/completions'] },
} as const;

function proxyErrors(): Record<string, ResponseObject> {
  const requestId = { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') };
  return {
    '400': errorResponse(['invalid_request', 'bad_request'], 'Malformed HTTP, or a token limited to `models` with a body that is not a JSON object, or that names `model` twice (a case variant such as `Model` included).', requestId),
    '401': errorResponse(['invalid_token'], 'No proxy token was accepted: the message says where Keyward looked (X-Proxy-Token, Authorization: Bearer, x-api-key and the providers\' own places) and what it found there, never the value.', { ...requestId, 'www-authenticate': ref('headers', 'WwwAuthenticate') }),
    '403': errorResponse(['path_not_allowed', 'model_not_allowed'], 'Outside the provider\'s allow-list or the token\'s scopes; nothing was sent and nothing counted.', requestId),
    '413': errorResponse(['payload_too_large'], 'The body is over KEYWARD_MAX_BODY (by `content-length`, before any upstream byte; a chunked body that grows past it is cut off).', requestId),
    '429': errorResponse(['quota_exceeded', 'token_exhausted', 'rate_limited', 'too_many_failures', 'budget_exhausted', 'tokens_per_minute_exceeded', 'concurrency_exceeded'],
      'A limit refused the request; nothing was forwarded. A cap\'s refusal (`budget_exhausted`, `tokens_per_minute_exceeded`) carries `error.detail`: what the request needed at worst and what was left.', {
        ...requestId,
        'retry-after': { description: 'Seconds to wait before retrying; absent on a token\'s `budget_usd` refusal (a lifetime budget never refills).', schema: { type: 'string', pattern: '^[0-9]+$' } },
      }),
    '500': errorResponse(['internal'], undefined, {}),
    '502': errorResponse(['upstream_unreachable'], undefined, requestId),
    '503': errorResponse(['unavailable', 'overloaded'], undefined, { ...requestId, ...RETRY_AFTER }),
    '504': errorResponse(['upstream_timeout'], undefined, requestId),
  };
}

function proxyOperation(method: 'get' | 'post' | 'delete', security: Array<Record<string, string[]>>): Operation {
  return {
    operationId: `proxy${method[0]!.toUpperCase()}${method.slice(1)}`,
    summary: `${method.toUpperCase()} the provider's API through the gateway`,
    description: [
      'The token\'s credential picks the provider; the upstream URL is the provider\'s origin + `/{path}` + the query string.',
      'So an SDK\'s base URL is `<gateway>/v1/proxy` + the provider\'s own base path (`…/v1/proxy/v1` for OpenAI, `…/v1/proxy` for Anthropic and Gemini), with `apiKey = ptok_…`.',
      'Order of checks: token (401) → path and scopes (403) → body size (413) → the operator\'s plugins → rate limits and spend caps (400, 403, 429) → quota (429). A request counts against the quota once forwarded.',
      'Every caller credential, hop-by-hop and `Forwarded`/`X-Forwarded-*` header is removed and the stored key injected; the response streams back unbuffered (SSE included), status, headers and body as the provider sent them, with the stored key\'s bytes masked by `*` if they ever appear. Redirects are passed back, never followed.',
    ].join('\n\n'),
    tags: ['proxy'],
    security,
    ...(method === 'post'
      ? {
        requestBody: {
          description: 'The provider\'s own request body, forwarded as is. For a token limited to `models`, its top-level `model` is found by a streaming scan: the bytes read are held only until `model` is found (or the object closes), then forwarded with the rest streaming behind.',
          required: false,
          content: { 'application/json': { schema: { type: 'object' }, example: { model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] } }, '*/*': { schema: {} } },
        },
      }
      : {}),
    responses: {
      default: {
        description: 'The provider\'s response, any status, streamed back unbuffered with every provider header (its own `x-request-id` included).',
        headers: { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId'), 'x-keyward-quota-remaining': ref('headers', 'XKeywardQuotaRemaining') },
        content: { 'application/json': { schema: {} }, 'text/event-stream': { schema: { type: 'string' } }, '*/*': { schema: {} } },
      },
      ...proxyErrors(),
    },
  };
}

const json = (schema: JsonSchema, example?: unknown) => ({ 'application/json': example === undefined ? { schema } : { schema, example } });

/** The proxy and the operational endpoints, keyed by path. */
export function otherPaths(keyQueryParams: readonly string[], health: JsonSchema): Record<string, PathItem> {
  const proxySecurity = [{ proxyToken: [] }, { proxyBearer: [] }, { proxyApiKey: [] }, { proxyGoogApiKey: [] }, ...keyQueryParams.map((q) => ({ [`proxyQuery_${q}`]: [] }))];
  const none: Array<Record<string, string[]>> = [];
  return {
    '/v1/proxy/{path}': {
      parameters: [PROXY_PATH_PARAMETER],
      get: proxyOperation('get', proxySecurity),
      post: proxyOperation('post', proxySecurity),
      delete: proxyOperation('delete', proxySecurity),
    },
    '/healthz': {
      get: {
        operationId: 'health', summary: 'Liveness', tags: ['operations'], security: none,
        responses: { '200': { description: 'The process serves.', content: json(health, { status: 'ok' }) } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'ready', summary: 'Readiness', tags: ['operations'], security: none,
        responses: {
          '200': { description: 'The store and the key wrapper answer (a result at most 2 s old, shared by concurrent probes).', content: json(health, { status: 'ready' }) },
          '503': { description: 'The store or the key wrapper does not answer (`unavailable`), or the instance is shutting down (`draining`).', content: json(health, { status: 'unavailable' }) },
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics', summary: 'Prometheus metrics', tags: ['operations'], security: none,
        description: 'With `KEYWARD_METRICS_TOKEN` set, only with `Authorization: Bearer <KEYWARD_METRICS_TOKEN>`.',
        responses: {
          '200': { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': errorResponse(['unauthenticated'], 'KEYWARD_METRICS_TOKEN is set and was not presented.', { 'www-authenticate': ref('headers', 'WwwAuthenticate') }),
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'openapi', summary: 'This document', tags: ['operations'], security: none,
        responses: { '200': { description: 'The OpenAPI 3.1 document.', headers: { 'x-request-id': ref('headers', 'XRequestId') }, content: json({ type: 'object' }) } },
      },
    },
  };
}
