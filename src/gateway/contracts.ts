/**
 * The two plugin contracts. A provider is one declarative object (providers/*.ts);
 * a middleware is one file exporting a class or factory with two hooks
 * (plugins/*.ts), like Kong's access and log phases: `onRequest` may refuse by
 * throwing a GatewayError before anything is sent upstream; `onDone` runs after
 * the last byte and can never affect the response. Plugins see services only
 * through PluginHost, never the container.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PluginConfig } from '../config.js';
import type { Logger } from '../log.js';
import type { TokenRecord } from '../store/ports.js';
import { ApiError, Errors } from '../errors.js';

export { ApiError as GatewayError, Errors };

export type HttpMethod = 'GET' | 'POST' | 'DELETE';

export interface ProviderRoute {
  method: HttpMethod;
  /**
   * The provider's own path without a leading slash; `{name}` matches one path
   * segment (letters, digits, `._~-`), e.g. `v1beta/models/{model}:generateContent`.
   * A `{model}` parameter is what a token's `models` scope is checked against;
   * otherwise the JSON body's `model` field is.
   */
  path: string;
  /**
   * The route reads or changes what the whole provider account shares (batches, files,
   * stored responses, fine-tunes, vector stores, balance or key info): every holder of the
   * same key sees it. A token reaches it only if its `paths` scope names the route's
   * pattern (or one concrete path of it) exactly; unscoped, model-scoped and `prefix*`
   * tokens get 403 path_not_allowed.
   */
  account?: boolean;
}

/**
 * A field of a credential besides `api_key`, declared by the provider. Plain fields only
 * for now: stored in clear with the record, returned in its view, validated (printable
 * ASCII, no spaces, at most 200 characters), and sent upstream in `header`, such as
 * OpenAI's `organization` → `openai-organization`. The caller can never set that header.
 */
export interface CredentialField {
  /** The field's name in `POST /v1/credentials` and the credential's view, e.g. `organization`. */
  name: string;
  kind: 'plain';
  /** The upstream header the value is sent in. */
  header: string;
  /** One line for the OpenAPI document. */
  description?: string;
}

export interface ProviderPlugin {
  /** The credential's `provider` value, e.g. `anthropic`. */
  id: string;
  /** Human name for listings. */
  name?: string;
  /** Origin (and optional base path) of the provider's API, e.g. `https://api.anthropic.com`. */
  upstream: string;
  /** Header that carries the key upstream, e.g. `x-api-key`. */
  keyHeader: string;
  /** Formats the key for `keyHeader`; default `Bearer <key>` for `authorization`, the bare key otherwise. */
  formatKey?: (key: string) => string;
  /** Defaults sent upstream unless the caller sets them, e.g. `anthropic-version`. */
  headers?: Record<string, string>;
  /** Query parameters that carry a key on this provider's API (Gemini's `key`): stripped, and accepted as the proxy token. */
  keyQueryParams?: string[];
  /** Allowed method + path patterns, from the provider's API reference. */
  allow: ProviderRoute[];
  /** Fields a credential of this provider may carry besides `api_key`. */
  credentialFields?: CredentialField[];
}

/** What the auth plugin resolves a proxy token to. */
export interface ResolvedToken {
  token: TokenRecord;
  /** `fields`: the credential's plain fields, so the hot path sends them with no store read. */
  credential: { id: string; orgId: string; provider: string; fields?: Readonly<Record<string, string>> };
}

export interface ProxyContext {
  readonly requestId: string;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly method: string;
  /** The provider path, decoded and normalised, without a leading slash. */
  readonly path: string;
  /** The query string without `?`, before credential parameters are removed. */
  readonly query: string;
  /** The client address: X-Forwarded-For as far as KEYWARD_TRUSTED_PROXIES trusts it, else the socket's. */
  readonly ip: string;
  /** process.hrtime.bigint() when the request arrived. */
  readonly startedAt: bigint;
  /** Set by the auth plugin. */
  auth?: ResolvedToken;
  /** Set by the core from the credential's provider. */
  provider?: ProviderPlugin;
  /** Path parameters of the matched route, e.g. { model: 'gemini-2.0-flash' }. */
  params?: Record<string, string>;
  /** The model the request names, when a scope needed it. */
  model?: string;
  /** Set by the quota plugin: what this organisation has left this month. */
  quotaRemaining?: number;
  /** True once the request was handed to the upstream: it counts against quota. */
  forwarded: boolean;
  /** The status sent to the caller (the provider's, or the gateway's own). */
  status?: number;
  /** The gateway's refusal or upstream fault, if any. */
  error?: ApiError;
  /** Response bytes sent to the caller. */
  bytesOut: number;
  /** Milliseconds from arrival to the first upstream response byte. */
  ttfbMs?: number;
  /** Token counts read from the provider's `usage` as the bytes passed. */
  usage: { inputTokens: number; outputTokens: number };
  /** Per-request scratch space for plugins, keyed by plugin name. */
  readonly state: Map<string, unknown>;
}

export interface MiddlewarePlugin {
  readonly name: string;
  onRequest?(ctx: ProxyContext): void | Promise<void>;
  onDone?(ctx: ProxyContext): void | Promise<void>;
  /** Called on shutdown before the store closes (the quota plugin hands leases back here). */
  close?(): void | Promise<void>;
}

/** Services a middleware may use. */
export interface PluginHost {
  /** The contract's errors, for plugins outside this package: `throw host.errors.pathNotAllowed()`. */
  readonly errors: typeof Errors;
  /** Build any other refusal: `new host.GatewayError(403, 'permission', 'ip_not_allowed', '…')`. */
  readonly GatewayError: typeof ApiError;
  /** The settings, without any secret (no admin token, no local keys). */
  readonly config: PluginConfig;
  readonly logger: Logger;
  readonly tokens: {
    /** Resolves a presented proxy token (cache first), or undefined when it is not valid now. */
    resolve(presented: string): Promise<ResolvedToken | undefined>;
  };
  readonly providers: {
    /** Every query parameter any provider declares as a key carrier. */
    readonly keyQueryParams: readonly string[];
  };
  readonly quota: {
    /** Takes one unit of the organisation's monthly quota; throws 429 quota_exceeded when none is left. */
    reserve(orgId: string): Promise<number>;
    /** Hands every leased, unused unit back to the store. */
    releaseAll(): Promise<void>;
  };
}

/** A middleware file's default export: a class or a factory. */
export type MiddlewareFactory =
  | (new (host: PluginHost) => MiddlewarePlugin)
  | ((host: PluginHost) => MiddlewarePlugin | Promise<MiddlewarePlugin>);
