/**
 * Environment → one frozen, validated Config. Every variable of the contract is
 * parsed here and nowhere else; a bad value stops start-up with one line naming
 * the variable and what it accepts.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseTraceSettings, type TraceSettings } from './trace-settings.js';
import { parseTlsSettings, type TlsSettings } from './tls-settings.js';
import { cloudEndpoint, federationConfig, type FederationConfig } from './federation-config.js';

export type StoreKind = 'sqlite' | 'firestore';
export type KmsKind = 'local' | 'gcp';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** FederationConfig: Keyward as each organisation's OIDC identity (federation-config.ts). */
export interface Config extends FederationConfig {
  host: string;
  port: number;
  dataDir: string;
  store: StoreKind;
  gcpProject: string | undefined;
  firestoreEmulatorHost: string | undefined;
  kms: KmsKind;
  kmsKey: string | undefined;
  kmsEndpoint: string | undefined;
  localKek: Buffer | undefined;
  localKekPrevious: Buffer | undefined;
  adminToken: string | undefined;
  /** provider id (lower case) → origin override */
  upstreamOverrides: Readonly<Record<string, string>>;
  /** KEYWARD_PROVIDERS_DIR: added to the built-in providers (a built-in's id only with `replaces`). */ providersDir: string | undefined; builtinProvidersDir: string;
  /** KEYWARD_PLUGINS_DIR: searched before the package's own built plugins, so a team's folder only needs its own files. */ pluginsDir: string | undefined; builtinPluginsDir: string;
  /** KEYWARD_PLUGINS: the optional middleware plugins (the core's stages are always on, never listed). */ plugins: readonly string[];
  /** Core stages an older KEYWARD_PLUGINS names (auth, quota, budget: FORMER_PLUGINS): never loaded, named in one warning. */ pluginsIgnored: readonly string[];
  /** KEYWARD_PLUGIN_CONFIG's file: plugin name → its settings (checked against its configSchema when it loads). Never in PluginConfig. */
  pluginSettings: Readonly<Record<string, unknown>>;
  /** KEYWARD_PRICES's file as parsed: provider id → model or prefix* → price; checked against the loaded providers at start (pricing/price-file.ts). */
  priceOverrides: Readonly<Record<string, unknown>>;
  unpriced: 'refuse' | 'family_max'; // KEYWARD_UNPRICED: how a model with no price of its own is priced (pricing/prices.ts)
  freeCredentials: number;
  freeProxyRequests: number;
  maxTtlMs: number;
  maxBody: number;
  maxAdminBody: number; // KEYWARD_MAX_ADMIN_BODY: the largest admin API request body (admin bodies are small JSON documents)
  bufferBudget: number; // KEYWARD_BUFFER_BUDGET: bytes all proxied requests together may hold while scans decide them
  bufferPerToken: number; // KEYWARD_BUFFER_PER_TOKEN: the share of that one token's requests may hold (none can starve the others)
  bufferPerOrg: number; // KEYWARD_BUFFER_PER_ORG: the share one organisation's tokens may hold together (default a quarter of the budget)
  pools: { attempts: number; retryBodyMax: number }; // KEYWARD_POOL_ATTEMPTS (members tried per request), KEYWARD_RETRY_BODY_MAX (larger bodies are not retried)
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  upstreamConnectTimeoutMs: number;
  upstreamIdleTimeoutMs: number;
  wsMaxMessage: number; // KEYWARD_WS_MAX_MESSAGE: the largest WebSocket message relayed either way (larger: 1009)
  tls: TlsSettings | undefined; // KEYWARD_TLS_CERT / KEYWARD_TLS_KEY (src/settings/tls-settings.ts); a secret: never in PluginConfig
  drainS: number;
  /** KEYWARD_LEASE_TTL: a lease holder not renewed for this long is reclaimed (holders renew every third of it). */ leaseTtlMs: number;
  logLevel: LogLevel;
  adminRate: number;
  authFailures: number;
  authCooldownS: number;
  /** Audit records are listed and kept this long (KEYWARD_AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
  /** KEYWARD_AUDIT_TOOL_CALLS=1: each forwarded MCP tools/call is audited (`mcp.tool_call`, the tool's name only). */ auditToolCalls: boolean;
  /** Proxies in front that append to X-Forwarded-For (src/controls/client-address.ts); 0 trusts none. */
  trustedProxies: number;
  /** When set, GET /metrics on the main listener needs `Authorization: Bearer` it. */ metricsToken: string | undefined;
  /** KEYWARD_METRICS_PORT: GET /metrics on 127.0.0.1:<port> (a sidecar's); on the main listener then only with metricsToken. */ metricsPort: number | undefined;
  /** KEYWARD_GOOGLE_TOKEN_URI: where Google access tokens are minted (default Google's); a service-account key's own token_uri is never used. */
  googleTokenUri: string;
  /** The metadata server for ambient Google credentials: GCE_METADATA_IP, else GCE_METADATA_HOST (host[:port] or an http(s) URL whose path is ignored), else 169.254.169.254. */
  gceMetadataHost: string;
  /**
   * KEYWARD_AMBIENT_PROJECTS: the Google Cloud projects in which an organisation's `ambient` Vertex credential may act
   * with the gateway's own service account. Empty (the default): none may, since any organisation could otherwise
   * spend in every project that identity reaches.
   */
  ambientProjects: readonly string[];
  /** KEYWARD_QUOTA: `off` turns the quota stage off, on purpose (the proxy is then not limited per month). */
  quota: 'on' | 'off';
  /** OpenTelemetry tracing (OTEL_EXPORTER_OTLP_ENDPOINT and the standard OTEL_* variables); undefined: off. Holds the exporter's headers: never in PluginConfig. */
  traces: TraceSettings | undefined;
  /** KEYWARD_OIDC_ISSUERS: the OIDC issuers trust policies may name (exact `iss` values). */
  oidcIssuers: readonly string[];
  /** KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK=1 (tests only): an issuer on http://127.0.0.1 or [::1] may be fetched without TLS. */
  oidcAllowHttpLoopback: boolean;
}

/**
 * What a middleware plugin sees of the config (PluginHost.config): an allow-list of settings
 * that are no secret. The admin token, the local keys, and any secret added later stay out
 * unless someone names them here.
 */
const PLUGIN_CONFIG_KEYS = [
  'host', 'port', 'store', 'gcpProject', 'kms', 'upstreamOverrides', 'providersDir', 'pluginsDir', 'builtinPluginsDir', 'plugins',
  'freeCredentials', 'freeProxyRequests', 'maxTtlMs', 'maxBody', 'headersTimeoutMs', 'bodyTimeoutMs', 'upstreamConnectTimeoutMs',
  'upstreamIdleTimeoutMs', 'drainS', 'logLevel', 'adminRate', 'authFailures', 'authCooldownS', 'quota', 'trustedProxies',
] as const satisfies ReadonlyArray<keyof Config>;

export type PluginConfig = Readonly<Pick<Config, (typeof PLUGIN_CONFIG_KEYS)[number]>>;

/** A frozen copy of `config` holding only PluginConfig's settings. */
export function pluginConfig(config: Config): PluginConfig {
  const out: Record<string, unknown> = {};
  for (const k of PLUGIN_CONFIG_KEYS) out[k] = config[k];
  return Object.freeze(out) as unknown as PluginConfig;
}

export class ConfigError extends Error {
  constructor(readonly variable: string, accepts: string, got: string) {
    super(`${variable}: expected ${accepts}, got ${JSON.stringify(got.length > 60 ? got.slice(0, 60) + '…' : got)}`);
    this.name = 'ConfigError';
  }
}

/** Core stages that were plugins once (KEYWARD_PLUGINS's old default: `auth,quota,logging`): a list naming them still starts. */
const FORMER_PLUGINS: readonly string[] = ['auth', 'quota', 'budget'];

const DURATION = /^([1-9][0-9]*)([smhd])$/;
const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `15m` → 900000; the token ttl grammar: positive integer, no leading zero, one unit. */
export function parseDuration(text: string): number | undefined {
  const m = DURATION.exec(text);
  if (!m) return undefined;
  const ms = Number(m[1]) * UNIT_MS[m[2]!]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}

const SIZE = /^([0-9]+)(b|kb|mb|gb)?$/i;
const SIZE_UNIT: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

export function parseSize(text: string): number | undefined {
  const m = SIZE.exec(text.trim());
  if (!m) return undefined;
  const n = Number(m[1]) * SIZE_UNIT[(m[2] ?? 'b').toLowerCase()]!;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

// The package's own built plugin folders: dist/src/settings/config.js → dist/providers (from src/ under tsx, too).
const here = path.dirname(fileURLToPath(import.meta.url));
const packageDist = here.split(path.sep).includes('dist') ? path.resolve(here, '..', '..') : path.resolve(here, '..', '..', 'dist');

type Env = Record<string, string | undefined>;

/** A URL as it may be echoed in an error: userinfo (a password) and query (a key) replaced, even when it does not parse. */
export function redactUrl(raw: string): string {
  return raw.replace(/^(.*?\/\/)?[^]*@/, (_m, scheme: string | undefined) => `${scheme ?? ''}<redacted>@`).replace(/[?#][^]*$/, '?<redacted>');
}

/**
 * A JSON file holding one object (KEYWARD_PLUGIN_CONFIG: plugin name → settings; KEYWARD_PRICES: provider id →
 * prices, checked once the providers are loaded). Its content is never echoed (a plugin's settings may hold secrets).
 */
function readJsonObjectFile(variable: string, file: string | undefined, keyedBy: string): Readonly<Record<string, unknown>> {
  if (file === undefined) return Object.freeze({});
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path.resolve(file), 'utf8'));
  } catch (err) {
    const why = err instanceof SyntaxError ? 'not JSON' : ((err as NodeJS.ErrnoException).code ?? 'unreadable');
    throw new ConfigError(variable, `a readable JSON file (${why})`, file);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError(variable, `a JSON file holding one object keyed by ${keyedBy}`, file);
  }
  return Object.freeze(parsed as Record<string, unknown>);
}

export function loadConfig(env: Env = process.env): Config {
  const get = (name: string): string | undefined => {
    const v = env[name];
    return v === undefined || v === '' ? undefined : v;
  };
  const int = (name: string, dflt: number, min: number, max = Number.MAX_SAFE_INTEGER): number => {
    const raw = get(name);
    if (raw === undefined) return dflt;
    if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new ConfigError(name, `an integer from ${min} to ${max}`, raw);
    }
    return Number(raw);
  };
  const oneOf = <T extends string>(name: string, dflt: T, allowed: readonly T[]): T => {
    const raw = get(name);
    if (raw === undefined) return dflt;
    if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(name, `one of ${allowed.join(', ')}`, raw);
    return raw as T;
  };
  const key32 = (name: string): Buffer | undefined => {
    const raw = get(name);
    if (raw === undefined) return undefined;
    const buf = /^[A-Za-z0-9+/]+={0,2}$/.test(raw) ? Buffer.from(raw, 'base64') : Buffer.alloc(0);
    // A secret: never echo it back in the error.
    if (buf.length !== 32) throw new ConfigError(name, 'base64 of exactly 32 bytes', '<redacted>');
    return buf;
  };
  const fail = (variable: string, accepts: string, got: string): never => {
    throw new ConfigError(variable, accepts, got);
  };
  const origin = (name: string, raw: string): string => {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new ConfigError(name, 'an http(s) origin such as http://127.0.0.1:9000', redactUrl(raw));
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || url.search || url.hash) {
      throw new ConfigError(name, 'an http(s) origin such as http://127.0.0.1:9000 (no user, password or query)', redactUrl(raw));
    }
    return url.origin + url.pathname.replace(/\/+$/, '');
  };

  const host = get('HOST') ?? '0.0.0.0';
  if (!/^[A-Za-z0-9.:\-\[\]]+$/.test(host)) throw new ConfigError('HOST', 'a host name or IP address', host);
  const port = int('PORT', 8080, 0, 65535);

  const store = oneOf<StoreKind>('KEYWARD_STORE', 'sqlite', ['sqlite', 'firestore']);
  const kms = oneOf<KmsKind>('KEYWARD_KMS', 'local', ['local', 'gcp']);
  const kmsKey = get('KEYWARD_KMS_KEY');
  if (kmsKey !== undefined && !/^projects\/[^/]+\/locations\/[^/]+\/keyRings\/[^/]+\/cryptoKeys\/[^/]+$/.test(kmsKey)) {
    throw new ConfigError('KEYWARD_KMS_KEY', 'projects/…/locations/…/keyRings/…/cryptoKeys/…', kmsKey);
  }
  if (kms === 'gcp' && kmsKey === undefined) {
    throw new ConfigError('KEYWARD_KMS_KEY', 'a Cloud KMS key name (required with KEYWARD_KMS=gcp)', '');
  }
  const kmsEndpoint = get('KEYWARD_KMS_ENDPOINT');
  if (kmsEndpoint !== undefined && !/^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$/.test(kmsEndpoint)) {
    throw new ConfigError('KEYWARD_KMS_ENDPOINT', 'host:port', kmsEndpoint);
  }
  const localKek = key32('KEYWARD_LOCAL_KEK');
  const localKekPrevious = key32('KEYWARD_LOCAL_KEK_PREVIOUS');
  if (localKekPrevious && !localKek) {
    throw new ConfigError('KEYWARD_LOCAL_KEK_PREVIOUS', 'to be set only together with KEYWARD_LOCAL_KEK', '<redacted>');
  }
  if (kms === 'local' && store === 'firestore' && !localKek) {
    throw new ConfigError('KEYWARD_LOCAL_KEK', 'base64 of 32 bytes (required with KEYWARD_STORE=firestore and KEYWARD_KMS=local: instances must share the key)', '');
  }
  const adminToken = get('KEYWARD_ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('KEYWARD_ADMIN_TOKEN', 'a secret of at least 16 characters', '<redacted>');
  }
  const metricsToken = get('KEYWARD_METRICS_TOKEN');
  if (metricsToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(metricsToken)) {
    throw new ConfigError('KEYWARD_METRICS_TOKEN', 'a secret of at least 16 printable characters, no spaces', '<redacted>');
  }

  const upstreamOverrides: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const m = /^KEYWARD_UPSTREAM_([A-Z0-9_]+)$/.exec(name);
    // KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS / _IDLE_TIMEOUT_MS share the prefix but are timeouts, not origins.
    if (!m || /^(CONNECT|IDLE)_TIMEOUT_MS$/.test(m[1]!) || value === undefined || value === '') continue;
    upstreamOverrides[m[1]!.toLowerCase().replace(/_/g, '-')] = origin(name, value);
  }

  const googleTokenUri = cloudEndpoint('KEYWARD_GOOGLE_TOKEN_URI', get('KEYWARD_GOOGLE_TOKEN_URI') ?? 'https://oauth2.googleapis.com/token', true, fail);
  const gceMetadataHost = metadataHost(get('GCE_METADATA_IP') ?? get('GCE_METADATA_HOST'));
  const ambientProjects = (get('KEYWARD_AMBIENT_PROJECTS') ?? '').split(',').map((p) => p.trim()).filter(Boolean);
  for (const p of ambientProjects) {
    if (!/^[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(p)) throw new ConfigError('KEYWARD_AMBIENT_PROJECTS', 'a comma-separated list of Google Cloud project ids', p);
  }

  // `none`: no optional plugin at all (the core's stages still run).
  const listed = get('KEYWARD_PLUGINS') === 'none' ? [] : (get('KEYWARD_PLUGINS') ?? 'logging').split(',').map((s) => s.trim()).filter(Boolean);
  for (const p of listed) {
    if (!/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/i.test(p)) {
      throw new ConfigError('KEYWARD_PLUGINS', 'a comma-separated list of plugin file or npm module names', p);
    }
  }
  if (new Set(listed).size !== listed.length) {
    throw new ConfigError('KEYWARD_PLUGINS', 'each plugin named once', listed.join(','));
  }
  const plugins = listed.filter((p) => !FORMER_PLUGINS.includes(p));
  const pluginsIgnored = listed.filter((p) => FORMER_PLUGINS.includes(p));

  const pluginSettings = readJsonObjectFile('KEYWARD_PLUGIN_CONFIG', get('KEYWARD_PLUGIN_CONFIG'), 'plugin name');

  const duration = (name: string, dflt: string, max = Infinity): number => {
    const ms = parseDuration(get(name) ?? dflt);
    if (ms === undefined || ms > max) throw new ConfigError(name, `a duration such as 15m, 12h or 30d${max < Infinity ? ` (at most ${max / 60_000}m)` : ''}`, get(name)!);
    return ms;
  };
  const maxTtlMs = duration('KEYWARD_MAX_TTL', '30d');
  const size = (name: string, dflt: string | number): number => {
    const raw = get(name) ?? String(dflt);
    const n = parseSize(raw);
    if (n === undefined) throw new ConfigError(name, 'a size such as 64kb or 64mb', raw);
    return n;
  };
  const maxBody = size('KEYWARD_MAX_BODY', '32mb');
  const bufferBudget = size('KEYWARD_BUFFER_BUDGET', '64mb');

  const dir = (name: string, dflt: string): string => path.resolve(get(name) ?? dflt);
  /** A folder the operator named must exist: a typo would otherwise load the built-ins, or nothing, silently. */
  const existingDir = (name: string): string | undefined => {
    const resolved = get(name) === undefined ? undefined : path.resolve(get(name)!);
    if (resolved !== undefined && !statSync(resolved, { throwIfNoEntry: false })?.isDirectory()) throw new ConfigError(name, 'an existing folder of plugin files (.ts, .js or .mjs)', get(name)!);
    return resolved;
  };
  const gcpProject = get('GOOGLE_CLOUD_PROJECT');
  if (gcpProject !== undefined && !/^(?:[a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/.test(gcpProject)) {
    throw new ConfigError('GOOGLE_CLOUD_PROJECT', 'a Google Cloud project id (6 to 30 lower-case letters, digits and dashes)', gcpProject);
  }
  const firestoreEmulatorHost = get('FIRESTORE_EMULATOR_HOST');
  if (firestoreEmulatorHost !== undefined && !/^[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}$/.test(firestoreEmulatorHost)) {
    throw new ConfigError('FIRESTORE_EMULATOR_HOST', 'host:port', firestoreEmulatorHost);
  }

  return Object.freeze({
    host,
    port,
    dataDir: dir('KEYWARD_DATA_DIR', './data'),
    store,
    gcpProject,
    firestoreEmulatorHost,
    kms,
    kmsKey,
    kmsEndpoint,
    localKek,
    localKekPrevious,
    adminToken,
    upstreamOverrides: Object.freeze(upstreamOverrides),
    providersDir: existingDir('KEYWARD_PROVIDERS_DIR'),
    builtinProvidersDir: path.join(packageDist, 'providers'),
    pluginsDir: existingDir('KEYWARD_PLUGINS_DIR'),
    builtinPluginsDir: path.join(packageDist, 'plugins'),
    plugins: Object.freeze(plugins),
    pluginsIgnored: Object.freeze(pluginsIgnored),
    pluginSettings,
    priceOverrides: readJsonObjectFile('KEYWARD_PRICES', get('KEYWARD_PRICES'), 'provider id'),
    unpriced: oneOf('KEYWARD_UNPRICED', 'refuse', ['refuse', 'family_max'] as const),
    freeCredentials: int('KEYWARD_FREE_CREDENTIALS', 10, 1, 1_000_000),
    freeProxyRequests: int('KEYWARD_FREE_PROXY_REQUESTS', 10_000, 1, 1_000_000_000_000),
    maxTtlMs,
    maxBody,
    maxAdminBody: size('KEYWARD_MAX_ADMIN_BODY', '64kb'),
    bufferBudget,
    bufferPerToken: size('KEYWARD_BUFFER_PER_TOKEN', '8mb'),
    bufferPerOrg: size('KEYWARD_BUFFER_PER_ORG', Math.max(1, Math.floor(bufferBudget / 4))),
    pools: { attempts: int('KEYWARD_POOL_ATTEMPTS', 3, 1, 16), retryBodyMax: size('KEYWARD_RETRY_BODY_MAX', '1mb') },
    headersTimeoutMs: int('KEYWARD_HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000),
    bodyTimeoutMs: int('KEYWARD_BODY_TIMEOUT_MS', 60_000, 100, 3_600_000),
    upstreamConnectTimeoutMs: int('KEYWARD_UPSTREAM_CONNECT_TIMEOUT_MS', 10_000, 1, 3_600_000),
    upstreamIdleTimeoutMs: int('KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS', 600_000, 1, 86_400_000),
    wsMaxMessage: size('KEYWARD_WS_MAX_MESSAGE', '16mb'),
    tls: parseTlsSettings(get, (variable, accepts, got) => { throw new ConfigError(variable, accepts, got); }),
    drainS: int('KEYWARD_DRAIN_S', 8, 0, 3600),
    leaseTtlMs: duration('KEYWARD_LEASE_TTL', '5m', 3_600_000),
    logLevel: oneOf<LogLevel>('KEYWARD_LOG_LEVEL', 'info', ['debug', 'info', 'warn', 'error']),
    adminRate: int('KEYWARD_ADMIN_RATE', 600, 1, 1_000_000),
    authFailures: int('KEYWARD_AUTH_FAILURES', 20, 1, 1_000_000),
    authCooldownS: int('KEYWARD_AUTH_COOLDOWN_S', 60, 1, 86_400),
    trustedProxies: int('KEYWARD_TRUSTED_PROXIES', 0, 0, 32),
    metricsToken, metricsPort: get('KEYWARD_METRICS_PORT') === undefined ? undefined : int('KEYWARD_METRICS_PORT', 0, 0, 65535),
    quota: oneOf('KEYWARD_QUOTA', 'on', ['on', 'off'] as const), // off only when the operator says so: the proxy is then unmetered
    auditRetentionDays: int('KEYWARD_AUDIT_RETENTION_DAYS', 400, 1, 36_500), auditToolCalls: oneOf('KEYWARD_AUDIT_TOOL_CALLS', '0', ['0', '1']) === '1',
    googleTokenUri,
    gceMetadataHost,
    ambientProjects: Object.freeze(ambientProjects),
    traces: parseTraceSettings(get, (variable, accepts, got) => { throw new ConfigError(variable, accepts, got); }),
    ...oidcIssuers(get('KEYWARD_OIDC_ISSUERS'), get('KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK')),
    ...federationConfig(get, kms, fail, duration),
  });
}

const DEFAULT_OIDC_ISSUERS = 'https://token.actions.githubusercontent.com,https://accounts.google.com,https://gitlab.com';

/** Each issuer an https URL without user, query or fragment; plain http only on loopback, and only when the test setting allows it. */
function oidcIssuers(raw: string | undefined, loopback: string | undefined): Pick<Config, 'oidcIssuers' | 'oidcAllowHttpLoopback'> {
  if (loopback !== undefined && loopback !== '1') throw new ConfigError('KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK', '1 (or unset)', loopback);
  // `none`: no issuer is trusted, so no trust policy can be made and every exchange is refused.
  const issuers = raw === 'none' ? [] : (raw ?? DEFAULT_OIDC_ISSUERS).split(',').map((s) => s.trim()).filter(Boolean);
  for (const issuer of issuers) {
    let url: URL | undefined;
    try {
      url = new URL(issuer);
    } catch { /* refused below */ }
    const loopbackHttp = url?.protocol === 'http:' && loopback === '1' && ['127.0.0.1', '[::1]'].includes(url.hostname);
    if (!url || (url.protocol !== 'https:' && !loopbackHttp) || url.username || url.password || url.search || url.hash || issuer.endsWith('/')) {
      throw new ConfigError('KEYWARD_OIDC_ISSUERS', 'a comma-separated list of https issuer URLs without a trailing slash, query or user', redactUrl(issuer));
    }
  }
  return { oidcIssuers: Object.freeze(issuers), oidcAllowHttpLoopback: loopback === '1' };
}

/** As gcp-metadata reads it: `host[:port]`, or an http(s) URL whose path is ignored; the origin only. */
function metadataHost(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'http://169.254.169.254';
  let url: URL | undefined;
  try {
    url = new URL(/^https?:\/\//.test(raw) ? raw : `http://${raw}`);
  } catch {
    url = undefined;
  }
  if (!url || url.username || url.password) throw new ConfigError('GCE_METADATA_HOST', 'host[:port] or an http(s) URL', redactUrl(raw));
  return url.origin;
}
