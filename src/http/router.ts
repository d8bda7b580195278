/**
 * The admin API's routes: `/v1/credentials/:id` style patterns, each declaring
 * who may call it (`org` token, the operator's `admin` token, or `none`; for
 * `org`, the roles allowed, by default those of its method: vault/roles.ts),
 * whether it is idempotent-capable (POSTs), the audit action it performs, and
 * its wire shapes: the body and query schemas it is validated against and the
 * response it documents. One registration is handler + validation + docs: the
 * OpenAPI document (src/api/openapi/) is generated from this table.
 * Handlers are thin and return a Reply; the AdminPipeline does the rest.
 */
import type { AuditAction } from '../controls/audit-actions.js';
import type { IncomingMessage } from 'node:http';
import type { Static, TSchema } from '@sinclair/typebox';
import type { ErrorCode } from '../errors.js';
import type { OrgRecord } from '../store/ports.js';
import type { Role } from '../vault/roles.js';

export type Principal =
  /**
   * `actor`: the org token's `otk_` id or the admin key's `akey_` id (the audit actor). `credentialIds`: a minter
   * limited to these. `expiresAt`: when the caller's own token ends (null: not before deletion or rotation);
   * `retiring`: an org token a rotation has given that end.
   */
  | {
    kind: 'org'; org: OrgRecord; actor: string; role: Role; credentialIds?: readonly string[]; expiresAt: number | null; retiring: boolean;
    /** A member signed in by single sign-on (`actor` is its `usr_` id): its session's hash and how it was presented. */
    session?: { hash: string; via: 'cookie' | 'bearer' };
  }
  | { kind: 'admin'; actor: 'admin' }
  | { kind: 'none' };

/** A body schema and the checker compiled from it once at start (src/api/schemas/validate.ts). */
export interface BodyContract<T> {
  readonly schema: TSchema;
  /** May be left out (an empty body means `{}`). */
  readonly optional?: boolean;
  /** The body as the schema says, or 400 naming the field at fault. */
  parse(value: unknown): T;
}

/** The query parameters' schema (a flat object) and its compiled checker. */
export interface QueryContract<T> {
  readonly schema: TSchema;
  parse(query: URLSearchParams): T;
}

export interface AdminRequest<B = unknown, Q = unknown> {
  req: IncomingMessage;
  params: Record<string, string>;
  /** The query parameters, checked against the route's query schema (none allowed without one). */
  query: Q;
  requestId: string;
  ip: string;
  principal: Principal;
  /** The JSON (or, where the route takes forms, form) body, read once within KEYWARD_MAX_ADMIN_BODY and checked against the route's body schema. */
  body(): Promise<B>;
}

export interface Reply<T = unknown> {
  status: number;
  /** Typed by the route's response schema: a view that drifts from the documented shape does not compile. */
  body: T;
  /** The audit record's target, when it is not the path's or the reply's `id`. */
  target?: string;
  /** The target's name for the audit record, when the reply's `name` is not it (a deletion's). */
  targetName?: string;
  /** The audit actor when the caller was not authenticated but became known (a sign-in's member). */
  actor?: string;
  /** The organisation an `admin` action concerns (the one it created). */
  org?: string;
  /** Response headers (a redirect's Location, a Set-Cookie). */
  headers?: Record<string, string | string[]>;
  /** Fields of `body` never stored for an idempotent replay (secrets shown once). */
  secretFields?: string[];
  /** A refusal answered as a redirect (a browser's sign-in sent to a page that explains it): no success is audited. */
  refusal?: true;
}

/** `any` by default: the route table holds handlers of every body and query type. */
export type Handler<B = any, Q = any, R = unknown> = (r: AdminRequest<B, Q>) => Promise<Reply<R>>;

export interface RouteSpec<B = unknown, Q = unknown, R extends TSchema = TSchema> {
  auth: 'org' | 'admin' | 'none';
  /** For `org` routes: who may call it (else 403 `forbidden`). Default: GET viewer and up, other methods admin and up. */
  roles?: readonly Role[];
  /** Audit action, e.g. `credential.create` (controls/audit-actions.ts); reads are not audited. */
  action?: AuditAction;
  /** Honours an Idempotency-Key header (Stripe's semantics). */
  idempotent?: boolean;
  body?: BodyContract<B>;
  query?: QueryContract<Q>;
  /** The OpenAPI operation: its id, tag, one-line summary and more when needed. */
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** The success response: status, schema and one line. */
  response: { status: number; schema: R; description: string };
  /** Codes this route answers beyond those every admin route can (invalid_request, unauthenticated, rate_limited…). */
  errors?: ErrorCode[];
  /** Also takes an `application/x-www-form-urlencoded` body (an OAuth endpoint's), checked against the same body schema. */
  forms?: boolean;
  /** `oauth`: refusals are sent as RFC 6749 §5.2's `{"error", "error_description"}` (toOAuthError), not the contract's shape. */
  errorFormat?: 'oauth';
}

export interface Route extends RouteSpec {
  method: string;
  pattern: string;
  segments: string[];
  handler: Handler;
}

/** What a `:name` segment of a route matches (an id). */
export const PATH_PARAM = /^[A-Za-z0-9_]{1,64}$/;

/** A route registered twice (the same method and path shape, whatever its `:names`): start-up stops. */
export class DuplicateRouteError extends Error {}

export class Router {
  private readonly routes: Route[] = [];
  /** `METHOD /v1/x/:` keys: every `:name` is one shape, so `/x/:id` and `/x/:key` are the same route. */
  private readonly shapes = new Set<string>();

  /** Registers a route; the same method and path shape a second time throws (one handler per route, never a silent shadow). */
  add<B = undefined, Q = Record<string, never>, R extends TSchema = TSchema>(method: string, pattern: string, spec: RouteSpec<B, Q, R>, handler: Handler<B, Q, NoInfer<Static<R>>>): void {
    const segments = pattern.split('/').filter(Boolean);
    const shape = `${method} /${segments.map((s) => (s.startsWith(':') ? ':' : s)).join('/')}`;
    if (this.shapes.has(shape)) throw new DuplicateRouteError(`route registered twice: ${method} ${pattern}`);
    this.shapes.add(shape);
    this.routes.push({ ...(spec as unknown as RouteSpec), method, pattern, segments, handler: handler as Handler });
  }

  /** Every registered method + pattern (the OpenAPI test checks each is documented). */
  list(): Array<{ method: string; pattern: string }> {
    return this.routes.map((r) => ({ method: r.method, pattern: r.pattern }));
  }

  /** Every route with its spec: what the OpenAPI document is generated from. */
  all(): readonly Route[] {
    return this.routes;
  }

  match(method: string, path: string): { route: Route; params: Record<string, string> } | undefined {
    if (path.includes('//')) return undefined;
    const parts = path.split('/').filter(Boolean);
    for (const r of this.routes) {
      if (r.method !== method || r.segments.length !== parts.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < parts.length && ok; i++) {
        const seg = r.segments[i]!;
        if (seg.startsWith(':')) {
          if (!PATH_PARAM.test(parts[i]!)) ok = false;
          else params[seg.slice(1)] = parts[i]!;
        } else if (seg !== parts[i]) ok = false;
      }
      if (ok) return { route: r, params };
    }
    return undefined;
  }
}
