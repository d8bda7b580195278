/**
 * The exit: one object per proxied request through which every way it can end
 * passes (Envoy's sendLocalReply and onLocalReply are the model), so what must
 * happen at the end happens on every path, once:
 *
 *   refuse     a refusal before forwarding (a stage, the gate, the key)
 *   unforward  the upstream leg gave up before the provider had the whole
 *              request (a scan or signer refusal, a request it cannot build):
 *              nothing counts
 *   fail       an upstream fault (502, 504), or a body cut off after
 *              forwarding began (413): counted
 *   respond    the provider's response head goes out (head: the headers
 *              every head carries, proxied or local)
 *   cut        a failure after the response started: the caller's stream
 *              ends with an error, never a clean end
 *   reattempt  a pooled request's attempt failed before any of its answer
 *              reached the caller and another member takes it over: one that
 *              may have been billed is charged its reservation at every cap
 *              and the next attempt reserves again, or is not made
 *   finish     the caller's response closed, whatever happened: once
 *
 * A local reply (refuse, unforward, fail before any response byte) carries the
 * stages' responseHead exactly as a proxied head does (`x-keyward-*` on every
 * refusal); a request body left unread is drained when small and otherwise
 * ends with its connection (HTTP/1.1) or its stream, reset once the answer
 * has gone out (HTTP/2). Whatever the stages
 * took is given back whenever the request turns out never forwarded. At the
 * end the provider's usage is settled by the one rule (settlement.ts), priced
 * and counted, the span ends and the stages' log hooks run.
 *
 * The upstream leg gets this object and tells it what happened (a usage
 * reader's failure too); it never calls back into the gateway. A core stage
 * ends a stream through its cut (context.ts exitOf), never the raw response
 * (an accepted upgrade's cut closes its session).
 * A WebSocket upgrade is answered through the same calls until it is accepted
 * (its response is written on the upgrade's socket: a refusal, a provider's
 * own refusal passed back through `respond`, a dial's fault); an accepted
 * session counts each response as it settles (`settledPart`: a session may
 * last hours) and calls `finish` when it closes, which then counts the session
 * as the request.
 */
import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError, toApiError } from '../../errors.js';
import { sendError } from '../../http/reply.js';
import { stopUpload } from '../../http/h2c.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../telemetry/metrics.js';
import type { UsageEvent, UsageRecorder } from '../../accounting/usage-recorder.js';
import { unpricedUsage, usageCost, type PriceBook } from '../../pricing/prices.js';
import { settlementPrices } from './price-choice.js';
import type { UnpricedModels } from '../../pricing/unpriced-models.js';
import type { TokenUsage } from '../../catalog/provider.js';
import { bindExit, type RequestContext, type StreamEnd } from '../entry/context.js';
import type { Pipeline } from '../pipeline/pipeline.js';
import type { ToolCallKeys } from '../wire/mcp/tool-calls.js';
import { ResponseModelTap } from '../wire/response-model.js';
import { settledSpend, usageFinal, type ResponseEnd } from './settlement.js';

/** A refused request's body up to this size is drained (the connection kept); a larger or unknown one is not read. */
const DRAIN_LIMIT = 64 * 1024;

/** The services every exchange ends through: one set per gateway. */
export interface ExitServices {
  readonly log: Logger;
  readonly pipeline: Pipeline;
  readonly usage: UsageRecorder;
  readonly metrics: Metrics;
  readonly prices: PriceBook;
  /** Models seen with no price (counted and listed, pricing/unpriced-models.ts). */
  readonly unpriced: UnpricedModels;
  /** The usage breakdown's keys for MCP tool calls (mcp/tool-calls.ts; none on the realtime path, which has no tool calls). */
  readonly toolKeys?: ToolCallKeys;
}

/** What the exit asks of the upstream leg once it has the request. */
export interface UpstreamLeg {
  /** The request went out to the provider (a signer may have held it back). */
  readonly sent: boolean;
  /** The caller is gone: stop what the leg still does for it (a body being read for a signer). */
  abandon(): void;
  /**
   * Once, at the end: the provider's usage as read goes into the request's (`ctx.usage`), and how its response
   * ended is told (undefined: there was no response).
   */
  ended(): ResponseEnd | undefined;
}

export class Exchange implements StreamEnd {
  /** A reader of the response bytes besides the provider's usage reader: the answer's model, when the request's was not read. */
  answered: ResponseModelTap | undefined = undefined;
  /** An accepted upgrade's session (realtime/): what a cut ends (a close 1011), its response never being the caller's. */
  session: StreamEnd | undefined = undefined;
  private leg: UpstreamLeg | undefined;
  private watching = false;
  private finished = false;
  /** A pooled request between attempts: the failed one's leg is done with, the next one's not handed over yet. */
  private between = false;
  /** The stages' answer to `reattempt` while it waits for a store: the end waits for it (nothing held is lost). */
  private reserving: Promise<unknown> | undefined;

  constructor(private readonly exit: ExitServices, readonly ctx: RequestContext, readonly req: IncomingMessage, readonly res: ServerResponse) {
    bindExit(ctx, this);
  }

  /** The caller left before the request was forwarded: nothing was sent, so nothing counts. */
  abandon(): void {
    this.exit.pipeline.undo(this.ctx);
    this.ctx.status = 499;
    this.finish();
  }

  /** A refusal before forwarding: what the stages took goes back, and the caller gets the refusal. */
  refuse(err: unknown): void {
    if (!this.ctx.forwarded) this.exit.pipeline.undo(this.ctx);
    this.reply(this.apiError(err), false);
  }

  /**
   * The request is handed to the upstream leg: from now on it counts, and the exchange ends when the caller's
   * response closes. When no stage read the request's model, the answer's is read to price it (or name it on
   * the span).
   */
  forwarded(leg: UpstreamLeg): void {
    const ctx = this.ctx;
    // A pooled request's next attempt (pool-router.ts): the same exchange, a new leg.
    if (ctx.forwarded) {
      this.leg = leg;
      this.between = false;
      return;
    }
    ctx.forwarded = true;
    ctx.forwardedAt = process.hrtime.bigint();
    this.leg = leg;
    // (An upgrade's answers are a session's messages: its protocol reads their model.)
    if (ctx.model === undefined && !ctx.upgrade && (this.exit.prices.prices(ctx.provider!.id) || ctx.span !== undefined)) this.answered = new ResponseModelTap();
    this.watchClose();
  }

  /** The provider never had the whole request (refused by the body's scan or a signer, or not buildable): nothing counts. */
  unforward(err: ApiError): void {
    const ctx = this.ctx;
    // Once a response started, the request was the provider's: it counts, and only a cut is left.
    if (ctx.forwarded && !this.res.headersSent) {
      ctx.forwarded = false;
      this.exit.pipeline.undo(ctx);
    }
    this.reply(err, true);
  }

  /** An upstream fault, or a body cut off after forwarding began (`unread`: the rest of its body is not read): counted. */
  fail(err: ApiError, unread = false): void {
    this.reply(err, unread);
  }

  /**
   * A pooled request's attempt failed before any of its answer reached the caller, and another member takes the
   * request over (pool-router.ts). `billed`: its body went whole to the member and no answer came (a timeout, a
   * reset), so the provider may have billed it: it is charged what settlement's one rule charges a request with no
   * answer (its whole reservation), counted now on the member that failed, and every cap reserves again for the next
   * attempt. Otherwise (a 429, 529 or 5xx answer, or nothing sent) it cost nothing and what was reserved carries over.
   * Whether the next attempt may go, or a promise of it; false: a cap did not take the next reservation (nothing is
   * held for it) and the attempt's failure is the caller's answer.
   */
  reattempt(billed: boolean): boolean | Promise<boolean> {
    // The caller's response closed already: the end settled this attempt by the one rule.
    if (this.finished) return false;
    this.between = true;
    if (!billed) return true;
    const ctx = this.ctx;
    const micros = settledSpend({ costMicros: undefined, reservedMicros: ctx.reservedMicros, toolFeeMicros: ctx.toolFeeMicros, usageFinal: false, status: undefined });
    if (micros !== undefined && micros > 0) {
      ctx.earlierAttemptsMicros += micros;
      const auth = ctx.auth!;
      const model = this.pricedName(ctx.model);
      this.exit.usage.record({ orgId: auth.credential.orgId, credentialId: auth.credential.id, tokenId: auth.token.id, requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: micros, model });
      this.exit.metrics.spent(ctx.provider!.id, model, micros);
    }
    const fits = this.exit.pipeline.reattempt(ctx);
    if (!(fits instanceof Promise)) return fits;
    const reserving = fits.finally(() => {
      if (this.reserving === reserving) this.reserving = undefined;
    });
    this.reserving = reserving;
    return reserving;
  }

  /** The gateway's and the stages' headers for a response head with `status` about to go out (proxied or local). */
  head(status: number): Record<string, string> {
    const headers: Record<string, string> = { 'x-keyward-request-id': this.ctx.requestId };
    if (this.ctx.attempts) headers['x-keyward-attempts'] = String(this.ctx.attempts.length);
    this.exit.pipeline.responseHead(this.ctx, status, headers);
    return headers;
  }

  /** The provider's response head goes out (a status writeHead takes), with the gateway's and the stages' headers. */
  respond(status: number, reason: string, headers: string[]): void {
    const extra = this.head(status);
    for (const name in extra) headers.push(name, extra[name]!);
    this.res.writeHead(status, reason, headers);
    this.ctx.status = status;
  }

  /** A provider file's usage reader failed (`message`: its first line, secrets masked); what it read is not final. */
  usageUnread(message: string): void {
    this.exit.log.warn({ request_id: this.ctx.requestId, provider: this.ctx.provider?.id, err: message }, 'usage reader failed');
  }

  /** One response of an upgrade's session settled: its tokens and charge are counted now (the session's end counts the request). */
  settledPart(usage: TokenUsage | undefined, micros: number | undefined, model: string | undefined): void {
    const ctx = this.ctx;
    const auth = ctx.auth!;
    if (usage) {
      ctx.usage.inputTokens += usage.inputTokens;
      ctx.usage.outputTokens += usage.outputTokens;
    }
    if (micros !== undefined) ctx.spentMicros = (ctx.spentMicros ?? 0) + micros;
    const priced = this.pricedName(model);
    this.exit.usage.record({
      orgId: auth.credential.orgId, credentialId: auth.credential.id, tokenId: auth.token.id, requests: 0,
      inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0, spendMicros: micros ?? 0, model: priced,
    });
    this.exit.metrics.spent(ctx.provider!.id, priced, micros ?? 0);
  }

  /** The price table's name for a model (metrics and the usage breakdown count by it), or `unpriced`. */
  private pricedName(model: string | undefined): string {
    return (model === undefined ? undefined : this.exit.prices.match(this.ctx.provider!.id, model))?.name ?? 'unpriced';
  }

  /**
   * After the response started: the caller sees the status (if no byte carried it yet), then an unclean end (HTTP/1.1:
   * no last chunk, the connection closed; HTTP/2: RST_STREAM INTERNAL_ERROR, never the NO_ERROR of a finished answer).
   */
  cut(): void {
    const { req, res } = this;
    if (this.session) return this.session.cut();
    if (res.destroyed) return;
    if (this.ctx.bytesOut === 0 && res.headersSent) res.flushHeaders();
    // The HTTP/2 stream as the compatibility API exposes it.
    if (req.httpVersionMajor >= 2) (req as unknown as { stream?: { close(code?: number): void } }).stream?.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    else res.destroy();
  }

  /** Whether the caller's side is gone (its response destroyed). */
  get gone(): boolean {
    return this.res.destroyed;
  }

  /**
   * The local reply (Envoy's sendLocalReply): the error with the stages' response headers; a cut instead once a
   * response started. `unread`: the request's body will not be read on, so its connection or stream ends after.
   */
  private reply(err: ApiError, unread: boolean): void {
    const { ctx, req, res } = this;
    this.watchClose();
    if (res.destroyed || res.headersSent) {
      this.cut();
      return;
    }
    ctx.error = err;
    ctx.status = err.status;
    const headers = this.head(err.status);
    const declared = req.headers['content-length'];
    // The body is not read on: HTTP/1.1 closes the connection after the reply, HTTP/2 ends the stream.
    const stop = !req.readableEnded && ctx.bodyFollows && (unread || declared === undefined || Number(declared) > DRAIN_LIMIT);
    if (stop && req.httpVersionMajor < 2) headers.connection = 'close';
    req.resume();
    ctx.body?.resume();
    sendError(res, err, headers);
    if (stop) stopUpload(req);
  }

  private apiError(err: unknown): ApiError {
    if (!(err instanceof ApiError)) this.exit.log.error({ err, request_id: this.ctx.requestId }, 'proxy request failed');
    return toApiError(err);
  }

  /** The exchange ends when the caller's response closes (at once if it already has). */
  private watchClose(): void {
    if (this.watching) return;
    this.watching = true;
    if (this.res.destroyed) setImmediate(() => this.finish());
    this.res.once('close', () => this.finish());
  }

  /** The end, once: the leg stops, the usage is settled by the one rule, priced and counted, then the log hooks. */
  finish(): void {
    if (this.finished) return;
    // A pooled request's next reservation is on its way from the store: the end settles what it holds once it has.
    if (this.reserving) {
      void this.reserving.then(() => this.finish());
      return;
    }
    this.finished = true;
    const { ctx, leg, exit } = this;
    if (this.between || (ctx.attempts && ctx.attempts.length > 1 && leg && !leg.sent)) {
      // A pooled request's next attempt was never sent: what was reserved for it goes back; the earlier attempts
      // count as they were charged (once for quota).
      this.between = false;
      exit.pipeline.undoReattempt(ctx);
    } else if (leg && !leg.sent && ctx.forwarded) {
      // The caller left while a signer worked: nothing was sent, so nothing counts.
      ctx.forwarded = false;
      exit.pipeline.undo(ctx);
    }
    leg?.abandon();
    if (ctx.auth) exit.unpriced.observe(ctx.auth.credential.orgId, ctx.provider?.id ?? 'unknown', ctx.model ?? this.answered?.model);
    if (ctx.forwarded) {
      exit.metrics.proxied(ctx.provider!.id, ctx.status ?? 499, Number(process.hrtime.bigint() - ctx.forwardedAt) / 1e9, ctx.ttfbMs === undefined ? undefined : ctx.ttfbMs / 1000);
      // An upgrade's responses were counted as each settled (settledPart): its end counts the request only.
      const counted = ctx.upgrade ? undefined : ctx;
      let model = this.pricedName(ctx.model);
      if (counted) {
        ctx.usageFinal = usageFinal(leg?.ended());
        model = this.price();
      }
      const event = {
        orgId: ctx.auth!.credential.orgId,
        credentialId: ctx.auth!.credential.id,
        tokenId: ctx.auth!.token.id,
        requests: ctx.requestUnits,
        inputTokens: counted?.usage.inputTokens ?? 0,
        outputTokens: counted?.usage.outputTokens ?? 0,
        // Earlier attempts' charges were counted as each failed (on its member).
        spendMicros: counted ? (counted.spentMicros ?? 0) - counted.earlierAttemptsMicros : 0,
        model,
      };
      if (ctx.toolCalls && ctx.toolCalls.length > 0 && exit.toolKeys) this.recordToolCalls(exit.toolKeys, event, ctx.toolCalls);
      else exit.usage.record(event);
    } else if (ctx.error) {
      exit.metrics.refused(ctx.error.code, ctx.provider?.id, ctx.error.status);
    }
    ctx.status ??= this.res.headersSent ? this.res.statusCode : 499;
    ctx.span?.end(ctx);
    void exit.pipeline.logAll(ctx);
  }

  /**
   * An MCP request's usage, by the tools it called (the breakdown's `tool:<provider>:<tool>`, not the `unpriced` of a
   * request naming no model): each call is one request under its tool's key; what the response reported (tokens,
   * spend) goes with the first.
   */
  private recordToolCalls(keys: ToolCallKeys, event: UsageEvent, tools: readonly string[]): void {
    let first = true;
    for (const [model, requests] of keys.count(event.orgId, this.ctx.provider!.id, tools)) {
      this.exit.usage.record(first ? { ...event, requests, model } : { ...event, requests, model, inputTokens: 0, outputTokens: 0, spendMicros: 0 });
      first = false;
    }
  }

  /**
   * The cost of what the provider reported (ctx.costMicros, µ$; undefined when it reported nothing or the model
   * has no price) and what the request spent by the one rule (ctx.spentMicros), counted in the metrics under the
   * price table's name for the model (or `unpriced`), which it returns (the usage breakdown's model).
   */
  private price(): string {
    const ctx = this.ctx;
    const provider = ctx.provider!.id;
    ctx.responseModel = this.answered?.model;
    const model = ctx.model ?? ctx.responseModel;
    // The tiers the request asked for and the ones the response says served it: charged at the dearer.
    const { match, candidates, unpriced } = settlementPrices(this.exit.prices, ctx, model);
    const reported = ctx.usage.inputTokens > 0 || ctx.usage.outputTokens > 0;
    ctx.costMicros = match && reported ? Math.max(...candidates.map((p) => usageCost(p, ctx.usage))) : undefined;
    const priced = match?.name ?? 'unpriced';
    if (unpriced.length > 0) {
      ctx.usageUnpriced = true;
      for (const c of unpriced) this.exit.unpriced.observeDimension(provider, priced, c.label);
    }
    // A usage field the reader does not know, or one the model has no price for: fail closed, and counted.
    const unknown = [...(ctx.usage.unknownFields ?? []), ...(match && reported ? unpricedUsage(match.price, ctx.usage) : [])];
    if (unknown.length > 0) {
      ctx.usageUnpriced = true;
      for (const field of unknown) this.exit.metrics.unknownUsage(provider, field);
    }
    const last = settledSpend(ctx);
    // A pooled request's earlier attempts were charged (and counted in the metrics) as each failed.
    ctx.spentMicros = ctx.earlierAttemptsMicros > 0 ? (last ?? 0) + ctx.earlierAttemptsMicros : last;
    this.exit.metrics.spent(provider, priced, last ?? 0);
    return priced;
  }
}
