/**
 * The pipeline's stage contract, for the core: one ordered pipeline (Kong's PRIORITY: higher runs first;
 * Envoy's two directions), where the core's own stages (src/gateway/stages/, always on, in a fixed order)
 * and the optional middleware plugins KEYWARD_PLUGINS names meet:
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
 * what was reserved for it, and the next attempt reserves again.
 *
 * What plugins see (the request view, the response head, body needs, the host) is declared once, in the SDK
 * (sdk/src/: `@keyward/sdk`, what plugin authors import); the core's types here are built from those, so the
 * two cannot drift. A plugin's hooks get its own view of the request (plugin-view.ts), never this context.
 *
 * A plugin's streaming body hooks (`requestBody`, `responseBody`) see every piece of a body as it passes, and
 * may pass, change, hold back or refuse it, within their declared `maxBuffer` (body-hooks.ts says when each runs).
 */
import type { ApiError } from '../../errors.js';
import type { ProviderPlugin, TokenUsage } from '../../catalog/provider.js';
import type { ResolvedToken } from '../../vault/token-service.js';
import type { BodyNeed, RequestView as PluginRequestView, ResponseHead } from '../../../sdk/src/index.js';
import type { ElementsFound, FieldValue } from '../wire/json-field-scanner.js';
import type { MessagesFound } from '../wire/json-fields.js';

export type { BodyNeed, ResponseHead };

/**
 * What a core stage sees of one request: the plugins' view (the SDK's RequestView) with the core's scratch space in
 * place of a plugin's `state` (per-request values of the core's stages, keyed by the stage's own key).
 */
export interface RequestView extends Omit<PluginRequestView, 'state' | 'error'> {
  readonly error: ApiError | undefined;
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
