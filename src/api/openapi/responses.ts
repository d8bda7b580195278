/**
 * The document's responses, headers and shared parameters. Error responses are derived from the
 * error catalogue (src/errors.ts): a route names the codes it can answer, each lands under its own
 * status with the catalogue's type and "when" line, and its body is the Error schema narrowed to them.
 */
import { ERROR_CATALOGUE, type ErrorCode } from '../../errors.js';
import type { Route } from '../../http/router.js';
import { PATH_PARAM } from '../../http/router.js';
import type { JsonSchema } from './json-schema.js';

export interface Ref {
  $ref: string;
}

export interface HeaderObject {
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface ParameterObject {
  name: string;
  in: 'path' | 'query' | 'header';
  description: string;
  required?: boolean;
  schema: JsonSchema;
}

export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject | Ref>;
  content?: Record<string, { schema: JsonSchema; example?: unknown }>;
}

export const ref = (kind: 'schemas' | 'parameters' | 'headers', name: string): Ref => ({ $ref: `#/components/${kind}/${name}` });

export const HEADERS: Record<string, HeaderObject> = {
  XRequestId: { description: 'This request\'s id (`req_…`), also in the logs and audit events.', schema: { type: 'string', pattern: '^req_[0-9a-f]{32}$' } },
  XKeywardRequestId: {
    description: 'The gateway\'s request id on a proxied response (`x-request-id`, if any, is the provider\'s own and passes through).',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9a-f]{32}$' },
  },
  XKeywardQuotaRemaining: { description: 'Proxy requests left this month for the organisation after this one.', schema: { type: 'integer', minimum: 0 } },
  IdempotentReplayed: { description: '`true` when this is a stored first response replayed for the same Idempotency-Key and body.', schema: { const: 'true' } },
  RetryAfter: { description: 'Seconds to wait before retrying.', required: true, schema: { type: 'string', pattern: '^[0-9]+$' } },
  WwwAuthenticate: { description: 'The scheme expected: `Bearer` (the proxy: `Bearer realm="keyward"`).', schema: { type: 'string' } },
};

/** Parameters every route may use; a route's query parameters are added from its query schema. */
export const PARAMETERS: Record<string, ParameterObject> = {
  Id: { name: 'id', in: 'path', required: true, description: 'An id from a create or list response.', schema: { type: 'string', pattern: PATH_PARAM.source } },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: 'Retry safely: the same key and body within 24 h answers the first response again with `idempotent-replayed: true` (a secret shown once is left out); another body → 409 `idempotency_conflict`.',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
  },
};

export const RETRY_AFTER = { 'retry-after': ref('headers', 'RetryAfter') };

/** One error response: the Error shape narrowed to the codes that can answer here, each described. */
export function errorResponse(codes: readonly ErrorCode[], description = 'Refused by the gateway.', headers: Record<string, HeaderObject | Ref> = { 'x-request-id': ref('headers', 'XRequestId') }): ResponseObject {
  const lines = codes.map((c) => `- \`${c}\` (${ERROR_CATALOGUE[c].type}): ${ERROR_CATALOGUE[c].when}`);
  const first = codes[0]!;
  return {
    description: `${description}\n\n${lines.join('\n')}`,
    headers,
    content: {
      'application/json': {
        schema: {
          allOf: [
            ref('schemas', 'Error'),
            { type: 'object', properties: { error: { type: 'object', properties: { code: { enum: [...codes] }, type: { enum: [...new Set(codes.map((c) => ERROR_CATALOGUE[c].type))] } } } } },
          ],
        },
        example: { error: { type: ERROR_CATALOGUE[first].type, code: first, message: '…' } },
      },
    },
  };
}

/** Why an admin route answers a status, in a line above its codes. */
function statusDescription(status: number, auth: Route['auth']): string | undefined {
  switch (status) {
    case 400: return 'A bad body, field or query parameter (`param` names it when it can), or malformed HTTP.';
    case 401: return auth === 'admin'
      ? 'No valid operator token (`Authorization: Bearer <KEYWARD_ADMIN_TOKEN>`), or none is configured.'
      : 'No valid organisation token or admin key (`Authorization: Bearer otok_…`).';
    case 403: return auth === 'org' ? 'The caller\'s role may not do this (`x-keyward-roles` lists who may), or another refusal below.' : undefined;
    case 404: return 'No such id in this organisation (another organisation\'s ids answer the same).';
    case 429: return auth === 'org'
      ? 'The organisation\'s admin rate (KEYWARD_ADMIN_RATE per minute), or this IP is cooling down after failed authentications.'
      : 'This IP is cooling down after failed authentications.';
    default: return undefined;
  }
}

/** An OAuth token endpoint's refusals (RFC 6749 §5.2's shape, `schema`): 400 for a request or grant that does not fit, 413, 429, 5xx. */
export function oauthErrorResponses(schema: JsonSchema): Record<string, ResponseObject> {
  const headers = { 'x-request-id': ref('headers', 'XRequestId') };
  const body = (error: string) => ({ 'application/json': { schema, example: { error, error_description: '…' } } });
  return {
    '400': { description: '`invalid_grant`: the subject token did not verify, or no trust policy matches it (or the one `policy_id` names). `invalid_request` / `unsupported_grant_type`: a malformed request.', headers, content: body('invalid_grant') },
    '413': { description: '`invalid_request`: the body is over KEYWARD_MAX_ADMIN_BODY.', headers, content: body('invalid_request') },
    '429': { description: '`temporarily_unavailable`: too many exchanges from this address (KEYWARD_ADMIN_RATE a minute).', headers: { ...headers, ...RETRY_AFTER }, content: body('temporarily_unavailable') },
    '500': { description: '`server_error`.', headers, content: body('server_error') },
    '503': { description: '`temporarily_unavailable`: the store is down.', headers: { ...headers, ...RETRY_AFTER }, content: body('temporarily_unavailable') },
  };
}

/** Every error response of an admin route: its own codes, and those the admin pipeline can answer on any route. */
export function adminErrorResponses(route: Route): Record<string, ResponseObject> {
  const codes: ErrorCode[] = ['invalid_request', ...(route.errors ?? []), 'bad_request'];
  if (route.auth !== 'none') codes.push('unauthenticated');
  if (route.idempotent) codes.push('idempotency_conflict');
  if (route.body) codes.push('payload_too_large');
  if (route.auth === 'org') codes.push('rate_limited', 'forbidden');
  codes.push('too_many_failures', 'internal', 'unavailable');
  const byStatus = new Map<number, ErrorCode[]>();
  for (const c of new Set(codes)) {
    const status = ERROR_CATALOGUE[c].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), c]);
  }
  const responses: Record<string, ResponseObject> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const headers: Record<string, HeaderObject | Ref> = { 'x-request-id': ref('headers', 'XRequestId') };
    if (status === 401) headers['www-authenticate'] = ref('headers', 'WwwAuthenticate');
    if (status === 429 || status === 503) Object.assign(headers, RETRY_AFTER);
    responses[String(status)] = errorResponse(group, statusDescription(status, route.auth), headers);
  }
  return responses;
}
