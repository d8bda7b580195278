/**
 * Token scopes: what a proxy token may do beyond naming its credential.
 * Validated at mint time against the credential's provider (a scope that can
 * never match is refused with 400 invalid_scope); checked by the gateway core
 * before quota, so a refusal never counts.
 */
import { Errors } from '../errors.js';
import { MODEL } from '../pricing/model-name.js';
import { matchRoute, routeAdmitsPrefix } from './path.js';
import type { Provider } from './registry.js';
import type { TokenScopes } from '../store/ports.js';
import { parseUsd } from '../pricing/money.js';

/** Exported so the admin API's token schema (src/api/schemas/tokens.ts) states the same grammar. */
export { MODEL };
export const PATH_PATTERN = /^[A-Za-z0-9._~:{}\/-]{1,512}\*?$/;
export const MAX_ITEMS = 100;
/** An MCP tool's name (the spec's 1–128 characters of letters, digits, `_ - . /`), or a `prefix*` of one. */
export const TOOL_PATTERN = /^[A-Za-z0-9_./-]{1,128}\*?$|^\*$/;

function list(value: unknown, param: string, check: (s: string) => boolean, what: string): string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ITEMS) {
    throw Errors.invalidScope(`\`${param}\` must be a non-empty array of at most ${MAX_ITEMS} ${what}.`, param);
  }
  for (const v of value) {
    if (typeof v !== 'string' || !check(v)) throw Errors.invalidScope(`\`${param}\` holds ${JSON.stringify(String(v).slice(0, 64))}, which is not ${what.replace(/s$/, '')}.`, param);
  }
  return [...new Set(value as string[])];
}

function positive(value: unknown, param: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw Errors.invalidScope(`\`${param}\` must be a positive integer of at most ${max}.`, param);
  }
  return value;
}

/** Does a token's path pattern admit this request? */
export function pathAllowed(patterns: readonly string[], path: string, routePattern: string): boolean {
  for (const p of patterns) {
    if (p === path || p === routePattern) return true;
    if (p.endsWith('*') && path.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

/**
 * May a token reach an account-wide route (ProviderRoute.account)? Only if its `paths` names that
 * route: its pattern exactly (`v1/messages/batches/{id}`), or exactly the concrete path requested
 * (`v1/messages/batches/msgbatch_01`, which names one object the organisation picked, narrower still).
 * Never by `prefix*` (a `v1/*` meant for chat must not open the account's batches), never unscoped.
 */
export function accountRouteAllowed(patterns: readonly string[] | undefined, path: string, routePattern: string): boolean {
  return patterns !== undefined && patterns.some((p) => p === routePattern || p === path);
}

/** May a token whose `tools` scope is `patterns` call the tool `name`? Exact names, or a `prefix*` (`*` alone: every tool). */
export const toolAllowed = (patterns: readonly string[], name: string): boolean => modelAllowed(patterns, name);

export function modelAllowed(patterns: readonly string[], model: string): boolean {
  for (const p of patterns) {
    if (p === model) return true;
    if (p.endsWith('*') && model.startsWith(p.slice(0, -1))) return true;
  }
  return false;
}

/** A path scope must admit at least one request the provider allows. */
function reachable(pattern: string, provider: Provider): boolean {
  return provider.routes.some((r) => {
    if (pattern === r.pattern) return true;
    if (pattern.endsWith('*')) return routeAdmitsPrefix(r, pattern.slice(0, -1));
    return matchRoute([r], r.method, pattern, r.websocket ? '' : undefined) !== undefined;
  });
}

export function parseScopes(body: Record<string, unknown>, provider: Provider): TokenScopes {
  const scopes: TokenScopes = {};
  if (body.models !== undefined) scopes.models = list(body.models, 'models', (s) => MODEL.test(s), 'model names or prefix* patterns');
  if (body.paths !== undefined) {
    scopes.paths = list(body.paths, 'paths', (s) => PATH_PATTERN.test(s) && !s.includes('..') && !s.includes('//'), 'path patterns');
    for (const p of scopes.paths) {
      if (!reachable(p, provider)) throw Errors.invalidScope(`\`paths\` holds ${JSON.stringify(p)}, which is not on the ${provider.id} allow-list.`, 'paths');
    }
  }
  if (body.max_requests !== undefined) scopes.maxRequests = positive(body.max_requests, 'max_requests', 1_000_000_000);
  if (body.rate_limit !== undefined) scopes.rateLimit = positive(body.rate_limit, 'rate_limit', 1_000_000);
  if (body.tokens_per_minute !== undefined) scopes.tokensPerMinute = positive(body.tokens_per_minute, 'tokens_per_minute', 1_000_000_000);
  if (body.max_concurrent !== undefined) scopes.maxConcurrent = positive(body.max_concurrent, 'max_concurrent', 100_000);
  if (body.budget_usd !== undefined) {
    const micros = parseUsd(body.budget_usd);
    if (micros === undefined || micros <= 0) throw Errors.invalidScope('`budget_usd` must be a decimal string of US dollars above 0 with at most six decimal places, such as "12.50".', 'budget_usd');
    scopes.budgetMicros = micros;
  }
  if (body.tools !== undefined) {
    if (provider.kind !== 'mcp') throw Errors.invalidScope(`\`tools\` scopes an MCP server's tools; ${provider.id} is not an MCP server.`, 'tools');
    scopes.tools = list(body.tools, 'tools', (s) => TOOL_PATTERN.test(s), 'tool names or prefix* patterns');
  }
  return scopes;
}
