/**
 * The provider path, decoded and normalised exactly once, then matched against
 * allow-list patterns. Anything that could change meaning between our check and
 * the provider's parser is refused rather than repaired: encoded slashes or
 * backslashes, double encoding, dot segments, empty segments (`//host`), and
 * any character outside the unreserved set. What is matched is what is sent.
 */
import type { HttpMethod, ProviderRoute } from './contracts.js';

const SEGMENT = /^[A-Za-z0-9._~:-]+$/;
const RAW = /^[A-Za-z0-9._~:%/-]*$/;

/** `raw` is the request path after `/v1/proxy/` and before `?`. Returns the clean path, or undefined to refuse. */
export function normaliseProviderPath(raw: string): string | undefined {
  if (raw.length === 0 || raw.length > 2048 || !RAW.test(raw)) return undefined;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  // A `%` left after one decode was double-encoded; an encoded `/` would hide a segment boundary.
  if (decoded.includes('%') || decoded.split('/').length !== raw.split('/').length) return undefined;
  const segments = decoded.split('/');
  for (const s of segments) {
    if (!SEGMENT.test(s) || s === '.' || s === '..') return undefined;
  }
  return segments.join('/');
}

export interface CompiledRoute {
  method: HttpMethod;
  pattern: string;
  regex: RegExp;
  params: string[];
}

const PARAM = /\{([A-Za-z][A-Za-z0-9_]*)\}/g;

export function compileRoute(route: ProviderRoute): CompiledRoute {
  const params: string[] = [];
  const source = route.path
    .split(/(\{[A-Za-z][A-Za-z0-9_]*\})/)
    .map((part) => {
      const m = /^\{([A-Za-z][A-Za-z0-9_]*)\}$/.exec(part);
      if (m) {
        params.push(m[1]!);
        return '([A-Za-z0-9_~-][A-Za-z0-9._~-]*)';
      }
      return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('');
  return { method: route.method, pattern: route.path, regex: new RegExp(`^${source}$`), params };
}

export function validRoutePattern(path: string): boolean {
  if (path.startsWith('/') || path.endsWith('/') || path.includes('//')) return false;
  return path.replace(PARAM, 'x').split('/').every((s) => SEGMENT.test(s) && s !== '.' && s !== '..');
}

export function matchRoute(routes: readonly CompiledRoute[], method: string, path: string): { route: CompiledRoute; params: Record<string, string> } | undefined {
  for (const route of routes) {
    if (route.method !== method) continue;
    const m = route.regex.exec(path);
    if (!m) continue;
    const params: Record<string, string> = {};
    route.params.forEach((name, i) => (params[name] = m[i + 1]!));
    return { route, params };
  }
  return undefined;
}
