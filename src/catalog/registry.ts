/**
 * ProviderRegistry: every provider plugin file in the providers folder, loaded
 * and validated once at start (a malformed file stops start-up naming the file
 * and the field), with KEYWARD_UPSTREAM_<ID> origin overrides applied.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { CredentialField, HttpMethod, ProviderPlugin } from './provider.js';
import { CREDENTIAL_HEADERS, HOP_BY_HOP } from './header-names.js';
import { compileRoute, validRoutePattern, type CompiledRoute } from './path.js';

export interface Provider extends ProviderPlugin {
  /** The origin requests go to (after any override), without a trailing slash. */
  readonly target: URL;
  readonly routes: readonly CompiledRoute[];
  readonly keyHeader: string;
}

export class ProviderLoadError extends Error {
  constructor(file: string, problem: string) {
    super(`provider ${path.basename(file)}: ${problem}`);
    this.name = 'ProviderLoadError';
  }
}

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'DELETE'];
const HEADER = /^[a-z0-9-]+$/;

export function validateProvider(file: string, p: unknown, override?: string): Provider {
  const fail = (problem: string): never => {
    throw new ProviderLoadError(file, problem);
  };
  if (!p || typeof p !== 'object') return fail('the default export must be a provider object');
  const o = p as Record<string, unknown>;
  if (typeof o.id !== 'string' || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(o.id)) fail('`id` must be lower-case letters, digits and dashes');
  if (typeof o.upstream !== 'string') fail('`upstream` must be an https origin');
  let target: URL;
  try {
    target = new URL(override ?? (o.upstream as string));
  } catch {
    return fail('`upstream` must be an https origin');
  }
  if (!['http:', 'https:'].includes(target.protocol) || target.username || target.search) fail('`upstream` must be an https origin');
  if (override === undefined && target.protocol !== 'https:') fail('`upstream` must use https');
  if (typeof o.keyHeader !== 'string' || !HEADER.test(o.keyHeader)) fail('`keyHeader` must be a lower-case header name');
  if (o.formatKey !== undefined && typeof o.formatKey !== 'function') fail('`formatKey` must be a function');
  if (o.headers !== undefined) {
    if (typeof o.headers !== 'object' || o.headers === null) fail('`headers` must be an object of strings');
    for (const [k, v] of Object.entries(o.headers as object)) {
      if (!HEADER.test(k) || typeof v !== 'string') fail(`header ${JSON.stringify(k)} must be a lower-case name with a string value`);
    }
  }
  if (o.keyQueryParams !== undefined && (!Array.isArray(o.keyQueryParams) || !o.keyQueryParams.every((q) => typeof q === 'string' && /^[A-Za-z0-9_-]+$/.test(q)))) {
    fail('`keyQueryParams` must be an array of parameter names');
  }
  if (!Array.isArray(o.allow) || o.allow.length === 0) fail('`allow` must be a non-empty array of { method, path }');
  for (const r of o.allow as unknown[]) {
    const route = r as Record<string, unknown>;
    if (!route || !METHODS.includes(route.method as HttpMethod)) fail(`each route's method must be one of ${METHODS.join(', ')}`);
    if (typeof route.path !== 'string' || !validRoutePattern(route.path)) fail(`route path ${JSON.stringify(route.path)} is not a valid pattern`);
    if (route.account !== undefined && typeof route.account !== 'boolean') fail(`route ${JSON.stringify(route.path)}: \`account\` must be true or false`);
  }
  if (o.credentialFields !== undefined) validateCredentialFields(o.credentialFields, o.keyHeader as string, fail);
  const pathname = target.pathname.replace(/\/+$/, '');
  const cleanTarget = new URL(target.origin + pathname);
  return Object.freeze({
    ...(o as unknown as ProviderPlugin),
    target: cleanTarget,
    routes: Object.freeze((o.allow as ProviderPlugin['allow']).map(compileRoute)),
  }) as Provider;
}

/** Names a credential view or body already uses: a field may not shadow them. */
const RESERVED_FIELDS = new Set(['id', 'object', 'provider', 'api_key', 'key_hint', 'created_at', 'updated_at', 'usage', 'deleted']);

function validateCredentialFields(value: unknown, keyHeader: string, fail: (problem: string) => never): void {
  if (!Array.isArray(value)) fail('`credentialFields` must be an array of { name, kind, header }');
  const names = new Set<string>();
  const headers = new Set<string>();
  for (const f of value as unknown[]) {
    const field = (f ?? {}) as Partial<CredentialField>;
    const name = field.name;
    if (typeof name !== 'string' || !/^[a-z][a-z0-9_]{0,39}$/.test(name) || RESERVED_FIELDS.has(name)) {
      fail(`credential field ${JSON.stringify(name)}: \`name\` must be lower-case letters, digits and _ and not one of ${[...RESERVED_FIELDS].join(', ')}`);
    }
    if (names.has(name!)) fail(`credential field ${JSON.stringify(name)} is declared twice`);
    names.add(name!);
    if (field.kind !== 'plain') fail(`credential field ${JSON.stringify(name)}: \`kind\` must be "plain" (secret fields are not supported yet)`);
    const header = field.header;
    // The field's header carries the organisation's value, never a credential or a framing header.
    if (typeof header !== 'string' || !HEADER.test(header) || header === keyHeader || CREDENTIAL_HEADERS.has(header) || HOP_BY_HOP.has(header)
      || header.startsWith('x-forwarded-') || header.startsWith('x-keyward-') || headers.has(header)) {
      fail(`credential field ${JSON.stringify(name)}: \`header\` must be a lower-case header name of its own, not a credential, hop-by-hop or forwarding header`);
    }
    headers.add(header!);
    if (field.description !== undefined && typeof field.description !== 'string') fail(`credential field ${JSON.stringify(name)}: \`description\` must be a string`);
  }
}

export class ProviderRegistry {
  readonly keyQueryParams: readonly string[];
  private readonly byId: ReadonlyMap<string, Provider>;

  constructor(providers: readonly Provider[]) {
    const map = new Map<string, Provider>();
    for (const p of providers) {
      if (map.has(p.id)) throw new ProviderLoadError(p.id, `two provider files declare id ${JSON.stringify(p.id)}`);
      map.set(p.id, p);
    }
    this.byId = map;
    this.keyQueryParams = Object.freeze([...new Set(providers.flatMap((p) => p.keyQueryParams ?? []))]);
  }

  get(id: string): Provider | undefined {
    return this.byId.get(id);
  }

  ids(): string[] {
    return [...this.byId.keys()].sort();
  }

  static async load(dir: string, overrides: Readonly<Record<string, string>>): Promise<ProviderRegistry> {
    let files: string[];
    try {
      files = readdirSync(dir).filter((f) => f.endsWith('.js') || f.endsWith('.mjs')).sort();
    } catch (err) {
      throw new ProviderLoadError(dir, `cannot read the providers folder (${(err as NodeJS.ErrnoException).code})`);
    }
    if (files.length === 0) throw new ProviderLoadError(dir, 'the providers folder holds no .js files');
    const providers: Provider[] = [];
    for (const f of files) {
      const full = path.join(dir, f);
      let mod: { default?: unknown };
      try {
        mod = await import(pathToFileURL(full).href);
      } catch (err) {
        throw new ProviderLoadError(full, `failed to load (${(err as Error).message})`);
      }
      const id = (mod.default as { id?: unknown } | undefined)?.id;
      providers.push(validateProvider(full, mod.default, typeof id === 'string' ? overrides[id] : undefined));
    }
    // An override for no loaded provider is a typo (KEYWARD_UPSTREAM_OPENIA) that would leave traffic going to the real origin.
    for (const id of Object.keys(overrides)) {
      if (!providers.some((p) => p.id === id)) {
        throw new Error(`KEYWARD_UPSTREAM_${id.toUpperCase().replace(/-/g, '_')}: no provider ${JSON.stringify(id)} is loaded (loaded: ${providers.map((p) => p.id).sort().join(', ')})`);
      }
    }
    return new ProviderRegistry(providers);
  }
}
