/**
 * The host: everything a middleware uses at run time, handed to its `create` (Kong's PDK is the model). A plugin
 * imports only types from this package; its errors, logger, clock, timers and settings come from here, so it
 * never needs a second copy of Keyward. Nothing here resolves a token, takes quota or reserves spend: the
 * core's own stages do that, and a plugin is someone else's code.
 */
import type { GatewayErrorConstructor, HostErrors } from './errors.js';
import type { IncomingHeaders } from './provider.js';
import type { RequestView } from './request.js';

/** One JSON line per call (Cloud Logging's shape). Log ids and counts: never a key, a token, a header value or a body. */
export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** The wall clock (dates, expiries); tests drive it. */
export interface Clock {
  now(): number;
}

/** Time that only moves forward, and work for later: what a retry's back-off waits on (tests drive these too). */
export interface Timers {
  /** Milliseconds on a monotonic clock: for ages and intervals, never for dates. */
  elapsed(): number;
  /** Calls `fn` once after `ms` unless the returned function is called first. Never keeps the process alive. */
  after(ms: number, fn: () => unknown): () => void;
  /** Calls `fn` every `ms` until the returned function is called. Never keeps the process alive. */
  every(ms: number, fn: () => unknown): () => void;
}

/** The gateway's settings a plugin may read: none of them is a secret (no admin token, no keys, no other plugin's settings). */
export interface HostConfig {
  readonly host: string;
  readonly port: number;
  /** `sqlite` or `firestore`. */
  readonly store: string;
  /** The Google Cloud project, when set (GOOGLE_CLOUD_PROJECT). */
  readonly gcpProject: string | undefined;
  readonly kms: string;
  readonly upstreamOverrides: Readonly<Record<string, string>>;
  /** KEYWARD_PROVIDERS_DIR, when set. */
  readonly providersDir: string | undefined;
  /** KEYWARD_PLUGINS_DIR, when set. */
  readonly pluginsDir: string | undefined;
  readonly builtinPluginsDir: string;
  /** KEYWARD_PLUGINS: the optional plugins loaded, in order. */
  readonly plugins: readonly string[];
  readonly freeCredentials: number;
  readonly freeProxyRequests: number;
  readonly maxTtlMs: number;
  readonly maxBody: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly upstreamConnectTimeoutMs: number;
  readonly upstreamIdleTimeoutMs: number;
  readonly drainS: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly adminRate: number;
  readonly authFailures: number;
  readonly authCooldownS: number;
  readonly quota: 'on' | 'off';
  readonly trustedProxies: number;
}

export interface Host {
  /** Keyward's own refusals: `throw host.errors.pathNotAllowed()`. */
  readonly errors: HostErrors;
  /** Any other refusal: `throw new host.GatewayError(403, 'permission', 'ip_not_allowed', '…')`. */
  readonly GatewayError: GatewayErrorConstructor;
  readonly config: HostConfig;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly providers: {
    /** Every query parameter any provider declares as a key carrier. */
    readonly keyQueryParams: readonly string[];
  };
  readonly audit: {
    /** Records a refusal of this request (aggregated per organisation, action, address and minute; ids only). */
    refused(ctx: RequestView<unknown>, action: string): void;
  };
  /** Micro-dollars as a USD decimal string: 12_500_000 → "12.50". */
  usd(micros: number): string;
  /** A log line's trace fields (Cloud Logging's `logging.googleapis.com/trace`, …) from a request's trace headers. */
  traceFields(headers: IncomingHeaders): Record<string, string | boolean>;
}
