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
import { ApiError, Errors } from '../errors.js';

export { ApiError as GatewayError, Errors };

export type { CredentialField, HttpMethod, ProviderPlugin, ProviderRoute } from '../catalog/provider.js';
export type { TokenCarriers } from '../catalog/registry.js';
import type { TokenCarriers } from '../catalog/registry.js';
export type { ResolvedToken } from '../vault/token-service.js';
import type { ProviderPlugin } from '../catalog/provider.js';
import type { ResolvedToken } from '../vault/token-service.js';


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
  usage: { inputTokens: number; outputTokens: number; cachedInputTokens?: number };
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
    /** Where a proxy token may be presented besides X-Proxy-Token: every loaded provider's `tokenIn`. */
    readonly tokenIn: TokenCarriers;
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
