/**
 * What a middleware sees of one request (RequestView): ids, the route's parameters, the body fields the stages
 * declared and read, the response's status, usage and spend once known. Read-only: a plugin changes a request
 * only by refusing it (access), adding response headers (responseHead) or, with body hooks, its bytes.
 */
import type { GatewayError } from './errors.js';
import type { IncomingHeaders } from './provider.js';

/** A body field's value as the body scan reports it: scalars with their value; objects and arrays by kind only. */
export type FieldValue =
  | { readonly kind: 'string'; readonly value: string | undefined } // undefined: longer than the capture limit
  | { readonly kind: 'number'; readonly value: number } // NaN: a number too long to read
  | { readonly kind: 'boolean'; readonly value: boolean }
  | { readonly kind: 'null' | 'object' | 'array' };

/** A top-level array whose elements a stage wants recorded (`tools`): of each element, the values of `values` and its keys. */
export interface ElementsWanted {
  readonly field: string;
  readonly values: readonly string[];
}

/** The elements of the wanted array, as far as they were recorded. */
export interface ElementsFound {
  readonly items: readonly { readonly values: ReadonlyMap<string, FieldValue>; readonly keys: ReadonlySet<string> }[];
  /** Some element was not recorded whole (too many elements, or too many keys in one). */
  readonly truncated: boolean;
}

/** The JSON-RPC messages of a body (one object, or a batch), each one's wanted fields. */
export interface MessagesFound {
  readonly items: readonly ReadonlyMap<string, FieldValue>[];
  readonly batch: boolean;
}

/** What a plugin sees of one request: read-only, live (later stages fill in more); only `state` is the plugin's to write. */
export interface RequestView<State = Record<string, unknown>> {
  readonly requestId: string;
  readonly method: string;
  /** The provider path, decoded and normalised, without a leading slash ('' when it does not normalise). */
  readonly path: string;
  /** The query string without `?`, before credential parameters are removed. */
  readonly query: string;
  /** The caller's headers, as they arrived (credential headers included: never log them). */
  readonly headers: IncomingHeaders;
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
  /** From auth (900) on, for a token minted for a team (`team_id`): the team, and with `member_id` the member it acts for. */
  readonly teamId?: string | undefined;
  readonly memberId?: string | undefined;
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
  readonly error: GatewayError | undefined;
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
   * reader does not know): the request is charged no less than its reservation .
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
   * reservation. 0 for every other request.
   */
  readonly earlierAttemptsMicros: number;
  /**
   * This plugin's own per-request object (never another plugin's), typed through `defineMiddleware<State>()`: made
   * empty for each request; the plugin fills it.
   */
  readonly state: State;
}

