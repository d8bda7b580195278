/**
 * The middleware contract: a file whose default export is a MiddlewarePlugin, one stage of Keyward's ordered
 * pipeline (Kong's PRIORITY: higher runs first). The core's own stages (abuse, auth, route, scopes, body, models,
 * tools, then rate, limits, budget, quota) are always on, in a fixed order; an operator's plugins run between
 * them, at priorities 300 to 500: after authentication and the core's checks, before the rate limit and quota.
 *
 * `access` runs in priority order and may refuse by throwing `host.GatewayError` before anything is sent
 * upstream; when a later stage refuses, or the caller leaves before the request is forwarded, every stage
 * whose access completed runs its `undo` in reverse order. `responseHead` adds headers before the first byte
 * goes back (a proxied response and a refusal alike); `log` runs after the last byte and never changes the
 * response. Body hooks (`requestBody`, `responseBody`) see each piece of a body as it passes, and may pass it,
 * change it or refuse it; what they hold back is bounded by the plugin's `maxBuffer`.
 */
import type { ApiVersion } from './version.js';
import type { Host } from './host.js';
import type { ElementsWanted, RequestView } from './request.js';

/** The response head about to go out; valid only during the responseHead call. */
export interface ResponseHead {
  /** The provider's status, or the gateway's refusal's. */
  readonly status: number;
  /** Adds a response header. Framing headers (content-length, transfer-encoding, connection) and x-keyward-request-id are refused. */
  setHeader(name: string, value: string): void;
}

/** A stage that needs body fields: the body stage (600) reads them by a bounded streaming scan before this stage's access. */
export interface BodyNeed<Ctx = RequestView<unknown>> {
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
 * What a body hook returns for a piece: `undefined` passes it unchanged; bytes or a string replace it (an empty
 * one holds it back, to be given out with a later piece or at the flush). To refuse, throw `host.GatewayError`.
 */
export type BodyPieceResult = undefined | Uint8Array | string;

/**
 * A streaming body hook: called with each piece of the body (a `Uint8Array`) as it passes, then once with `null`
 * at the end (the flush: return what was held back). Runs on HTTP bodies (JSON and SSE) and on each realtime
 * message, before masking (which always runs last towards the caller).
 */
export type BodyHook<State = Record<string, unknown>> = (piece: Uint8Array | null, ctx: RequestView<State>) => BodyPieceResult;

/** The hooks a plugin's `create` returns. Each is optional; a plugin has at least one of access, responseHead, log or a body hook. */
export interface MiddlewareHooks<State = Record<string, unknown>> {
  /** May refuse by throwing a GatewayError; runs in priority order before anything is sent upstream. */
  access?(ctx: RequestView<State>): void | Promise<void>;
  /** A later stage refused, or the caller left before forwarding: give back what access took (reverse order). */
  undo?(ctx: RequestView<State>): void;
  /** Before the first byte goes back (a proxied response, a refusal, an upstream fault): add headers. */
  responseHead?(ctx: RequestView<State>, head: ResponseHead): void;
  /** After the last byte, for every request (refused ones too); never changes the response; errors are logged. */
  log?(ctx: RequestView<State>): void | Promise<void>;
  /** On shutdown. */
  close?(): void | Promise<void>;
  /** The request body, piece by piece, before it goes upstream. */
  requestBody?: BodyHook<State>;
  /**
   * The response body, piece by piece, before masking. With this hook the response head waits until the first piece
   * passed every hook: a refusal before any byte reached the caller is the refusal's status and JSON error; after
   * bytes went out it is a cut (HTTP/1.1 reset, HTTP/2 RST_STREAM), never a clean end.
   */
  responseBody?: BodyHook<State>;
  /** Replaces the plugin's `body`: a `when` that needs what `create` was handed (its settings, the host). */
  body?: BodyNeed<RequestView<State>>;
}

/**
 * Builds a schema with TypeBox's `Type` (what the host hands a `configSchema` function): `(Type) => Type.Object({ … })`.
 * Typed loosely so that a plugin need not depend on TypeBox.
 */
export type SchemaBuilder = { readonly [builder: string]: (...args: any[]) => any };

/** A TypeBox schema, or a function of TypeBox's `Type` returning one. */
export type ConfigSchema = object | ((Type: SchemaBuilder) => object);

/**
 * A middleware file's default export. `configSchema` validates the plugin's section of the KEYWARD_PLUGIN_CONFIG
 * file at start-up; `create` gets that section (defaults applied) as `settings`, and may throw to stop start-up.
 */
export interface MiddlewarePlugin<State = Record<string, unknown>, Settings = any> {
  /** The version of this contract the file is written against: `1`. Missing or another: start-up stops, naming the file. */
  readonly apiVersion: ApiVersion;
  readonly name: string;
  /** Higher runs first; operator plugins take 300 to 500. */
  readonly priority: number;
  /** Bytes a body hook may hold back per request (required with a body hook); holding more refuses the request. */
  readonly maxBuffer?: number;
  readonly body?: BodyNeed<RequestView<State>>;
  readonly configSchema?: ConfigSchema;
  create(host: Host, settings: Settings): MiddlewareHooks<State> | Promise<MiddlewareHooks<State>>;
}
