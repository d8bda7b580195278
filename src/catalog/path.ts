/**
 * The provider path, decoded and normalised exactly once, then matched against
 * allow-list patterns. Anything that could change meaning between our check and
 * the provider's parser is refused rather than repaired: encoded slashes or
 * backslashes, double encoding, dot segments, empty segments (`//host`), and
 * any character outside the unreserved set. What is matched is what is sent.
 * One exception, narrow: a cloud resource id (a Bedrock inference-profile ARN)
 * carries `/` encoded as `%2F` inside one segment; normaliseResourcePath keeps
 * that `%2F` as it is, and only a route parameter declared in `resourceParams`
 * admits it (every other route still refuses such a path).
 */
import type { HttpMethod, ProviderRoute, WebSocketRoute } from './provider.js';

// `@` (a sub-delimiter, legal in a path segment) is in Vertex model versions: `claude-sonnet-4@20250514`;
// never first in a segment, so nothing reads like `user@host`.
const SEGMENT = /^[A-Za-z0-9._~:-][A-Za-z0-9._~:@-]*$/;
const RAW = /^[A-Za-z0-9._~:@%/-]*$/;

/**
 * `raw` is the request path after `/v1/proxy/` and before `?`. Returns the clean path, or undefined to refuse.
 * One trailing slash is kept (GitHub's remote MCP server lives at `mcp/`); a route names it or the path is refused.
 */
export function normaliseProviderPath(raw: string): string | undefined {
  if (raw.endsWith('/')) {
    const inner = raw.endsWith('//') ? undefined : normaliseProviderPath(raw.slice(0, -1));
    return inner === undefined ? undefined : `${inner}/`;
  }
  if (raw.length === 0 || raw.length > 2048 || !RAW.test(raw)) return undefined;
  // Nothing encoded (the usual path): decoding is the identity, so the segments are checked as they are.
  if (!raw.includes('%')) return segmentsValid(raw.split('/')) ? raw : undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  // A `%` left after one decode was double-encoded; an encoded `/` would hide a segment boundary.
  if (decoded.includes('%') || decoded.split('/').length !== raw.split('/').length) return undefined;
  const segments = decoded.split('/');
  return segmentsValid(segments) ? segments.join('/') : undefined;
}

function segmentsValid(segments: readonly string[]): boolean {
  for (const s of segments) {
    if (!SEGMENT.test(s) || s === '.' || s === '..') return false;
  }
  return true;
}

/**
 * Like normaliseProviderPath, but a segment may hold encoded slashes (`%2F`, any case): each
 * piece between them is checked as a segment of its own (no dot pieces, nothing empty), and the
 * slash stays encoded (`%2F`) in the result. Undefined: refused.
 */
export function normaliseResourcePath(raw: string): string | undefined {
  if (raw.length === 0 || raw.length > 2048 || !RAW.test(raw)) return undefined;
  const out: string[] = [];
  for (const rawSegment of raw.split('/')) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(rawSegment);
    } catch {
      return undefined;
    }
    if (decoded.includes('%')) return undefined;
    const pieces = decoded.split('/');
    for (const s of pieces) if (!SEGMENT.test(s) || s === '.' || s === '..') return undefined;
    out.push(pieces.join('%2F'));
  }
  return out.join('/');
}

export interface CompiledRoute {
  method: HttpMethod;
  /** The declared pattern (ProviderRoute.path); `pattern` is the same string. */
  path: string;
  pattern: string;
  regex: RegExp;
  params: string[];
  /** The route reads or changes what the whole provider account shares (ProviderRoute.account). */
  account: boolean;
  /** Parameters that take a resource id (ProviderRoute.resourceParams): `:` and `%2F` admitted. */
  resourceParams: readonly string[];
  /** A WebSocket route (ProviderRoute.websocket): matched only for an upgrade. */
  websocket?: WebSocketRoute;
}

const PARAM = /\{([A-Za-z][A-Za-z0-9_]*)\}/g;
/** What a `{name}` matches: one segment of unreserved characters, never starting with a dot. */
const PARAM_FIRST = '[A-Za-z0-9_~-]';
const PARAM_VALUE = `${PARAM_FIRST}[A-Za-z0-9._~@-]*`;
/** A resource parameter: also `:` and encoded slashes (each piece was checked by normaliseResourcePath). */
const RESOURCE_VALUE = `${PARAM_FIRST}(?:[A-Za-z0-9._~:-]|%2F)*`;
const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function compileRoute(route: ProviderRoute): CompiledRoute {
  const params: string[] = [];
  const resourceParams = route.resourceParams ?? [];
  const source = route.path
    .split(/(\{[A-Za-z][A-Za-z0-9_]*\})/)
    .map((part) => {
      const m = /^\{([A-Za-z][A-Za-z0-9_]*)\}$/.exec(part);
      if (m) {
        params.push(m[1]!);
        return `(${resourceParams.includes(m[1]!) ? RESOURCE_VALUE : PARAM_VALUE})`;
      }
      return escapeRegex(part);
    })
    .join('');
  return {
    method: route.method, path: route.path, pattern: route.path, regex: new RegExp(`^${source}$`), params, account: route.account === true, resourceParams: Object.freeze([...resourceParams]),
    ...(route.websocket ? { websocket: Object.freeze({ ...route.websocket }) } : {}),
  };
}

/**
 * Could some path this route matches begin with `prefix`? (A token's `paths: ["prefix*"]` must reach a route.)
 * The regex admits exactly the prefixes of the route's matches: each piece, optionally followed by the rest.
 */
export function routeAdmitsPrefix(route: CompiledRoute, prefix: string): boolean {
  const opt = (s: string): string => (s ? `(?:${s})?` : '');
  let tail = '';
  for (const part of route.pattern.split(/(\{[A-Za-z][A-Za-z0-9_]*\})/).reverse()) {
    if (part === '') continue;
    const param = /^\{([A-Za-z][A-Za-z0-9_]*)\}$/.exec(part)?.[1];
    if (param !== undefined) tail = `${route.resourceParams?.includes(param) ? RESOURCE_VALUE : PARAM_VALUE}${opt(tail)}`;
    else for (const ch of [...part].reverse()) tail = `${escapeRegex(ch)}${opt(tail)}`;
  }
  return new RegExp(`^${opt(tail)}$`).test(prefix);
}

export function validRoutePattern(path: string): boolean {
  // One trailing slash is a route of its own (`mcp/`), as the path normalises it.
  if (path.endsWith('/') && path.length > 1) path = path.slice(0, -1);
  if (path.startsWith('/') || path.endsWith('/') || path.includes('//')) return false;
  return path.replace(PARAM, 'x').split('/').every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
}

/**
 * The route `method` and `path` match. A plain request (`upgradeQuery` undefined) matches only plain routes; a
 * WebSocket upgrade (its query string, without `?`) only websocket routes, whose `modelQuery` parameter, when the
 * query names it once, is the `model` parameter (what a `models` scope is checked against).
 */
export function matchRoute(routes: readonly CompiledRoute[], method: string, path: string, upgradeQuery?: string): { route: CompiledRoute; params: Record<string, string> } | undefined {
  for (const route of routes) {
    if (route.method !== method || (route.websocket !== undefined) !== (upgradeQuery !== undefined)) continue;
    const m = route.regex.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    route.params.forEach((name, i) => (params[name] = m[i + 1]!));
    const modelQuery = route.websocket?.modelQuery;
    if (modelQuery !== undefined && upgradeQuery) {
      const named = new URLSearchParams(upgradeQuery).getAll(modelQuery);
      if (named.length === 1 && named[0] !== '') params.model = named[0]!;
    }
    return { route, params };
  }
  return undefined;
}
