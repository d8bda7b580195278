/**
 * The admin API's routes: `/v1/credentials/:id` style patterns, each declaring
 * who may call it (`org` token, the operator's `admin` token, or `none`),
 * whether it is idempotent-capable (POSTs), and the audit action it performs.
 * Handlers are thin and return a Reply; the AdminPipeline does the rest.
 */
import type { IncomingMessage } from 'node:http';
import type { OrgRecord } from '../store/ports.js';

export type Principal =
  | { kind: 'org'; org: OrgRecord; actor: string }
  | { kind: 'admin'; actor: 'admin' }
  | { kind: 'none' };

export interface AdminRequest {
  req: IncomingMessage;
  params: Record<string, string>;
  query: URLSearchParams;
  requestId: string;
  ip: string;
  principal: Principal;
  /** The JSON body, read once within KEYWARD_MAX_BODY (undefined when empty). */
  body(): Promise<unknown>;
}

export interface Reply {
  status: number;
  body: unknown;
  /** The audit record's target, when it is not the path's or the reply's `id`. */
  target?: string;
  /** The organisation an `admin` action concerns (the one it created). */
  org?: string;
  /** Fields of `body` never stored for an idempotent replay (secrets shown once). */
  secretFields?: string[];
}

export type Handler = (r: AdminRequest) => Promise<Reply>;

export interface RouteSpec {
  auth: 'org' | 'admin' | 'none';
  /** Audit action, e.g. `credential.create`; reads are not audited. */
  action?: string;
  /** Honours an Idempotency-Key header (Stripe's semantics). */
  idempotent?: boolean;
}

export interface Route extends RouteSpec {
  method: string;
  pattern: string;
  segments: string[];
  handler: Handler;
}

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, spec: RouteSpec, handler: Handler): void {
    this.routes.push({ ...spec, method, pattern, segments: pattern.split('/').filter(Boolean), handler });
  }

  /** Every registered method + pattern (the OpenAPI test checks each is documented). */
  list(): Array<{ method: string; pattern: string }> {
    return this.routes.map((r) => ({ method: r.method, pattern: r.pattern }));
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
          if (!/^[A-Za-z0-9_]{1,64}$/.test(parts[i]!)) ok = false;
          else params[seg.slice(1)] = parts[i]!;
        } else if (seg !== parts[i]) ok = false;
      }
      if (ok) return { route: r, params };
    }
    return undefined;
  }
}
