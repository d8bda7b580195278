/**
 * Validates one provider file's default export against the contract
 * (provider.ts) and normalises it: defaults filled in, routes compiled, the
 * upstream template compiled, the fields that reach the wire marked. Anything
 * malformed throws ProviderLoadError naming the file and the field, so a bad
 * file stops start-up instead of misrouting a request or a key.
 */
import path from 'node:path';
import { compileRoute, validRoutePattern, type CompiledRoute } from './path.js';
import { DEFAULT_CREDENTIAL, declareFields, type CredentialRules, type DeclaredField } from './credential-fields.js';
import { HOP_BY_HOP } from './header-names.js';
import { compileTemplate, isTemplate, type UpstreamTemplate } from './upstream-template.js';
import { PriceFileError, readPriceFile, type PriceFileData } from '../pricing/price-schema.js';
import { validateTools } from '../pricing/billed-tools.js';
import { validateDimensions } from '../pricing/price-dimensions.js';
import { validateSdk } from './sdk-setup.js';
import type { CredentialSpec, HttpMethod, ProviderAuth, ProviderKind, ProviderPlugin, ProviderRoute, RealtimeProtocolName, TokenPlacement, UsageReaderFactory, UsageShape } from './provider.js';

/** A validated provider; it is also the CredentialRules its credentials are checked against. */
export interface Provider extends ProviderPlugin {
  /** The file it came from (its base name), for start-up errors found later (an unknown built-in signer). */
  readonly file: string;
  /** The origin requests go to, without a trailing slash (the declared one or KEYWARD_UPSTREAM_<ID>); absent when a template gives each credential its own. */
  readonly target?: URL;
  /** The declared template, when `upstream` has parameters (checked at credential create even when overridden). */
  readonly template?: UpstreamTemplate;
  readonly routes: readonly CompiledRoute[];
  readonly credential: CredentialSpec;
  readonly fields: readonly DeclaredField[];
  /** The secret `key_hint` is taken from. */
  readonly mainSecret: string;
  readonly templateProblem?: CredentialRules['templateProblem'];
  readonly tokenIn: readonly TokenPlacement[];
  readonly usage: UsageShape | UsageReaderFactory;
  readonly headers: Readonly<Record<string, string>>;
  readonly kind: ProviderKind;
  /** Its price table as written (inline `prices`, or the `<id>.prices.json` beside the file), checked by the price file schema. */
  readonly priceTable?: { readonly file: string; readonly data: PriceFileData };
}

/** The plugin API versions this core runs (`apiVersion` in a plugin file). */
export const API_VERSIONS: readonly number[] = [1];

/** A plugin file's `apiVersion`, checked: missing or unknown, `fail` says what was found and what is expected. */
export function checkApiVersion(value: unknown, fail: (problem: string) => never): void {
  if (value === undefined) fail(`\`apiVersion\` is missing: expected \`apiVersion: ${API_VERSIONS.at(-1)}\`, the plugin API the file is written against (@keyward/sdk)`);
  if (!API_VERSIONS.includes(value as number)) fail(`\`apiVersion\` ${JSON.stringify(value)} is not a plugin API this Keyward runs: expected one of ${API_VERSIONS.join(', ')}`);
}

export class ProviderLoadError extends Error {
  /** `fullPath`: name the file by its whole path (a file of the operator's folder), not its base name (a built-in's). */
  constructor(file: string, readonly problem: string, fullPath = false) {
    super(`provider ${fullPath ? file : path.basename(file)}: ${problem}`);
    this.name = 'ProviderLoadError';
  }
}

const METHODS: readonly HttpMethod[] = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH'];
const KINDS: readonly ProviderKind[] = ['llm', 'tool', 'mcp'];
/** A tool API or an MCP server reports no token usage: its answers are not read for any (a tool's result may hold a `usage` of its own). */
const NO_USAGE: UsageReaderFactory = () => ({ scan() {}, end: () => undefined });
const HEADER = /^[a-z0-9-]+$/;
const PARAM_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const USAGE_SHAPES: readonly UsageShape[] = ['openai', 'anthropic', 'gemini', 'bedrock', 'vertex'];
const KNOWN_KEYS = new Set(['apiVersion', 'replaces', 'id', 'kind', 'name', 'upstream', 'credential', 'auth', 'tokenIn', 'usage', 'routes', 'allow', 'headers', 'prices', 'pricesAsOf', 'pricesSource', 'sdk', 'tools', 'priceDimensions', 'mcpEndpoint']);
/** The first form's keys, and what replaced each. */
const FIRST_FORM: Record<string, string> = {
  keyHeader: "`auth: { kind: 'header', header }`",
  formatKey: "`auth: { kind: 'header', header, format }`",
  keyQueryParams: '`tokenIn: [{ query }]`',
  credentialFields: '`credential: { fields: { name: { header } } }`',
};

/** Framing headers: naming one as a key carrier would strip it from every request. */
const FRAMING = new Set(['content-length', 'content-type', 'content-encoding', 'accept-encoding', 'accept']);
/** A header a provider may not claim as where its key travels or is presented. */
const unusableKeyHeader = (h: string): boolean => !HEADER.test(h) || HOP_BY_HOP.has(h) || FRAMING.has(h) || h.startsWith('x-keyward-') || h.startsWith('x-forwarded-') || h === 'x-proxy-token';

/**
 * `file`'s default export `p` as a Provider. `override`: KEYWARD_UPSTREAM_<ID>'s origin; `priceFile`: the parsed
 * `<id>.prices.json` beside the file, if there is one (`name` is how errors name it).
 */
export function validateProvider(file: string, p: unknown, override?: string, priceFile?: { name: string; json: unknown }): Provider {
  const fail = (problem: string): never => {
    throw new ProviderLoadError(file, problem);
  };
  if (!p || typeof p !== 'object') return fail('the default export must be a provider object');
  const o = p as Record<string, unknown>;
  if (typeof o.id !== 'string' || !/^[a-z0-9][a-z0-9-]{0,39}$/.test(o.id)) fail('`id` must be lower-case letters, digits and dashes');
  for (const [old, now] of Object.entries(FIRST_FORM)) if (old in o) fail(`\`${old}\` is the first form of the provider contract: declare ${now} instead`);
  for (const k of Object.keys(o)) if (!KNOWN_KEYS.has(k)) fail(`unknown key \`${k}\` (a provider declares ${[...KNOWN_KEYS].join(', ')})`);
  if (o.name !== undefined && typeof o.name !== 'string') fail('`name` must be a string');
  if (o.replaces !== undefined && o.replaces !== o.id) fail(`\`replaces\` must be the provider's own \`id\` (${JSON.stringify(o.id)}): it takes the place of the built-in provider of that id`);
  if (o.kind !== undefined && !KINDS.includes(o.kind as ProviderKind)) fail(`\`kind\` must be one of ${KINDS.join(', ')}`);
  // A tool or an MCP server has no models to price or tools of its own to bill.
  if (o.kind !== undefined && o.kind !== 'llm' && (o.prices !== undefined || o.tools !== undefined || priceFile)) fail(`a provider of kind ${String(o.kind)} declares no \`prices\` or \`tools\``);

  // The credential first: the template and the auth name its fields.
  const { fields: declared, mainSecret } = declareFields(o.credential ?? DEFAULT_CREDENTIAL, fail);
  const credential = (o.credential ?? DEFAULT_CREDENTIAL) as CredentialSpec;

  if (typeof o.upstream !== 'string') fail('`upstream` must be an https origin or a template such as https://{resource}.example.com');
  const validOrigin = (value: string, overridden: boolean): URL => {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      return fail('`upstream` must be an https origin');
    }
    if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash || value.includes('#')) fail('`upstream` must be an https origin');
    if (!overridden && url.protocol !== 'https:') fail('`upstream` must use https');
    return new URL(url.origin + url.pathname.replace(/\/+$/, ''));
  };
  const upstream = o.upstream as string;
  const template = isTemplate(upstream) ? compileTemplate(upstream, declared, (u) => validOrigin(u, false), fail) : undefined;
  const target = override !== undefined ? validOrigin(override, true) : template ? undefined : validOrigin(upstream, false);

  const auth = validateAuth(o.auth, declared, mainSecret, fail);
  const plainHeaders = new Set(declared.flatMap((f) => (f.header ? [f.header] : [])));
  if (auth.kind === 'header' && plainHeaders.has(auth.header)) fail(`\`auth.header\` ${auth.header} is also a credential field's header`);
  const tokenIn = validateTokenIn(o.tokenIn, auth, fail);

  // Fields whose values reach a header, a URL or the origin must be printable without spaces.
  const wire = new Set([...(template?.params ?? []), ...declared.filter((f) => f.header).map((f) => f.name)]);
  if (auth.kind !== 'signer') wire.add(auth.field ?? mainSecret);
  const fields = declared.map((f) => Object.freeze({ ...f, wire: wire.has(f.name) }));

  if (o.usage !== undefined && typeof o.usage !== 'function' && !USAGE_SHAPES.includes(o.usage as UsageShape)) {
    fail(`\`usage\` must be one of ${USAGE_SHAPES.join(', ')} or a reader factory function`);
  }
  const routes = validateRoutes(o.routes ?? o.allow, o.routes !== undefined && o.allow !== undefined, fail);
  const headers = (o.headers ?? {}) as Record<string, unknown>;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) fail('`headers` must be an object of strings');
  for (const [k, v] of Object.entries(headers)) {
    if (!HEADER.test(k) || typeof v !== 'string' || !/^[\t\x20-\x7e]*$/.test(v)) fail(`header ${JSON.stringify(k)} must be a lower-case name with a printable string value`);
  }
  const priceTable = validatePrices(o, file, priceFile, fail);
  validateTools(o.tools, fail);
  if (o.kind !== undefined && o.kind !== 'llm' && o.priceDimensions !== undefined) fail(`a provider of kind ${String(o.kind)} declares no \`priceDimensions\``);
  validateDimensions(o.priceDimensions, routes.map((r) => `${r.method} ${r.path}`), fail);
  const sdk = validateSdk(o.sdk, declared.filter((f) => !f.secret).map((f) => f.name), fail);
  const mcpEndpoint = validateMcpEndpoint(o, routes, fail);

  return Object.freeze({
    ...(o as unknown as ProviderPlugin),
    file: path.basename(file),
    ...(target ? { target } : {}),
    ...(template ? { template, templateProblem: template.problem } : {}),
    credential,
    fields: Object.freeze(fields),
    ...(priceTable ? { priceTable } : {}),
    mainSecret,
    auth,
    tokenIn,
    kind: (o.kind ?? 'llm') as ProviderKind,
    usage: (o.usage ?? (o.kind === undefined || o.kind === 'llm' ? 'openai' : NO_USAGE)) as UsageShape | UsageReaderFactory,
    routes: Object.freeze(routes.map(compileRoute)),
    headers: Object.freeze({ ...(headers as Record<string, string>) }),
    ...(sdk ? { sdk } : {}),
    ...(mcpEndpoint !== undefined ? { mcpEndpoint } : {}),
  });
}

/** An MCP server's endpoint: declared (a POST route's literal path) or its first POST route without parameters. */
function validateMcpEndpoint(o: Record<string, unknown>, routes: readonly ProviderRoute[], fail: (problem: string) => never): string | undefined {
  const literalPosts = routes.filter((r) => r.method === 'POST' && !r.path.includes('{')).map((r) => r.path);
  if (o.mcpEndpoint === undefined) return o.kind === 'mcp' ? literalPosts[0] : undefined;
  if (o.kind !== 'mcp') fail('only a provider of kind mcp declares `mcpEndpoint`');
  if (typeof o.mcpEndpoint !== 'string' || !literalPosts.includes(o.mcpEndpoint)) fail('`mcpEndpoint` must be the path of one of its POST routes without parameters');
  return o.mcpEndpoint as string;
}

function validateAuth(value: unknown, fields: readonly Omit<DeclaredField, 'wire'>[], mainSecret: string, fail: (problem: string) => never): ProviderAuth {
  const a = value as Record<string, unknown> | undefined;
  if (!a || typeof a !== 'object') {
    fail("`auth` is required: how the key travels upstream, e.g. { kind: 'header', header: 'x-api-key' } (the first form's `keyHeader` is now this)");
  }
  const secretField = (): void => {
    const name = a!.field ?? mainSecret;
    const f = fields.find((d) => d.name === name);
    if (!f || !f.secret || f.optional) fail(`\`auth.field\` must name a secret credential field that is not optional (${String(name)} is not)`);
  };
  switch (a!.kind) {
    case 'header':
      if (typeof a!.header !== 'string' || unusableKeyHeader(a!.header)) fail('`auth.header` must be a lower-case header name that is not hop-by-hop, framing, forwarding, x-keyward-* or x-proxy-token');
      if (a!.format !== undefined && typeof a!.format !== 'function') fail('`auth.format` must be a function of the secret');
      secretField();
      break;
    case 'query':
      if (typeof a!.param !== 'string' || !PARAM_NAME.test(a!.param)) fail('`auth.param` must be a query parameter name');
      secretField();
      break;
    case 'signer': {
      const s = a!.signer as { needsBody?: unknown; sign?: unknown } | string | undefined;
      if (typeof s === 'string') {
        if (!/^[a-z0-9-]{1,40}$/.test(s)) fail('`auth.signer` must be a signer object or the name of a built-in signer');
      } else if (!s || typeof s !== 'object' || typeof s.needsBody !== 'boolean' || typeof s.sign !== 'function') {
        fail('`auth.signer` must be { needsBody: boolean, sign(request, credential) } or the name of a built-in signer');
      }
      if (a!.options !== undefined && (typeof a!.options !== 'object' || a!.options === null)) fail('`auth.options` must be an object');
      break;
    }
    default:
      fail('`auth.kind` must be header, query or signer');
  }
  return Object.freeze({ ...a }) as ProviderAuth;
}

function validateTokenIn(value: unknown, auth: ProviderAuth, fail: (problem: string) => never): readonly TokenPlacement[] {
  if (value === undefined) {
    if (auth.kind === 'header') return Object.freeze([auth.header === 'authorization' ? { header: auth.header, scheme: 'Bearer' } : { header: auth.header }]);
    if (auth.kind === 'query') return Object.freeze([{ query: auth.param }]);
    return Object.freeze([]);
  }
  if (!Array.isArray(value)) fail('`tokenIn` must be an array of { header, scheme?, pattern? } or { query }');
  for (const raw of value as unknown[]) {
    const t = (raw ?? {}) as Record<string, unknown>;
    if (typeof t.query === 'string') {
      if (!PARAM_NAME.test(t.query) || Object.keys(t).length !== 1) fail(`\`tokenIn\` { query: ${JSON.stringify(t.query)} } must name one query parameter`);
      continue;
    }
    if (typeof t.header !== 'string' || unusableKeyHeader(t.header)) fail('each `tokenIn` entry must be { header } (a lower-case name that is not hop-by-hop, framing, forwarding, x-keyward-* or x-proxy-token) or { query }');
    if (t.scheme !== undefined && (typeof t.scheme !== 'string' || !/^[A-Za-z0-9-]{1,40}$/.test(t.scheme))) fail(`\`tokenIn\` ${t.header}: \`scheme\` must be a word such as Bearer`);
    if (t.pattern !== undefined) {
      const p = t.pattern;
      if (!(p instanceof RegExp) || p.global || p.sticky || (new RegExp(`${p.source}|`).exec('')?.length ?? 0) < 2) fail(`\`tokenIn\` ${t.header}: \`pattern\` must be a RegExp (no g or y flag) whose first group is the key`);
      if (t.scheme !== undefined) fail(`\`tokenIn\` ${t.header}: give \`scheme\` or \`pattern\`, not both`);
    }
    for (const k of Object.keys(t)) if (!['header', 'scheme', 'pattern'].includes(k)) fail(`\`tokenIn\` ${t.header}: unknown key \`${k}\``);
  }
  return Object.freeze((value as TokenPlacement[]).map((t) => Object.freeze({ ...t })));
}

function validateRoutes(value: unknown, both: boolean, fail: (problem: string) => never): ProviderRoute[] {
  if (both) fail('declare `routes` (or `allow`, its first name), not both');
  if (!Array.isArray(value) || value.length === 0) fail('`routes` must be a non-empty array of { method, path }');
  for (const r of value as unknown[]) {
    const route = (r ?? {}) as Record<string, unknown>;
    if (!METHODS.includes(route.method as HttpMethod)) fail(`each route's method must be one of ${METHODS.join(', ')}`);
    if (typeof route.path !== 'string' || !validRoutePattern(route.path)) fail(`route path ${JSON.stringify(route.path)} is not a valid pattern`);
    if (route.account !== undefined && typeof route.account !== 'boolean') fail(`route ${JSON.stringify(route.path)}: \`account\` must be true or false`);
    const rp = route.resourceParams;
    if (rp !== undefined && (!Array.isArray(rp) || !rp.every((n) => typeof n === 'string' && (route.path as string).includes(`{${n}}`)))) fail(`route ${JSON.stringify(route.path)}: \`resourceParams\` must name parameters of its path`);
    if (route.websocket !== undefined) validateWebSocket(route, fail);
  }
  return value as ProviderRoute[];
}

const REALTIME_PROTOCOLS: readonly RealtimeProtocolName[] = ['openai-realtime', 'openai-responses', 'gemini-live'];

/** A declared realtime protocol object (RealtimeProtocol): a name and an `open` function (`transcribesFromStart` optional). */
function isProtocolObject(p: unknown): boolean {
  if (!p || typeof p !== 'object' || Array.isArray(p)) return false;
  const o = p as Record<string, unknown>;
  return typeof o.name === 'string' && o.name.length > 0 && typeof o.open === 'function' && (o.transcribesFromStart === undefined || typeof o.transcribesFromStart === 'function');
}

/** A websocket route: a GET, a known message protocol, and at most a query parameter naming the model. */
function validateWebSocket(route: Record<string, unknown>, fail: (problem: string) => never): void {
  const ws = route.websocket as Record<string, unknown> | null;
  const where = `route ${JSON.stringify(route.path)}: \`websocket\``;
  if (!ws || typeof ws !== 'object' || Array.isArray(ws)) fail(`${where} must be { protocol, modelQuery?, inputAudioTokensPerSecond? }`);
  if (route.method !== 'GET') fail(`${where} needs method GET (an upgrade is a GET)`);
  if (!REALTIME_PROTOCOLS.includes(ws!.protocol as RealtimeProtocolName) && !isProtocolObject(ws!.protocol)) {
    fail(`${where}.protocol must be one of ${REALTIME_PROTOCOLS.join(', ')}, or a RealtimeProtocol object ({ name, open }, @keyward/sdk)`);
  }
  if (ws!.modelQuery !== undefined && (typeof ws!.modelQuery !== 'string' || !PARAM_NAME.test(ws!.modelQuery))) fail(`${where}.modelQuery must be a query parameter name`);
  if ((route.path as string).includes('{model}') && ws!.modelQuery !== undefined) fail(`${where}.modelQuery and a {model} path parameter both name the model`);
  const rate = ws!.inputAudioTokensPerSecond;
  if (rate !== undefined && (typeof rate !== 'number' || !Number.isSafeInteger(rate) || rate < 1 || rate > 1000)) fail(`${where}.inputAudioTokensPerSecond must be a whole number of tokens from 1 to 1000`);
  for (const k of Object.keys(ws!)) if (!['protocol', 'modelQuery', 'inputAudioTokensPerSecond'].includes(k)) fail(`${where}: unknown key \`${k}\``);
}

/**
 * The provider's price table: inline (`prices`, `pricesAsOf`, `pricesSource`) or the file beside it, never both,
 * checked by the one price file schema (a problem names the field as the form it was written in has it).
 */
function validatePrices(o: Record<string, unknown>, file: string, beside: { name: string; json: unknown } | undefined, fail: (problem: string) => never): { file: string; data: PriceFileData } | undefined {
  const inline = o.prices !== undefined || o.pricesAsOf !== undefined || o.pricesSource !== undefined;
  if (inline && beside) fail(`prices both inline and in ${beside.name}: keep one`);
  if (beside) {
    try {
      return { file: beside.name, data: readPriceFile(beside.name, beside.json) };
    } catch (err) {
      if (err instanceof PriceFileError) fail(`${beside.name}: ${err.detail}`);
      throw err;
    }
  }
  if (!inline) return undefined;
  if (o.prices === undefined) fail('`pricesAsOf` or `pricesSource` without `prices`');
  const name = path.basename(file);
  try {
    return { file: name, data: readPriceFile(name, definedOf({ as_of: o.pricesAsOf, source: o.pricesSource, models: o.prices }), INLINE) };
  } catch (err) {
    if (err instanceof PriceFileError) fail(err.detail);
    throw err;
  }
}

const definedOf = (o: Record<string, unknown>): Record<string, unknown> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/** How an inline table names the price file's fields. */
const INLINE = { models: 'prices', as_of: 'pricesAsOf', source: 'pricesSource' } as const;
