/**
 * The one context object of a proxied request. Stages get it typed as the
 * read-only RequestView (plugins) or ProxyContext (built-ins); the raw
 * req/res are true private fields, so a plugin cannot reach them even from
 * plain JavaScript: only the core (gateway, body stage) gets them, through
 * requestOf/responseOf. A core stage that must end a stream later (a lost
 * concurrency slot) does it through the request's exit (exitOf: the
 * exchange's cut), never through the raw response. Ids are getters over the resolved token, and the
 * plugins' state map (and the buffer holder, for a body held) is made on first use, so a request
 * costs one object here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import type { ApiError } from '../../errors.js';
import type { Provider } from '../../catalog/registry.js';
import type { TokenUsage } from '../../catalog/provider.js';
import type { CompiledRoute } from '../../catalog/path.js';
import type { ResolvedToken } from '../../vault/token-service.js';
import type { BodyScan } from '../wire/body-scan.js';
import type { BodyHooks } from '../pipeline/body-hooks.js';
import type { BufferHolder } from './buffer-budget.js';
import { rawHeaderCount } from '../upstream/headers.js';
import type { ProxyContext } from '../pipeline/contracts.js';
import type { ElementsFound, FieldValue } from '../wire/json-field-scanner.js';
import type { MessagesFound } from '../wire/json-fields.js';
import type { RequestSpan } from '../../telemetry/tracing.js';

/** The caller's request, for the core only. */
export let requestOf!: (ctx: RequestContext) => IncomingMessage;
/** The response to the caller, for the core only. */
export let responseOf!: (ctx: RequestContext) => ServerResponse;

/** How a core stage ends the caller's stream (exchange.ts). */
export interface StreamEnd {
  /** An unclean end: HTTP/2 RST_STREAM INTERNAL_ERROR, HTTP/1.1 the connection closed, never a clean end. */
  cut(): void;
}
/** The request's exit, for the core only (undefined only for a context no exchange was made for: no caller to end). */
export let exitOf!: (ctx: RequestContext) => StreamEnd | undefined;
/** Called once, by the exchange made for the context. */
export let bindExit!: (ctx: RequestContext, exit: StreamEnd) => void;

/** /v1/mcp/<credential id>: the credential, its resource URL (an OAuth token's audience) and where its protected-resource metadata is. */
export interface McpRoute {
  readonly credentialId: string;
  readonly resource: string;
  readonly metadataUrl: string;
}

export class RequestContext implements ProxyContext {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  #exit: StreamEnd | undefined = undefined;
  #state: Map<string, unknown> | undefined;
  #bufferHolder: BufferHolder | undefined;

  readonly method: string;
  readonly startedAt = process.hrtime.bigint();
  auth: ResolvedToken | undefined = undefined;
  provider: Provider | undefined = undefined;
  /** The matched route of the provider's allow-list (route stage). */
  route: CompiledRoute | undefined = undefined;
  params: Readonly<Record<string, string>> | undefined = undefined;
  model: string | undefined = undefined;
  bodyFields: ReadonlyMap<string, FieldValue> | undefined = undefined;
  bodyBytes: number | undefined = undefined;
  bodyKeys: ReadonlySet<string> | undefined = undefined;
  bodyElements: ElementsFound | undefined = undefined;
  bodyMessages: MessagesFound | undefined = undefined;
  requestUnits = 1;
  toolCalls: readonly string[] | undefined = undefined;
  /** A `tools/list` under a `tools` scope: its answer lists only these tools (mcp/tools-list-filter.ts). */
  toolsListFilter: readonly string[] | undefined = undefined;
  quotaRemaining: number | undefined = undefined;
  forwarded = false;
  status: number | undefined = undefined;
  error: ApiError | undefined = undefined;
  bytesOut = 0;
  ttfbMs: number | undefined = undefined;
  usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  usageFinal = false;
  /** The response reported a tier or a usage field the price book does not price (settled at no less than the reservation). */
  usageUnpriced = false;
  /** µ$: the priced cost of the reported usage, set when the response is over (undefined: none reported, or unpriced). */
  costMicros: number | undefined = undefined;
  reservedMicros: number | undefined = undefined;
  toolFeeMicros: number | undefined = undefined;
  spentMicros: number | undefined = undefined;
  earlierAttemptsMicros = 0;
  /** The model the response named, when the request's own model was not read (response-model.ts). */
  responseModel: string | undefined = undefined;

  /** Pipeline bookkeeping: how many of its request-phase stages completed their access. */
  passed = 0;
  /** The body readers (a bit each, admission.ts) whose fields the body stage's scan found for this request. */
  bodyRead = 0;
  /** The request's body as the gateway reads it (http/h2c.ts requestBody): set by the gateway when a body follows. */
  body: Readable | undefined = undefined;
  /** The body stage's scan, handed to the upstream leg (the held bytes, then the rest). */
  bodyScan: BodyScan | undefined = undefined;
  /** The plugins' body hooks, set by the body stage when any plugin declares one (the response and realtime messages pass them too). */
  bodyHooks: BodyHooks | undefined = undefined;
  /** process.hrtime.bigint() when the request was handed upstream. */
  forwardedAt = 0n;
  /** The request's trace span when tracing is on (done() ends it). */
  span: RequestSpan | undefined = undefined;
  /** A pooled request's attempts so far (pool-router.ts): the member tried and its outcome; `x-keyward-attempts` is their count. */
  attempts: Array<{ credentialId: string; outcome: string }> | undefined = undefined;
  /** A WebSocket upgrade (src/gateway/realtime/): the route stage matches the provider's websocket routes only. */
  upgrade = false;
  /** Keyward's own MCP route, /v1/mcp/<credential id>: the token must be this credential's (auth stage), the path is its MCP endpoint (route stage). */
  mcpRoute: McpRoute | undefined = undefined;

  constructor(
    req: IncomingMessage,
    res: ServerResponse,
    readonly requestId: string,
    /** The provider path; on Keyward's own MCP route, '' until the route stage sets the provider's MCP endpoint. */
    public path: string,
    readonly query: string,
    readonly ip: string,
    /** The gate's judgement from the transport's framing (admission.ts bodyFollows). */
    readonly bodyFollows: boolean,
  ) {
    this.#req = req;
    this.#res = res;
    this.method = req.method ?? 'GET';
  }

  static {
    requestOf = (ctx) => ctx.#req;
    responseOf = (ctx) => ctx.#res;
    exitOf = (ctx) => ctx.#exit;
    bindExit = (ctx, exit) => {
      ctx.#exit = exit;
    };
  }

  get headers(): IncomingMessage['headers'] {
    return this.#req.headers;
  }

  get headersDistinct(): NodeJS.Dict<string[]> {
    return this.#req.headersDistinct;
  }

  repeatedHeader(name: string): boolean {
    return rawHeaderCount(this.#req.rawHeaders, name) > 1;
  }

  get orgId(): string | undefined {
    return this.auth?.credential.orgId;
  }

  get credentialId(): string | undefined {
    return this.auth?.credential.id;
  }

  get tokenId(): string | undefined {
    return this.auth?.token.id;
  }

  /** Whose shares of the buffer budget this request's held bytes count against (its token and organisation), once resolved. */
  get bufferHolder(): BufferHolder | undefined {
    const auth = this.auth;
    if (!auth) return undefined;
    if (this.#bufferHolder?.token !== auth.token.id) this.#bufferHolder = { token: auth.token.id, org: auth.credential.orgId };
    return this.#bufferHolder;
  }

  get providerId(): string | undefined {
    return this.auth?.credential.provider;
  }

  get teamId(): string | undefined {
    return this.auth?.token.teamId;
  }

  get memberId(): string | undefined {
    return this.auth?.token.memberId;
  }

  get state(): Map<string, unknown> {
    return (this.#state ??= new Map());
  }

  /** Each plugin's view of this request, by the plugin's slot (pipeline/plugin-view.ts); made on first use. */
  pluginViews: unknown[] | undefined = undefined;
}
