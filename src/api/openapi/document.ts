/**
 * The OpenAPI 3.1 description of everything Keyward serves, generated once at start from the admin
 * route table (each route's body, query and response schemas, summary and error codes), the error
 * catalogue, and the loaded providers; plus the proxy and operational paths. Served at
 * GET /v1/openapi.json (no token). test/observability/openapi.test.ts checks that every registered
 * route and every error code is here, that the document is valid OpenAPI 3.1, and that real
 * responses match its schemas.
 */
import type { TSchema } from '@sinclair/typebox';
import type { Route } from '../../http/router.js';
import { rolesOf } from '../../vault/roles.js';
import { Health } from '../schemas/common.js';
import { ErrorBody } from '../schemas/errors.js';
import { OAuthErrorBody } from '../schemas/token-exchange.js';
import { SchemaComponents } from './json-schema.js';
import { otherPaths, securitySchemes, type Operation, type PathItem } from './operations.js';
import { mcpPaths } from './mcp-paths.js';
import { adminErrorResponses, HEADERS, oauthErrorResponses, PARAMETERS, ref, type ParameterObject, type Ref } from './responses.js';

export interface OpenApiOptions {
  /** The admin API's routes, with their specs (Router.all()). */
  routes: readonly Route[];
  /** Credential query parameters the providers declare (Gemini's `key`), accepted as a proxy token. */
  keyQueryParams: readonly string[];
  /** MCP authorization is on (KEYWARD_ISSUER_URL without a path): its routes, documents and page are served. */
  mcp?: boolean;
  /** Schemas to list under `components.schemas` even where no route refers to them (the loaded providers' `Provider`). */
  schemas?: readonly TSchema[];
}

/** `starting_after` → `StartingAfter`: the parameter's component name. */
const componentOf = (name: string): string => name.split('_').map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');

/** A body as JSON, and as a form too where the route takes forms (the same fields). */
function bodyContent(route: Route, schema: ReturnType<SchemaComponents['use']>) {
  return { 'application/json': { schema }, ...(route.forms ? { 'application/x-www-form-urlencoded': { schema } } : {}) };
}

export function openApiDocument(options: OpenApiOptions) {
  const components = new SchemaComponents();
  for (const s of [ErrorBody, ...(options.schemas ?? [])]) components.define(s);
  const parameters: Record<string, ParameterObject> = { ...PARAMETERS };
  const paths: Record<string, PathItem> = {};

  for (const route of options.routes) {
    const path = route.pattern.replace(/:([A-Za-z_]+)/g, '{$1}');
    const params: Ref[] = route.segments.filter((s) => s.startsWith(':')).map(() => ref('parameters', 'Id'));
    const query = route.query?.schema.properties as Record<string, TSchema> | undefined;
    const required = (route.query?.schema.required ?? []) as string[];
    for (const [name, schema] of Object.entries(query ?? {})) {
      const json = components.use(schema);
      const parameter: ParameterObject = { name, in: 'query', required: required.includes(name), description: String(json.description ?? name), schema: json };
      // One component per parameter name, unless two routes say different things about it (`from`'s default).
      const shared = parameters[componentOf(name)];
      const id = !shared || JSON.stringify(shared) === JSON.stringify(parameter) ? componentOf(name) : componentOf(`${route.operationId}_${name}`);
      parameters[id] = parameter;
      params.push(ref('parameters', id));
    }
    if (route.idempotent) params.push(ref('parameters', 'IdempotencyKey'));
    const { status, schema, description } = route.response;
    const operation: Operation = {
      operationId: route.operationId,
      summary: route.summary,
      ...(route.description ? { description: route.description } : {}),
      tags: [route.tag],
      security: route.auth === 'org' ? [{ orgToken: [] }] : route.auth === 'admin' ? [{ adminToken: [] }] : [],
      // Who may call it: the org token is `owner`, admin keys hold the others (anyone else → 403 `forbidden`).
      ...(route.auth === 'org' ? { 'x-keyward-roles': [...rolesOf(route.method, route.roles)] } : {}),
      ...(params.length ? { parameters: params } : {}),
      ...(route.body ? { requestBody: { required: !route.body.optional, content: bodyContent(route, components.use(route.body.schema)) } } : {}),
      responses: {
        [String(status)]: {
          description: route.idempotent ? `${description} An idempotent replay answers the first response again with \`idempotent-replayed: true\`, without any secret shown once.` : description,
          headers: { 'x-request-id': ref('headers', 'XRequestId'), ...(route.idempotent ? { 'idempotent-replayed': ref('headers', 'IdempotentReplayed') } : {}) },
          content: { 'application/json': { schema: components.use(schema) } },
        },
        ...(route.errorFormat === 'oauth' ? oauthErrorResponses(components.use(OAuthErrorBody)) : adminErrorResponses(route)),
      },
    };
    paths[path] = { ...paths[path], [route.method.toLowerCase()]: operation };
  }
  Object.assign(paths, otherPaths(options.keyQueryParams, components.use(Health)), options.mcp ? mcpPaths() : {});

  return {
    openapi: '3.1.0' as const,
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
      { name: 'pools', description: 'Credentials of one provider a pooled token spreads over, with failover (org token).' },
      { name: 'teams', description: 'Teams and members\' budgets: monthly budgets and tokens_per_minute nested between a token and its organisation (org token).' },
      { name: 'admin keys', description: 'Scoped admin keys: `admin`, `minter`, `viewer` (org token or an admin key; `x-keyward-roles` on each operation says who may call it).' },
      { name: 'usage', description: 'Usage and the audit trail (org token).' },
      { name: 'identity', description: 'Workload identity: trust policies (org token) and the OIDC token exchange (no token).' },
      { name: 'proxy', description: 'The providers\' own APIs through the gateway (proxy token).' },
      { name: 'mcp-authorization', description: 'Keyward\'s MCP routes and the OAuth 2.1 authorization server in front of them (with KEYWARD_ISSUER_URL).' },
      { name: 'operations', description: 'Health, readiness, metrics and this document (no token).' },
    ],
    paths,
    components: { schemas: components.schemas, parameters, headers: HEADERS, securitySchemes: securitySchemes(options.keyQueryParams) },
  };
}
