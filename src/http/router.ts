/** A small exact router for the admin API: `/v1/credentials/:id` style patterns. */
import type { IncomingMessage, ServerResponse } from 'node:http';

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  params: Record<string, string>;
  query: URLSearchParams;
  requestId: string;
  ip: string;
}

export type Handler = (ctx: RouteContext) => Promise<void>;

interface Route {
  method: string;
  segments: string[];
  pattern: string;
  handler: Handler;
}

export class Router {
  private readonly routes: Route[] = [];

  add(method: string, pattern: string, handler: Handler): void {
    this.routes.push({ method, pattern, segments: pattern.split('/').filter(Boolean), handler });
  }

  /** Every registered method + pattern (the OpenAPI test checks each is documented). */
  list(): Array<{ method: string; pattern: string }> {
    return this.routes.map((r) => ({ method: r.method, pattern: r.pattern }));
  }

  match(method: string, path: string): { handler: Handler; params: Record<string, string> } | undefined {
    const parts = path.split('/').filter(Boolean);
    if (path.includes('//')) return undefined;
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
      if (ok) return { handler: r.handler, params };
    }
    return undefined;
  }
}
