/**
 * The OpenAPI 3.1 description of everything Keyward serves: the /v1 admin API,
 * the proxy, health, readiness, metrics and this document itself. Served at
 * GET /v1/openapi.json (no token), computed once at start with the loaded
 * providers as the `provider` enum. test/observability/openapi.test.ts checks
 * that every registered route and every error code is here, that the document
 * is valid OpenAPI 3.1, and that real responses match its schemas.
 */

/** A JSON Schema 2020-12 object (OpenAPI 3.1's dialect). */
export type Schema = { [keyword: string]: unknown };

export interface HeaderObject {
  description: string;
  required?: boolean;
  schema: Schema;
}

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  description: string;
  required?: boolean;
  schema: Schema;
}

export interface MediaTypeObject {
  schema?: Schema;
  example?: unknown;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject | Ref>;
  content?: Record<string, MediaTypeObject>;
}

export interface RequestBodyObject {
  description?: string;
  required: boolean;
  content: Record<string, MediaTypeObject>;
}

export interface Ref {
  $ref: string;
}

export interface OperationObject {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Array<Record<string, string[]>>;
  parameters?: Array<ParameterObject | Ref>;
  requestBody?: RequestBodyObject;
  responses: Record<string, ResponseObject | Ref>;
}

export type PathItemObject = Partial<Record<'get' | 'post' | 'delete', OperationObject>> & { parameters?: Array<ParameterObject | Ref> };

export type SecuritySchemeObject =
  | { type: 'http'; scheme: 'bearer'; bearerFormat?: string; description: string }
  | { type: 'apiKey'; in: 'header' | 'query'; name: string; description: string };

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; summary: string; description: string };
  servers: Array<{ url: string; description: string }>;
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, PathItemObject>;
  components: {
    schemas: Record<string, Schema>;
    parameters: Record<string, ParameterObject>;
    headers: Record<string, HeaderObject>;
    securitySchemes: Record<string, SecuritySchemeObject>;
  };
}

export interface OpenApiOptions {
  /** The loaded providers' ids: the `provider` enum. */
  providers: string[];
  /** Credential query parameters the providers declare (Gemini's `key`), accepted as a proxy token. */
  keyQueryParams?: string[];
  /** Plain credential fields the providers declare (OpenAI's `organization`): optional properties of a credential. */
  credentialFields?: Array<{ provider: string; name: string; header: string; description?: string }>;
}

/** Every error the gateway itself makes: code → status, type and when. */
export const ERROR_CODES = {
  bad_request: { status: 400, type: 'invalid_request', when: 'Malformed HTTP (invalid header bytes, request smuggling forms), answered by the client-error handler on any path (431 when the headers are over 32 KiB).' },
  invalid_request: { status: 400, type: 'invalid_request', when: 'A bad JSON body, field, query parameter or Idempotency-Key (`param` names it).' },
  unknown_provider: { status: 400, type: 'invalid_request', when: 'A `provider` that is not loaded on this gateway.' },
  invalid_ttl: { status: 400, type: 'invalid_request', when: '`ttl` missing, not `^[1-9][0-9]*[smhd]$`, or over KEYWARD_MAX_TTL.' },
  invalid_scope: { status: 400, type: 'invalid_request', when: 'A token scope that can never match (empty array, a path off the allow-list, 0, negative).' },
  request_timeout: { status: 408, type: 'invalid_request', when: 'The request headers or body were not received within KEYWARD_HEADERS_TIMEOUT_MS / KEYWARD_BODY_TIMEOUT_MS.' },
  unauthenticated: { status: 401, type: 'authentication', when: 'An admin route without a valid org token (or, for POST /v1/orgs, the operator\'s admin token).' },
  invalid_token: { status: 401, type: 'authentication', when: 'A proxy request without a valid proxy token: missing, malformed, unknown, expired, revoked, or its credential deleted.' },
  limit_exceeded: { status: 403, type: 'permission', when: 'The free tier\'s stored-credential count (KEYWARD_FREE_CREDENTIALS) is reached.' },
  path_not_allowed: { status: 403, type: 'permission', when: 'A proxy method and path outside the provider\'s allow-list or the token\'s `paths`, or one that tries to leave the origin. Nothing is sent upstream.' },
  model_not_allowed: { status: 403, type: 'permission', when: 'A proxy request for a model outside the token\'s `models`.' },
  token_retiring: { status: 403, type: 'permission', when: 'An organisation token that is already retiring (it has an expiry from an earlier rotation) tried to rotate; only a current token may.' },
  not_found: { status: 404, type: 'not_found', when: 'An unknown route or id (another organisation\'s ids answer exactly the same).' },
  idempotency_conflict: { status: 409, type: 'invalid_request', when: 'An Idempotency-Key reused with another body (or while its first request is still running).' },
  payload_too_large: { status: 413, type: 'invalid_request', when: 'A body over KEYWARD_MAX_BODY (admin API: KEYWARD_MAX_ADMIN_BODY).' },
  quota_exceeded: { status: 429, type: 'rate_limit', when: 'The organisation\'s monthly proxy requests (KEYWARD_FREE_PROXY_REQUESTS) are used up; Retry-After counts to the next UTC month.' },
  token_exhausted: { status: 429, type: 'rate_limit', when: 'The proxy token has used all of its `max_requests`.' },
  rate_limited: { status: 429, type: 'rate_limit', when: 'The token\'s `rate_limit` (proxy) or the organisation\'s KEYWARD_ADMIN_RATE (admin API); see Retry-After.' },
  too_many_failures: { status: 429, type: 'rate_limit', when: 'Too many failed authentications from this IP (KEYWARD_AUTH_FAILURES); cooling down for KEYWARD_AUTH_COOLDOWN_S.' },
  internal: { status: 500, type: 'internal', when: 'An unexpected fault; the message is fixed and says nothing more.' },
  upstream_unreachable: { status: 502, type: 'upstream', when: 'The provider cannot be reached.' },
  unavailable: { status: 503, type: 'unavailable', when: 'The store or the key wrapper is down (the quota fails closed), or the instance is shutting down.' },
  overloaded: { status: 503, type: 'unavailable', when: 'Request bodies held while a token\'s scopes read them would pass KEYWARD_BUFFER_BUDGET; nothing was forwarded or counted.' },
  upstream_timeout: { status: 504, type: 'upstream', when: 'The provider did not connect (KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS) or went silent (KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS).' },
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

const ERROR_TYPES = ['invalid_request', 'authentication', 'permission', 'not_found', 'rate_limit', 'upstream', 'unavailable', 'internal'] as const;

const ref = (kind: 'schemas' | 'parameters' | 'headers' | 'responses', name: string): Ref => ({ $ref: `#/components/${kind}/${name}` });
const schemaRef = (name: string): Schema => ({ $ref: `#/components/schemas/${name}` });

const json = (schema: Schema, example?: unknown): Record<string, MediaTypeObject> => ({
  'application/json': example === undefined ? { schema } : { schema, example },
});

const TIME: Schema = { type: 'string', format: 'date-time', pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$', description: 'RFC 3339 UTC with milliseconds.', examples: ['2026-11-03T09:15:27.123Z'] };
const id = (prefix: string, description: string): Schema => ({ type: 'string', pattern: `^${prefix}_[0-9A-Za-z]{24}$`, description, examples: [`${prefix}_4kT9bQ2mXw7Zr1sVc8NpL3aY`] });
const secret = (prefix: string, description: string): Schema => ({ type: 'string', pattern: `^${prefix}_[0-9A-Za-z]{38}$`, description, examples: [`${prefix}_…`] });
const count: Schema = { type: 'integer', minimum: 0 };

/** One error response: the Error shape with the codes that can answer here. */
function errorResponse(codes: ErrorCode[], description?: string, headers: Record<string, HeaderObject | Ref> = {}): ResponseObject {
  const lines = codes.map((c) => `- \`${c}\` (${ERROR_CODES[c].type}): ${ERROR_CODES[c].when}`);
  const first = codes[0]!;
  return {
    description: `${description ?? 'Refused by the gateway.'}\n\n${lines.join('\n')}`,
    headers: { 'x-request-id': ref('headers', 'XRequestId'), ...headers },
    content: json(
      {
        allOf: [
          schemaRef('Error'),
          { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: codes }, type: { enum: [...new Set(codes.map((c) => ERROR_CODES[c].type))] } } } } },
        ],
      },
      { error: { type: ERROR_CODES[first].type, code: first, message: '…' } },
    ),
  };
}

const RETRY_AFTER = { 'retry-after': ref('headers', 'RetryAfter') };

/** The responses every admin route can give besides its own. */
function adminErrors(options: { auth: 'org' | 'admin' | 'none'; body?: boolean; idempotent?: boolean; notFound?: boolean; extra400?: ErrorCode[]; extra403?: ErrorCode[] }): Record<string, ResponseObject | Ref> {
  const r: Record<string, ResponseObject | Ref> = {
    '400': errorResponse(['invalid_request', ...(options.extra400 ?? []), 'bad_request'], 'A bad body, field or query parameter (`param` names it when it can), or malformed HTTP.'),
  };
  if (options.auth !== 'none') {
    r['401'] = errorResponse(['unauthenticated'], options.auth === 'admin'
      ? 'No valid operator token (`Authorization: Bearer <KEYWARD_ADMIN_TOKEN>`), or none is configured.'
      : 'No valid organisation token (`Authorization: Bearer otok_…`).', { 'www-authenticate': ref('headers', 'WwwAuthenticate') });
  }
  if (options.extra403?.length) r['403'] = errorResponse(options.extra403);
  if (options.notFound) r['404'] = errorResponse(['not_found'], 'No such id in this organisation (another organisation\'s ids answer the same).');
  if (options.idempotent) r['409'] = errorResponse(['idempotency_conflict']);
  if (options.body) r['413'] = errorResponse(['payload_too_large']);
  r['429'] = errorResponse(options.auth === 'org' ? ['rate_limited', 'too_many_failures'] : ['too_many_failures'], options.auth === 'org'
    ? 'The organisation\'s admin rate (KEYWARD_ADMIN_RATE per minute), or this IP is cooling down after failed authentications.'
    : 'This IP is cooling down after failed authentications.', RETRY_AFTER);
  r['500'] = errorResponse(['internal']);
  r['503'] = errorResponse(['unavailable'], undefined, RETRY_AFTER);
  return r;
}

const ok = (status: string, description: string, schemaName: string, options: { replay?: boolean; example?: unknown } = {}): Record<string, ResponseObject> => ({
  [status]: {
    description: options.replay ? `${description} An idempotent replay answers the first response again with \`idempotent-replayed: true\`, without any secret shown once.` : description,
    headers: {
      'x-request-id': ref('headers', 'XRequestId'),
      ...(options.replay ? { 'idempotent-replayed': ref('headers', 'IdempotentReplayed') } : {}),
    },
    content: json(schemaRef(schemaName), options.example),
  },
});

const ORG = [{ orgToken: [] }];
const ADMIN = [{ adminToken: [] }];
const NONE: Array<Record<string, string[]>> = [];

const body = (schemaName: string, description: string, required = true, example?: unknown): RequestBodyObject => ({
  description,
  required,
  content: json(schemaRef(schemaName), example),
});

export function openApiDocument(options: OpenApiOptions): OpenApiDocument {
  const providers = [...new Set(options.providers)].sort();
  const queryParams = [...new Set(options.keyQueryParams ?? ['key'])];
  const proxySecurity: Array<Record<string, string[]>> = [
    { proxyToken: [] },
    { proxyBearer: [] },
    { proxyApiKey: [] },
    { proxyGoogApiKey: [] },
    ...queryParams.map((q) => ({ [`proxyQuery_${q}`]: [] })),
  ];

  const usageCounts: Schema = {
    type: 'object',
    description: 'Requests forwarded and tokens read from the provider\'s `usage` (recorded in the background, batched).',
    required: ['requests', 'input_tokens', 'output_tokens'],
    additionalProperties: false,
    properties: { requests: count, input_tokens: count, output_tokens: count },
  };

  const tokenProperties: Record<string, Schema> = {
    id: id('tok', 'The token\'s id (not the secret).'),
    object: { const: 'token' },
    credential_id: id('cred', 'The credential whose key the token uses.'),
    status: { enum: ['active', 'expired'], description: '`active` while now < `expires_at`.' },
    created_at: TIME,
    expires_at: TIME,
    models: schemaRef('ModelsScope'),
    paths: schemaRef('PathsScope'),
    max_requests: schemaRef('MaxRequestsScope'),
    rate_limit: schemaRef('RateLimitScope'),
  };
  const tokenRequired = ['id', 'object', 'credential_id', 'status', 'created_at', 'expires_at'];

  // One optional property per declared field name, saying which providers take it and the header it becomes.
  const credentialFieldProperties: Record<string, Schema> = {};
  for (const name of [...new Set((options.credentialFields ?? []).map((f) => f.name))].sort()) {
    const uses = (options.credentialFields ?? []).filter((f) => f.name === name);
    credentialFieldProperties[name] = {
      type: 'string',
      pattern: '^[\\x21-\\x7e]{1,200}$',
      description: `A plain credential field, set by the organisation and sent upstream (the caller's own copy of that header never is): ${uses.map((f) => `${f.provider}: \`${f.header}\`${f.description ? ` (${f.description})` : ''}`).join('; ')}. Only for those providers; any other → 400 \`invalid_request\`.`,
    };
  }

  const list = (item: string, description: string): Schema => ({
    type: 'object',
    description: `${description} Newest first; page with \`limit\` and \`starting_after\` = the last id of this page while \`has_more\`.`,
    required: ['object', 'data', 'has_more'],
    additionalProperties: false,
    properties: {
      object: { const: 'list' },
      data: { type: 'array', items: schemaRef(item) },
      has_more: { type: 'boolean', description: 'More items follow the last one of `data`.' },
    },
  });

  const schemas: Record<string, Schema> = {
    ErrorType: { type: 'string', enum: [...ERROR_TYPES] },
    ErrorCode: {
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: Object.entries(ERROR_CODES).map(([code, e]) => `- \`${code}\` — ${e.status} ${e.type}: ${e.when}`).join('\n'),
    },
    Error: {
      type: 'object',
      description: 'Every error the gateway itself makes. (A provider\'s own error responses pass through the proxy unchanged, in the provider\'s shape.)',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: {
          type: 'object',
          required: ['type', 'code', 'message'],
          additionalProperties: false,
          properties: {
            type: schemaRef('ErrorType'),
            code: schemaRef('ErrorCode'),
            message: { type: 'string', description: 'For humans; never holds a key or a token.' },
            param: { type: 'string', description: 'The field, query parameter or header at fault, when there is one.' },
          },
        },
      },
    },
    Provider: { type: 'string', enum: providers, description: 'A provider loaded on this gateway (one file in `providers/`).' },
    Ttl: {
      type: 'string',
      pattern: '^[1-9][0-9]*[smhd]$',
      description: 'A positive integer without leading zeros and one unit of `s m h d`, at most KEYWARD_MAX_TTL (default `30d`).',
      examples: ['30s', '15m', '12h', '7d'],
    },
    ModelsScope: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z0-9._:/@+-]{1,200}\\*?$|^\\*$' },
      description: 'Exact model names or `prefix*`, checked against the body\'s `model` (or Gemini\'s path segment); else 403 `model_not_allowed`.',
      examples: [['gpt-4o-mini', 'claude-3-5-*']],
    },
    PathsScope: {
      type: 'array',
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z0-9._~:{}/-]{1,512}\\*?$' },
      description: 'Provider path patterns (as in its allow-list, or `prefix*`), each within the provider\'s allow-list; else 403 `path_not_allowed`. A route that reads or changes what the whole provider account shares (batches, stored responses, files, balance…) is reached only when a pattern names it exactly (its pattern, or one concrete path of it), never by `prefix*` nor without `paths`.',
      examples: [['v1/chat/completions']],
    },
    MaxRequestsScope: { type: 'integer', minimum: 1, maximum: 1_000_000_000, description: 'Lifetime request cap, exact under concurrency; then 429 `token_exhausted`.' },
    RateLimitScope: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Requests per minute (token bucket, per instance); then 429 `rate_limited`.' },
    UsageCounts: usageCounts,
    OrgCreate: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: { name: { type: 'string', minLength: 1, maxLength: 100, pattern: "^[\\p{L}\\p{N}][\\p{L}\\p{N} ._'&()-]{0,99}$", description: 'Letters, digits, spaces or `._\'&()-`, starting with a letter or digit.' } },
    },
    Organization: {
      type: 'object',
      description: 'A new organisation. `token` is shown here once and never again (absent from an idempotent replay).',
      required: ['id', 'object', 'name', 'created_at'],
      additionalProperties: false,
      properties: {
        id: id('org', 'The organisation\'s id.'),
        object: { const: 'organization' },
        name: { type: 'string' },
        token: secret('otok', 'The organisation token: `Authorization: Bearer otok_…` on the admin API. Shown once.'),
        created_at: TIME,
      },
    },
    OrgTokenRotate: {
      type: 'object',
      additionalProperties: false,
      properties: { grace_s: { type: 'integer', minimum: 0, maximum: 2_592_000, default: 0, description: 'Seconds the current token keeps working.' } },
    },
    OrgTokenRotated: {
      type: 'object',
      description: 'The new organisation token, shown once (absent from an idempotent replay).',
      required: ['id', 'object', 'token_id'],
      additionalProperties: false,
      properties: {
        id: id('org', 'The organisation\'s id.'),
        object: { const: 'organization' },
        token: secret('otok', 'The new organisation token. Shown once.'),
        token_id: id('otk', 'The new token\'s id (the `actor` in audit events).'),
      },
    },
    CredentialCreate: {
      type: 'object',
      required: ['provider', 'api_key'],
      additionalProperties: false,
      properties: {
        provider: schemaRef('Provider'),
        api_key: { type: 'string', pattern: '^[\\x21-\\x7e]{8,4096}$', writeOnly: true, description: 'The provider key: 8 to 4096 printable characters without spaces. Stored encrypted, never shown again.' },
        ...credentialFieldProperties,
      },
    },
    CredentialRotate: {
      type: 'object',
      required: ['api_key'],
      additionalProperties: false,
      properties: { api_key: { type: 'string', pattern: '^[\\x21-\\x7e]{8,4096}$', writeOnly: true, description: 'The new provider key; its tokens keep working with it at once.' } },
    },
    Credential: {
      type: 'object',
      description: 'A stored provider key (never the key itself). `usage` on GET /v1/credentials/{id} only.',
      required: ['id', 'object', 'provider', 'key_hint', 'created_at', 'updated_at'],
      additionalProperties: false,
      properties: {
        id: id('cred', 'The credential\'s id.'),
        object: { const: 'credential' },
        provider: schemaRef('Provider'),
        key_hint: { type: 'string', pattern: '^…[\\x21-\\x7e]{4}$', description: '"…" and the key\'s last 4 characters.', examples: ['…wxyz'] },
        created_at: TIME,
        updated_at: TIME,
        usage: schemaRef('UsageCounts'),
        ...credentialFieldProperties,
      },
    },
    CredentialList: list('Credential', 'Credentials.'),
    CredentialDeleted: {
      type: 'object',
      required: ['id', 'object', 'deleted'],
      additionalProperties: false,
      properties: { id: { type: 'string' }, object: { const: 'credential' }, deleted: { const: true } },
    },
    TokenCreate: {
      type: 'object',
      required: ['credential_id', 'ttl'],
      additionalProperties: false,
      properties: {
        credential_id: { type: 'string', minLength: 1, description: 'A stored credential of this organisation (else 404).' },
        ttl: schemaRef('Ttl'),
        models: schemaRef('ModelsScope'),
        paths: schemaRef('PathsScope'),
        max_requests: schemaRef('MaxRequestsScope'),
        rate_limit: schemaRef('RateLimitScope'),
      },
    },
    Token: {
      type: 'object',
      description: 'A proxy token (never its value). Scope fields appear when set; `usage` on GET /v1/tokens/{id} only.',
      required: tokenRequired,
      additionalProperties: false,
      properties: { ...tokenProperties, usage: schemaRef('UsageCounts') },
    },
    TokenCreated: {
      type: 'object',
      description: 'A new proxy token. `token` is shown here once and never again (absent from an idempotent replay).',
      required: tokenRequired,
      additionalProperties: false,
      properties: { ...tokenProperties, token: secret('ptok', 'The proxy token: `X-Proxy-Token: ptok_…` (or an SDK\'s `apiKey`). Shown once.') },
    },
    TokenList: list('Token', 'Proxy tokens.'),
    TokenRevoked: {
      type: 'object',
      required: ['id', 'object', 'revoked'],
      additionalProperties: false,
      properties: { id: { type: 'string' }, object: { const: 'token' }, revoked: { const: true } },
    },
    Usage: {
      type: 'object',
      required: ['object', 'period', 'proxy_requests', 'credentials', 'tokens'],
      additionalProperties: false,
      properties: {
        object: { const: 'usage' },
        period: { type: 'string', pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'The calendar month (UTC).', examples: ['2026-11'] },
        proxy_requests: {
          type: 'object',
          required: ['used', 'limit'],
          additionalProperties: false,
          description: 'Forwarded proxy requests this month against KEYWARD_FREE_PROXY_REQUESTS (may lag a few seconds across instances, never past the limit).',
          properties: { used: count, limit: count },
        },
        credentials: {
          type: 'object',
          required: ['used', 'limit'],
          additionalProperties: false,
          description: 'Stored credentials against KEYWARD_FREE_CREDENTIALS.',
          properties: { used: count, limit: count },
        },
        tokens: {
          type: 'object',
          required: ['input', 'output'],
          additionalProperties: false,
          description: 'Provider tokens this month, from the providers\' `usage`.',
          properties: { input: count, output: count },
        },
      },
    },
    AuditEvent: {
      type: 'object',
      description: 'One audit record. Never a secret. A change is one record; refusals (`outcome` `denied`) are one record per organisation, action, address and minute, with their `count` (its time, request id, actor and target are the minute\'s first). Records are listed for `KEYWARD_AUDIT_RETENTION_DAYS`.',
      required: ['id', 'object', 'time', 'request_id', 'org', 'actor', 'action', 'target', 'outcome', 'ip', 'count'],
      additionalProperties: false,
      properties: {
        id: id('evt', 'The event\'s id.'),
        object: { const: 'audit_event' },
        time: TIME,
        request_id: { type: 'string', description: 'The `x-request-id` / `x-keyward-request-id` of the request.' },
        org: { type: 'string', description: 'The organisation\'s id.' },
        actor: { type: 'string', description: 'A token id (`otk_…`, `tok_…`), `admin`, `cli` or `anonymous`.' },
        action: {
          type: 'string',
          description: 'What was done.',
          examples: ['org.create', 'org.token_rotate', 'credential.create', 'credential.rotate', 'credential.delete', 'token.create', 'token.revoke', 'auth.failed', 'quota.refused', 'admin.rate_limited'],
        },
        target: { type: 'string', description: 'The id (or path) acted on.' },
        outcome: { enum: ['success', 'failure', 'denied'] },
        ip: { type: 'string', description: 'The caller\'s address (`*`: refusals from more addresses at once than the gateway counts apart).' },
        count: { type: 'integer', minimum: 1, description: 'How many events the record stands for: 1 for a change, the minute\'s total for a refusal.' },
      },
    },
    AuditList: list('AuditEvent', 'Audit events.'),
    Health: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { enum: ['ok', 'ready', 'draining', 'unavailable'] } } },
  };

  const parameters: Record<string, ParameterObject> = {
    Id: { name: 'id', in: 'path', required: true, description: 'An id from a create or list response.', schema: { type: 'string', pattern: '^[A-Za-z0-9_]{1,64}$' } },
    Limit: { name: 'limit', in: 'query', required: false, description: 'Page size.', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
    StartingAfter: {
      name: 'starting_after',
      in: 'query',
      required: false,
      description: 'The last id of the previous page; an unknown id → 400 `invalid_request`.',
      schema: { type: 'string', pattern: '^[A-Za-z0-9_]{1,64}$' },
    },
    IdempotencyKey: {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Retry safely: the same key and body within 24 h answers the first response again with `idempotent-replayed: true` (a secret shown once is left out); another body → 409 `idempotency_conflict`.',
      schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
    },
    ProxyPath: {
      name: 'path',
      in: 'path',
      required: true,
      description: 'The provider\'s own API path, slashes included, exactly as on the provider\'s API (`v1/chat/completions` for OpenAI, `v1/messages` for Anthropic, `v1beta/models/{model}:streamGenerateContent` for Gemini). The query string is forwarded too. It must be on the provider\'s allow-list (and the token\'s `paths`); it is decoded and normalised once, and anything that could leave the origin is refused with 403 `path_not_allowed`.',
      schema: { type: 'string', examples: ['v1/chat/completions'] },
    },
  };

  const headers: Record<string, HeaderObject> = {
    XRequestId: { description: 'This request\'s id (`req_…`), also in the logs and audit events.', schema: { type: 'string', pattern: '^req_[0-9a-f]{32}$' } },
    XKeywardRequestId: {
      description: 'The gateway\'s request id on a proxied response (`x-request-id`, if any, is the provider\'s own and passes through).',
      required: true,
      schema: { type: 'string', pattern: '^req_[0-9a-f]{32}$' },
    },
    XKeywardQuotaRemaining: { description: 'Proxy requests left this month for the organisation after this one.', schema: { type: 'integer', minimum: 0 } },
    IdempotentReplayed: { description: '`true` when this is a stored first response replayed for the same Idempotency-Key and body.', schema: { const: 'true' } },
    RetryAfter: { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
    WwwAuthenticate: { description: 'The scheme expected: `Bearer`.', schema: { type: 'string' } },
  };

  const proxyErrors: Record<string, ResponseObject> = {
    '400': errorResponse(['invalid_request', 'bad_request'], 'Malformed HTTP, or a token limited to `models` with a body that is not a JSON object, or that names `model` twice (a case variant such as `Model` included).', { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
    '401': errorResponse(['invalid_token'], undefined, { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
    '403': errorResponse(['path_not_allowed', 'model_not_allowed'], 'Outside the provider\'s allow-list or the token\'s scopes; nothing was sent and nothing counted.', { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
    '413': errorResponse(['payload_too_large'], 'The body is over KEYWARD_MAX_BODY (by `content-length`, before any upstream byte; a chunked body that grows past it is cut off).', { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
    '429': errorResponse(['quota_exceeded', 'token_exhausted', 'rate_limited', 'too_many_failures'], undefined, { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId'), ...RETRY_AFTER }),
    '500': errorResponse(['internal']),
    '502': errorResponse(['upstream_unreachable'], undefined, { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
    '503': errorResponse(['unavailable', 'overloaded'], undefined, { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId'), ...RETRY_AFTER }),
    '504': errorResponse(['upstream_timeout'], undefined, { 'x-keyward-request-id': ref('headers', 'XKeywardRequestId') }),
  };
  // The gateway's own errors carry the x-request-id of the admin API only; proxy errors carry x-keyward-request-id.
  for (const r of Object.values(proxyErrors)) delete r.headers?.['x-request-id'];

  const proxyOperation = (method: 'get' | 'post' | 'delete'): OperationObject => ({
    operationId: `proxy${method[0]!.toUpperCase()}${method.slice(1)}`,
    summary: `${method.toUpperCase()} the provider's API through the gateway`,
    description: [
      'The token\'s credential picks the provider; the upstream URL is the provider\'s origin + `/{path}` + the query string.',
      'So an SDK\'s base URL is `<gateway>/v1/proxy` + the provider\'s own base path (`…/v1/proxy/v1` for OpenAI, `…/v1/proxy` for Anthropic and Gemini), with `apiKey = ptok_…`.',
      'Order of checks: token (401) → path and scopes (403) → body size (413) → other plugins → quota (429). A request counts against the quota once forwarded.',
      'Every caller credential, hop-by-hop and `Forwarded`/`X-Forwarded-*` header is removed and the stored key injected; the response streams back unbuffered (SSE included), status, headers and body as the provider sent them, with the stored key\'s bytes masked by `*` if they ever appear. Redirects are passed back, never followed.',
    ].join('\n\n'),
    tags: ['proxy'],
    security: proxySecurity,
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
        headers: {
          'x-keyward-request-id': ref('headers', 'XKeywardRequestId'),
          'x-keyward-quota-remaining': ref('headers', 'XKeywardQuotaRemaining'),
        },
        content: { 'application/json': { schema: {} }, 'text/event-stream': { schema: { type: 'string' } }, '*/*': { schema: {} } },
      },
      ...proxyErrors,
    },
  });

  const listParams = [ref('parameters', 'Limit'), ref('parameters', 'StartingAfter')];
  const idParam = [ref('parameters', 'Id')];
  const idem = [ref('parameters', 'IdempotencyKey')];

  const paths: Record<string, PathItemObject> = {
    '/v1/orgs': {
      post: {
        operationId: 'createOrg',
        summary: 'Create an organisation',
        description: 'With the operator\'s token (`KEYWARD_ADMIN_TOKEN`). Answers the organisation token once. (`npx keyward org create <name>` does the same on the store.)',
        tags: ['organisations'],
        security: ADMIN,
        parameters: idem,
        requestBody: body('OrgCreate', 'The organisation.', true, { name: 'acme' }),
        responses: { ...ok('201', 'The organisation and its token (shown once).', 'Organization', { replay: true }), ...adminErrors({ auth: 'admin', body: true, idempotent: true }) },
      },
    },
    '/v1/orgs/self/token/rotate': {
      post: {
        operationId: 'rotateOrgToken',
        summary: 'Rotate the calling organisation\'s token',
        description: 'Answers a new `otok_…` once; the current token keeps working `grace_s` more seconds (a token already retiring never gets longer). Only a token that is not retiring may call this.',
        tags: ['organisations'],
        security: ORG,
        parameters: idem,
        requestBody: body('OrgTokenRotate', 'Optional; `grace_s` defaults to 0.', false, { grace_s: 300 }),
        responses: { ...ok('200', 'The new organisation token (shown once).', 'OrgTokenRotated', { replay: true }), ...adminErrors({ auth: 'org', body: true, idempotent: true, extra403: ['token_retiring'] }) },
      },
    },
    '/v1/credentials': {
      post: {
        operationId: 'createCredential',
        summary: 'Store a provider key',
        description: 'Encrypted with a fresh data key; never shown again.',
        tags: ['credentials'],
        security: ORG,
        parameters: idem,
        requestBody: body('CredentialCreate', 'The provider and its key.', true, { provider: providers.includes('openai') ? 'openai' : providers[0], api_key: 'sk-…' }),
        responses: {
          ...ok('201', 'The stored credential.', 'Credential', { replay: true }),
          ...adminErrors({ auth: 'org', body: true, idempotent: true, extra400: ['unknown_provider'], extra403: ['limit_exceeded'] }),
        },
      },
      get: {
        operationId: 'listCredentials',
        summary: 'List credentials',
        tags: ['credentials'],
        security: ORG,
        parameters: listParams,
        responses: { ...ok('200', 'A page of credentials, newest first.', 'CredentialList'), ...adminErrors({ auth: 'org' }) },
      },
    },
    '/v1/credentials/{id}': {
      get: {
        operationId: 'getCredential',
        summary: 'Get a credential, with its usage',
        tags: ['credentials'],
        security: ORG,
        parameters: idParam,
        responses: { ...ok('200', 'The credential with `usage`.', 'Credential'), ...adminErrors({ auth: 'org', notFound: true }) },
      },
      delete: {
        operationId: 'deleteCredential',
        summary: 'Delete a credential and its tokens',
        description: 'Takes effect at once on this instance, within a second on every other; a second DELETE → 404.',
        tags: ['credentials'],
        security: ORG,
        parameters: idParam,
        responses: { ...ok('200', 'Deleted.', 'CredentialDeleted'), ...adminErrors({ auth: 'org', notFound: true }) },
      },
    },
    '/v1/credentials/{id}/rotate': {
      post: {
        operationId: 'rotateCredential',
        summary: 'Replace a credential\'s key in place',
        description: 'Its tokens keep working, with the new key.',
        tags: ['credentials'],
        security: ORG,
        parameters: [...idParam, ...idem],
        requestBody: body('CredentialRotate', 'The new key.', true, { api_key: 'sk-…' }),
        responses: { ...ok('200', 'The credential with its new `key_hint`.', 'Credential', { replay: true }), ...adminErrors({ auth: 'org', body: true, idempotent: true, notFound: true }) },
      },
    },
    '/v1/tokens': {
      post: {
        operationId: 'createToken',
        summary: 'Mint a proxy token',
        description: 'A short-lived `ptok_…` for one credential, with optional scopes. Shown once.',
        tags: ['tokens'],
        security: ORG,
        parameters: idem,
        requestBody: body('TokenCreate', 'The credential, the lifetime and optional scopes.', true, { credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY', ttl: '15m', models: ['gpt-4o-mini'], max_requests: 100 }),
        responses: {
          ...ok('201', 'The token (its value shown once).', 'TokenCreated', { replay: true }),
          ...adminErrors({ auth: 'org', body: true, idempotent: true, notFound: true, extra400: ['invalid_ttl', 'invalid_scope', 'unknown_provider'] }),
        },
      },
      get: {
        operationId: 'listTokens',
        summary: 'List proxy tokens',
        tags: ['tokens'],
        security: ORG,
        parameters: listParams,
        responses: { ...ok('200', 'A page of tokens, newest first (never a token value).', 'TokenList'), ...adminErrors({ auth: 'org' }) },
      },
    },
    '/v1/tokens/{id}': {
      get: {
        operationId: 'getToken',
        summary: 'Get a proxy token, with its usage',
        tags: ['tokens'],
        security: ORG,
        parameters: idParam,
        responses: { ...ok('200', 'The token with `usage`.', 'Token'), ...adminErrors({ auth: 'org', notFound: true }) },
      },
      delete: {
        operationId: 'revokeToken',
        summary: 'Revoke a proxy token',
        description: 'Takes effect at once on this instance, within a second on every other; later GET or DELETE → 404.',
        tags: ['tokens'],
        security: ORG,
        parameters: idParam,
        responses: { ...ok('200', 'Revoked.', 'TokenRevoked'), ...adminErrors({ auth: 'org', notFound: true }) },
      },
    },
    '/v1/usage': {
      get: {
        operationId: 'getUsage',
        summary: 'This month\'s usage against the free tier',
        tags: ['usage'],
        security: ORG,
        responses: { ...ok('200', 'Usage.', 'Usage'), ...adminErrors({ auth: 'org' }) },
      },
    },
    '/v1/audit': {
      get: {
        operationId: 'listAuditEvents',
        summary: 'The organisation\'s audit trail',
        tags: ['usage'],
        security: ORG,
        parameters: listParams,
        responses: { ...ok('200', 'A page of audit events, newest first.', 'AuditList'), ...adminErrors({ auth: 'org' }) },
      },
    },
    '/v1/proxy/{path}': {
      parameters: [ref('parameters', 'ProxyPath')],
      get: proxyOperation('get'),
      post: proxyOperation('post'),
      delete: proxyOperation('delete'),
    },
    '/healthz': {
      get: {
        operationId: 'health',
        summary: 'Liveness',
        tags: ['operations'],
        security: NONE,
        responses: { '200': { description: 'The process serves.', content: json(schemaRef('Health'), { status: 'ok' }) } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'ready',
        summary: 'Readiness',
        tags: ['operations'],
        security: NONE,
        responses: {
          '200': { description: 'The store and the key wrapper answer (a result at most 2 s old, shared by concurrent probes).', content: json(schemaRef('Health'), { status: 'ready' }) },
          '503': { description: 'The store or the key wrapper does not answer (`unavailable`), or the instance is shutting down (`draining`).', content: json(schemaRef('Health'), { status: 'unavailable' }) },
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'metrics',
        summary: 'Prometheus metrics',
        tags: ['operations'],
        security: NONE,
        description: 'With `KEYWARD_METRICS_TOKEN` set, only with `Authorization: Bearer <KEYWARD_METRICS_TOKEN>`.',
        responses: {
          '200': { description: 'Prometheus text exposition format.', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': errorResponse(['unauthenticated'], 'KEYWARD_METRICS_TOKEN is set and was not presented.', { 'www-authenticate': ref('headers', 'WwwAuthenticate') }),
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'openapi',
        summary: 'This document',
        tags: ['operations'],
        security: NONE,
        responses: { '200': { description: 'The OpenAPI 3.1 document.', headers: { 'x-request-id': ref('headers', 'XRequestId') }, content: json({ type: 'object' }) } },
      },
    },
  };

  const proxyKeyHelp = 'Accepted where official SDKs put their key, so `apiKey = ptok_…` works unchanged. If `X-Proxy-Token` is present it wins; a repeated credential header is refused.';
  const securitySchemes: Record<string, SecuritySchemeObject> = {
    orgToken: { type: 'http', scheme: 'bearer', bearerFormat: 'otok_…', description: 'The organisation token from POST /v1/orgs or `npx keyward org create`: `Authorization: Bearer otok_…`.' },
    adminToken: { type: 'http', scheme: 'bearer', description: 'The operator\'s token, the value of KEYWARD_ADMIN_TOKEN (POST /v1/orgs only).' },
    proxyToken: { type: 'apiKey', in: 'header', name: 'X-Proxy-Token', description: 'A proxy token `ptok_…` from POST /v1/tokens.' },
    proxyBearer: { type: 'http', scheme: 'bearer', bearerFormat: 'ptok_…', description: `\`Authorization: Bearer ptok_…\` (OpenAI-style SDKs). ${proxyKeyHelp}` },
    proxyApiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: `\`x-api-key: ptok_…\` (Anthropic SDKs). ${proxyKeyHelp}` },
    proxyGoogApiKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key', description: `\`x-goog-api-key: ptok_…\` (Google AI SDKs). ${proxyKeyHelp}` },
  };
  for (const q of queryParams) {
    securitySchemes[`proxyQuery_${q}`] = { type: 'apiKey', in: 'query', name: q, description: `\`?${q}=ptok_…\`, a credential query parameter a provider declares (Gemini's \`key\`). ${proxyKeyHelp}` };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Keyward',
      version: '0.1.0',
      summary: 'A credential vault and streaming proxy for LLM provider keys.',
      description: [
        'Store provider keys once, encrypted; mint short-lived proxy tokens (`ptok_…`) for agents; callers send requests through `/v1/proxy/…` and never see a real key.',
        'Admin bodies are JSON; times are RFC 3339 UTC with milliseconds; lists are newest first, paged with `limit` (1–100, default 20) and `starting_after`, and answer `{"object":"list","data":[…],"has_more":…}`.',
        'Every error the gateway itself makes is `{"error":{"type","code","message","param?"}}` (see the `ErrorCode` schema). Admin responses carry `x-request-id`; proxied responses add `x-keyward-request-id` and `x-keyward-quota-remaining` to the provider\'s own headers.',
      ].join('\n\n'),
    },
    servers: [{ url: '/', description: 'This gateway.' }],
    tags: [
      { name: 'organisations', description: 'Organisations and their tokens.' },
      { name: 'credentials', description: 'Stored provider keys (org token).' },
      { name: 'tokens', description: 'Short-lived proxy tokens (org token).' },
      { name: 'usage', description: 'Usage and the audit trail (org token).' },
      { name: 'proxy', description: 'The providers\' own APIs through the gateway (proxy token).' },
      { name: 'operations', description: 'Health, readiness, metrics and this document (no token).' },
    ],
    paths,
    components: { schemas, parameters, headers, securitySchemes },
  };
}
