/**
 * The two plugin contracts, for plugin authors. A provider is one declarative
 * object (providers/*.ts). A middleware is a stage of one ordered pipeline
 * (Kong's PRIORITY: higher runs first; Envoy's two directions), where the
 * core's own stages (src/gateway/stages/, always on, in a fixed order) and the
 * optional plugins KEYWARD_PLUGINS names meet:
 *
 *   abuse 1000 · auth 900 · route 800 · scopes 700 · body 600 · models 550 · tools 540 ·
 *   operator plugins 500..300 · rate 250 · concurrency 170 · max_requests 150 · tokens_per_minute 130 ·
 *   budget 120 · quota 100 · admit 0 (the gate: a body a stage must read was read)
 *
 * `access` runs in that order and may refuse by throwing a GatewayError before
 * anything is sent upstream; when a later stage refuses, or the caller leaves
 * before the request is forwarded, every stage whose access completed runs its
 * `undo` in reverse order (give back what you took: nothing unforwarded
 * counts). `responseHead` adds headers before the first byte goes back, on a
 * proxied response and on a refusal alike; `log` runs after the last byte and
 * can never change the response. A stage that reserves against a cap may add
 * `reattempt`: a pooled request's attempt that may have been billed is charged
 * what was reserved for it, and the next attempt reserves again. Stages see a read-only view of the request
 * (RequestView), never the raw req/res, and services only through PluginHost.
 *
 * A plugin's streaming body hooks (`requestBody`, `responseBody`) see every piece of a body as it passes, and
 * may pass, change, hold back or refuse it, within their declared `maxBuffer` (body-hooks.ts says when each runs).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TSchema, Type } from '@sinclair/typebox';
import type { PluginConfig } from '../../settings/config.js';
import type { Logger } from '../../log.js';
import { ApiError, Errors } from '../../errors.js';
import type { ElementsFound, ElementsWanted, FieldValue } from '../wire/json-field-scanner.js';
import type { MessagesFound } from '../wire/json-fields.js';

export { ApiError as GatewayError, Errors };

export type { CredentialField, HttpMethod, ProviderPlugin, ProviderRoute } from '../../catalog/provider.js';
export type { TokenCarriers } from '../../catalog/registry.js';
export type { ToolScan } from '../../pricing/billed-tools.js';
export type { ResolvedToken } from '../../vault/token-service.js';
export type { ElementsFound, ElementsWanted, FieldValue } from '../wire/json-field-scanner.js';
import type { ProviderPlugin } from '../../catalog/provider.js';
import type { TokenUsage } from '../../catalog/provider.js';
export type { PriceEntry } from '../../pricing/prices.js';
import type { ResolvedToken } from '../../vault/token-service.js';

/** What a stage sees of one request. The same object all the way through; only `state` is a plugin's to write. */
export interface RequestView {
  readonly requestId: string;
  readonly method: string;
  /** The provider path, decoded and normalised, without a leading slash ('' when it does not normalise). */
  readonly path: string;
  /** The query string without `?`, before credential parameters are removed. */
  readonly query: string;
  /** The caller's headers, as they arrived (credential headers included: never log them). */
  readonly headers: Readonly<IncomingHttpHeaders>;
  /**
   * Whether body bytes follow the head, read from the transport's framing (HTTP/2: the HEADERS frame did not end
   * the stream; HTTP/1.1: Transfer-Encoding or a Content-Length other than 0), never from content-length alone.
   */
  readonly bodyFollows: boolean;
  /** The client address: X-Forwarded-For as far as KEYWARD_TRUSTED_PROXIES trusts it, else the socket's. */
  readonly ip: string;
  /** process.hrtime.bigint() when the request arrived. */
  readonly startedAt: bigint;
  /** From auth (900) on: the resolved token's organisation, credential, token and provider ids. */
  readonly orgId: string | undefined;
  readonly credentialId: string | undefined;
  readonly tokenId: string | undefined;
  readonly providerId: string | undefined;
  /** From route (800) on: path parameters of the matched route, e.g. { model: 'gemini-2.0-flash' }. */
  readonly params: Readonly<Record<string, string>> | undefined;
  /** The model the request names: its path's `{model}` (from route), else the body's `model` once a stage declared it in `body.fields`. */
  readonly model: string | undefined;
  /** The body fields the stages declared (`body.fields`), when the body stage read them for this request. */
  readonly bodyFields: ReadonlyMap<string, FieldValue> | undefined;
  /** The whole body's length in bytes, when a stage asked for `body.toEnd` (undefined otherwise). */
  readonly bodyBytes: number | undefined;
  /** The `body.keys` found anywhere in the body (lower-cased), when a stage asked for `body.toEnd`. */
  readonly bodyKeys: ReadonlySet<string> | undefined;
  /** The elements of the array a stage asked for (`body.elements`: the body's `tools`), recorded to the body's end. */
  readonly bodyElements: ElementsFound | undefined;
  /** Each JSON-RPC message's fields, in order, when a stage asked for `body.messages` (undefined otherwise). */
  readonly bodyMessages: MessagesFound | undefined;
  /**
   * How many requests this one counts as for quota, `max_requests` and usage: 1; for an MCP server's POST, the
   * `tools/call` messages it forwards (0 for other methods). Set by the tools stage.
   */
  readonly requestUnits: number;
  /** The tools an MCP request calls (`tools/call` names, in order), when the tools stage read them. */
  readonly toolCalls: readonly string[] | undefined;
  /** Set by the quota stage: what this organisation has left this month. */
  readonly quotaRemaining: number | undefined;
  /** True once the request was handed to the upstream: it counts against quota. */
  readonly forwarded: boolean;
  /** The status sent to the caller (the provider's, or the gateway's own). */
  readonly status: number | undefined;
  /** The gateway's refusal or upstream fault, if any. */
  readonly error: ApiError | undefined;
  /** Response bytes sent to the caller. */
  readonly bytesOut: number;
  /** Milliseconds from arrival to the first upstream response byte. */
  readonly ttfbMs: number | undefined;
  /** Token counts read from the provider's `usage` as the bytes passed. */
  readonly usage: { readonly inputTokens: number; readonly outputTokens: number; readonly cachedInputTokens?: number };
  /**
   * Set with `costMicros`: the provider said the message ended (its end-of-message event, or one complete body), so
   * `usage` is final. A stream's end is looked for only when a reservation is settled against it (else false).
   */
  readonly usageFinal: boolean;
  /**
   * The response reported what the price book does not price (a tier no declaration prices, a usage field the
   * reader does not know): the request is charged no less than its reservation (settlement.ts).
   */
  readonly usageUnpriced: boolean;
  /** Micro-dollars: the cost of `usage` at the model's price, set after the last byte (before `log` hooks); undefined when no usage was reported or the model has no price. */
  readonly costMicros: number | undefined;
  /** Micro-dollars reserved for this request's worst case by the budget stage (undefined: no budget applies). */
  readonly reservedMicros: number | undefined;
  /**
   * Micro-dollars of provider-side tool fees inside that reservation (the most the body's tools' uses allow): a
   * provider's usage counts tokens, not searches, so they are charged on top of it when the request settles.
   */
  readonly toolFeeMicros: number | undefined;
  /**
   * Micro-dollars this request spent, as counted everywhere (usage, budgets, metrics, the log line), set with
   * `costMicros`: the reported cost; 0 when the provider answered an error and reported nothing; the whole
   * reservation when nothing was reported (caller gone, stream cut); undefined when unpriced and unbudgeted.
   */
  readonly spentMicros: number | undefined;
  /**
   * Micro-dollars charged to a pooled request's earlier attempts, included in `spentMicros`: each attempt whose body
   * went whole to a member that then gave no answer (timeout, reset) may have been billed, so it is charged its whole
   * reservation (settlement's one rule). 0 for every other request.
   */
  readonly earlierAttemptsMicros: number;
  /** Per-request scratch space for plugins, keyed by plugin name. */
  readonly state: Map<string, unknown>;
}

/** The core's own context: what the core's stages (auth, quota, …) and the upstream leg write. */
export interface ProxyContext extends RequestView {
  /** Set by the auth stage. */
  auth?: ResolvedToken;
  /** Set by the route stage from the credential's provider. */
  provider?: ProviderPlugin;
  /** The provider's route the request matched (route stage): its method and declared path pattern. */
  readonly route?: { readonly method: string; readonly path: string };
  params: Readonly<Record<string, string>> | undefined;
  model: string | undefined;
  bodyFields: ReadonlyMap<string, FieldValue> | undefined;
  bodyBytes: number | undefined;
  bodyKeys: ReadonlySet<string> | undefined;
  bodyElements: ElementsFound | undefined;
  bodyMessages: MessagesFound | undefined;
  requestUnits: number;
  toolCalls: readonly string[] | undefined;
  quotaRemaining: number | undefined;
  forwarded: boolean;
  status: number | undefined;
  error: ApiError | undefined;
  bytesOut: number;
  ttfbMs: number | undefined;
  /** What the usage reader read (catalog/provider.ts TokenUsage: counts, their parts, reported tiers, unknown fields). */
  usage: TokenUsage;
  usageFinal: boolean;
  usageUnpriced: boolean;
  costMicros: number | undefined;
  reservedMicros: number | undefined;
  toolFeeMicros: number | undefined;
  spentMicros: number | undefined;
  earlierAttemptsMicros: number;
  /** Node's per-name arrays of the caller's headers (a repeated credential header is ambiguous). */
  readonly headersDistinct: NodeJS.Dict<string[]>;
  /**
   * Whether the caller sent header `name` (lower case) more than once. Node keeps only the first of some
   * repeated headers in `headers` and joins others; this reads the raw lines, and builds nothing (headersDistinct
   * builds an array for every header).
   */
  repeatedHeader(name: string): boolean;
}

/** The response head about to go out; valid only during the responseHead call. */
export interface ResponseHead {
  /** The provider's status, or the gateway's refusal's. */
  readonly status: number;
  /** Adds a response header. Framing headers (content-length, transfer-encoding, connection) and x-keyward-request-id are refused. */
  setHeader(name: string, value: string): void;
}

/** A stage that needs body fields: the body stage (600) reads them by a bounded streaming scan before this stage's access. */
export interface BodyNeed<Ctx extends RequestView = RequestView> {
  /** Dotted paths into the top-level JSON object: `model`, `generationConfig.maxOutputTokens`. */
  readonly fields: readonly string[];
  /**
   * Whether this request needs them (default: always). Asked only when a body follows (`bodyFollows`); the gate asks
   * again right before forwarding, and a request this says needs its body, unread, is refused 503 (fail closed). A
   * body that is not one JSON object is refused with 400.
   */
  when?(ctx: Ctx): boolean;
  /** Read the whole body before this stage's access (its length as `bodyBytes`), not only until the fields are found. */
  readonly toEnd?: boolean;
  /** Keys to notice at any depth of the body (compared without case), reported in `bodyKeys`. */
  readonly keys?: readonly string[];
  /**
   * Keys (at any depth) whose values are not searched for `keys`: declarations (a `tools` array's JSON schemas
   * naming a `url` parameter) rather than content. Several stages asking: skipped only where all of them skip.
   */
  readonly keysSkip?: readonly string[];
  /** A top-level array whose elements are recorded (their `values` and keys), reported in `bodyElements`; read to the body's end. */
  readonly elements?: ElementsWanted;
  /**
   * The body is JSON-RPC: one message object or a batch of them (a top-level array). `fields` are read from each
   * message apart, reported in `bodyMessages`; read to the body's end; a case variant of a field's key is refused.
   */
  readonly messages?: boolean;
}

/**
 * What a body hook answers for a piece: `undefined` (the piece passes unchanged), or the replacement: bytes or a
 * string (sent as UTF-8); an empty one holds the piece back (the hook gives it out later, changed or not).
 */
export type BodyHookResult = Uint8Array | string | undefined | void;

/**
 * A streaming body hook: called with each piece of the body as it passes (a `Uint8Array`; the
 * hook may keep it), then once with `null` at the end (flush: return what is still held). Synchronous; refuses by
 * throwing a GatewayError (any lower_snake_case code, e.g. `content_refused`). On a realtime session each message
 * is a body of its own: its bytes, then `null`.
 */
export type BodyHook<Ctx extends RequestView = RequestView> = (piece: Uint8Array | null, ctx: Ctx) => BodyHookResult;

/** One stage of the pipeline. Built-in stages implement it directly; a plugin file's `create` returns its hooks. */
export interface ProxyStage<Ctx extends RequestView = RequestView> {
  readonly name: string;
  /** Higher runs first. Operator plugins: 300..500. */
  readonly priority: number;
  readonly body?: BodyNeed<Ctx>;
  /** May refuse by throwing a GatewayError; runs in priority order. */
  access?(ctx: Ctx): void | Promise<void>;
  /** A later stage refused, or the caller left before forwarding: give back what access took (reverse order). */
  undo?(ctx: Ctx): void;
  /**
   * A pooled request's attempt may have been billed (its body went whole to the member, and no answer came: a timeout
   * or a reset), and the request is about to go to the next member: charge what `access` reserved for that attempt at
   * its whole amount (the provider may bill it), then, when `reserve`, reserve the same again for the next attempt and
   * return true if it fits (false: it does not fit; hold nothing). `reserve` is false once an earlier stage's cap did
   * not fit: charge only. When any stage returns false, the next attempt is not made and each stage that reserved
   * again runs its `undo`. An attempt the provider answered (429, 5xx) is not billed: no call, the reservation is
   * kept for the next attempt. Stages without this hook count the request once, whatever its attempts.
   */
  reattempt?(ctx: Ctx, reserve: boolean): boolean | Promise<boolean>;
  /** Before the first byte goes back (a proxied response, a refusal, an upstream fault): add headers. */
  responseHead?(ctx: Ctx, head: ResponseHead): void;
  /** After the last byte, for every request (refused ones too); can never change the response; errors are logged. */
  log?(ctx: Ctx): void | Promise<void>;
  /** On shutdown, before the store closes (quota hands leases back here). */
  close?(): void | Promise<void>;
  /**
   * The request body on its way upstream (HTTP bodies, streamed or with a length; each realtime message from the
   * caller), before the core's body scans read it: what the scans read (model, budget's worst case) is what is sent.
   */
  requestBody?: BodyHook<Ctx>;
  /** The response body on its way to the caller (JSON and SSE alike; each realtime message from the provider), before masking. */
  responseBody?: BodyHook<Ctx>;
  /**
   * Bytes a body hook may hold back per request (per realtime message): what it took in and has not given out,
   * counted per hook and direction (a replacement shorter than what it replaces counts as held; a longer one gives
   * nothing back in advance). Holding more is a refusal. Required of a plugin with a body hook (0: it may change
   * pieces, never hold one back).
   */
  readonly maxBuffer?: number;
}

/**
 * What a plugin's `create` returns: its hooks (name and priority come from the module). `body` here replaces the
 * module's: a `when` that needs what `create` was handed (the plugin's settings, the host).
 */
export type StageHooks<Ctx extends RequestView = RequestView> = Pick<ProxyStage<Ctx>, 'access' | 'undo' | 'reattempt' | 'responseHead' | 'log' | 'close' | 'body' | 'requestBody' | 'responseBody'>;

/**
 * A middleware file's default export. `configSchema` (a TypeBox schema, or a function of TypeBox's `Type`
 * for a file that cannot import it) validates the plugin's section of the KEYWARD_PLUGIN_CONFIG file at
 * start-up; `create` gets that section (defaults applied) and may throw to stop start-up.
 */
export interface PluginModule<Ctx extends RequestView = RequestView, Settings = unknown> {
  readonly name: string;
  readonly priority: number;
  /** Bytes its body hooks may hold back per request (ProxyStage's `maxBuffer`). */
  readonly maxBuffer?: number;
  readonly body?: BodyNeed<Ctx>;
  readonly configSchema?: TSchema | ((type: typeof Type) => TSchema);
  create(host: PluginHost, config: Settings): StageHooks<Ctx> | Promise<StageHooks<Ctx>>;
}

/**
 * Services a middleware may use: nothing that resolves a token, takes quota or reserves spend (the core's stages do
 * that with the core's own services; a plugin is someone else's code).
 */
export interface PluginHost {
  /** The contract's errors, for plugins outside this package: `throw host.errors.pathNotAllowed()`. */
  readonly errors: typeof Errors;
  /** Build any other refusal: `new host.GatewayError(403, 'permission', 'ip_not_allowed', '…')`. */
  readonly GatewayError: typeof ApiError;
  /** The settings, without any secret (no admin token, no local keys, no other plugin's configuration). */
  readonly config: PluginConfig;
  readonly logger: Logger;
  readonly providers: {
    /** Every query parameter any provider declares as a key carrier. */
    readonly keyQueryParams: readonly string[];
  };
  readonly audit: {
    /** Records a refusal of this request (aggregated per organisation, action, address and minute; ids only). */
    refused(ctx: RequestView, action: string): void;
  };
}

/**
 * @deprecated The first form of a middleware: a class, factory or object with `onRequest` (run as
 * `access` at priority 400) and `onDone` (run as `log`). Still loaded, with a warning at start-up.
 */
export interface MiddlewarePlugin {
  readonly name: string;
  onRequest?(ctx: RequestView): void | Promise<void>;
  onDone?(ctx: RequestView): void | Promise<void>;
  close?(): void | Promise<void>;
}

/** @deprecated See MiddlewarePlugin. */
export type MiddlewareFactory =
  | (new (host: PluginHost) => MiddlewarePlugin)
  | ((host: PluginHost) => MiddlewarePlugin | Promise<MiddlewarePlugin>);
