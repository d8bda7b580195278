/**
 * Realtime sessions over WebSocket: `GET /v1/proxy/<path>` with `Upgrade:
 * websocket`, through to the provider. The upgrade enters the gateway like
 * any proxied request (entry/gateway.ts: its context and exchange, the same
 * gate: abuse, auth, route (websocket routes only), scopes, models (from
 * `?model=`), rate, concurrency, max_requests, budget, quota: one request per
 * session); this is what an admitted upgrade goes on to, its relay:
 *
 *   a transcription session's price under a cap → the key → the provider's
 *   handshake (dial.ts) → the caller's 101 → the session (session.ts, with
 *   the route's message protocol and its ResponseBook) → the exchange's end.
 *
 * Before the 101 every answer is the exchange's, written on the upgrade's
 * socket: a refusal (nothing dialled counts nothing), a dial's fault (502,
 * 504), the provider's own refusal of its handshake passed back as it
 * answered (masked); nothing is upgraded unless the provider's side is open,
 * so the caller never holds a socket to nowhere. The subprotocol answered is
 * the one the provider chose, only if the caller offered it, and never one
 * that carries a key.
 *
 * Why both legs are terminated with `ws` (and not http-proxy-3's `ws()`,
 * which splices the two sockets and never sees a message): masking the key in
 * server messages, reading usage, holding each response's worst case before a
 * `response.create` goes on and answering a refusal with an error event all
 * need each message whole. Measured (bench/rows/realtime.ts, 1,000 sessions × 10
 * messages a second each way, 2 shared cores): ~1.2–1.3× the splice's CPU per
 * message (0.143–0.159 s per 10k against 0.111–0.131) and 35–80 MB more RSS at
 * a thousand sessions (177–230 MB against 141–150); every message relayed in
 * order on both. Kept: the splice cannot enforce what this gateway promises.
 */
import type { IncomingMessage } from 'node:http';
import http from '../../node-http.js';
import type { Duplex } from 'node:stream';
import { releaseUpgrade } from '../../http/upgrade-response.js';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock, Timers } from '../../clock.js';
import type { Config } from '../../settings/config.js';
import { ApiError, Errors, toApiError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { presentedToken } from '../../catalog/presented-token.js';
import { usageCost, type PriceBook } from '../../pricing/prices.js';
import type { UnpricedModels } from '../../pricing/unpriced-models.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { CredentialSecrets, Signer } from '../../catalog/provider.js';
import { modelAllowed } from '../../catalog/scopes.js';
import type { ChangeFeed } from '../../store/ports.js';
import { actingFor, type CredentialService } from '../../vault/credential-service.js';
import type { RequestContext } from '../entry/context.js';
import { signerFor, type SignerSettings } from '../upstream/signers/index.js';
import { stripKeyParams } from '../upstream/headers.js';
import { ResponseBook } from './book.js';
import { dialUpstream, UpstreamRefusal, type Dialed } from './dial.js';
import type { Exchange, UpstreamLeg } from '../exit/exchange.js';
import type { UpgradeRelay } from '../entry/gateway.js';
import { carriesKey, handshakeProblem, offeredProtocols } from './handshake.js';
import { ResponseLimits, type ResponseLimit } from './limits.js';
import { TranscriptionBook, transcriptionPrice } from './transcription.js';
import { protocolOf, realtimeHost } from './protocol-host.js';
import type { RealtimeSessionProtocol } from '../../../sdk/src/realtime.js';
import { Session } from './session.js';
import { SessionRegistry, type TokenResolver } from './sessions.js';

export interface RealtimeServices {
  config: Config;
  log: Logger;
  clock: Clock;
  /** The sessions' sweep (expiry, idle, a silent feed) runs on these (tests move them). */
  timers: Timers;
  credentials: CredentialService;
  providers: ProviderRegistry;
  prices: PriceBook;
  /** Notes the models sessions name that have no price of their own (GET /v1/providers, the metric). */
  unpriced: UnpricedModels;
  feed: ChangeFeed;
  tokens: TokenResolver;
  /** The per-response limits (spend today; tokens per minute next): limits.ts. */
  limits: readonly ResponseLimit[];
  /** Audits a refusal inside a session (aggregated like the stages' refusals). */
  refused(ctx: RequestContext, action: string): void;
  /** What built-in signers take from the gateway (federation: the same signers, and minted tokens, as the proxy's). */
  signers?: SignerSettings;
}

export class RealtimeRelay implements UpgradeRelay {
  private readonly wss: WebSocketServer;
  private readonly sessions: SessionRegistry;
  private readonly signers = new Map<string, Signer>();
  /** What the caller is answered with, per handshake, while ws writes its 101. */
  private readonly answers = new WeakMap<IncomingMessage, { protocol: string; headers: string[] }>();

  constructor(private readonly s: RealtimeServices) {
    this.sessions = new SessionRegistry(s.feed, s.tokens, s.clock, s.timers, s.config.upstreamIdleTimeoutMs);
    for (const id of s.providers.ids()) {
      const p = s.providers.get(id)!;
      if (p.routes.some((r) => r.websocket)) {
        this.signers.set(id, signerFor(p, { google: { tokenUri: s.config.googleTokenUri, metadataOrigin: s.config.gceMetadataHost, ambientProjects: s.config.ambientProjects }, log: s.log, ...s.signers }));
      }
    }
    this.wss = new WebSocketServer({
      noServer: true, clientTracking: false, perMessageDeflate: false, maxPayload: s.config.wsMaxMessage,
      // The provider's choice, if the caller offered it; never a protocol that carries a key.
      handleProtocols: (offered, req) => {
        const p = this.answers.get(req)?.protocol ?? '';
        return p !== '' && offered.has(p) && !carriesKey(p, s.providers.tokenCarriers) ? p : false;
      },
    });
    this.wss.on('headers', (headers: string[], req: IncomingMessage) => {
      const extra = this.answers.get(req)?.headers ?? [];
      for (let i = 0; i < extra.length; i += 2) headers.push(`${extra[i]}: ${extra[i + 1]}`);
    });
  }

  get openSessions(): number {
    return this.sessions.size;
  }

  drain(ms: number): Promise<void> {
    return this.sessions.drain(ms);
  }

  /** Sessions draining (503), or not a WebSocket handshake this gateway answers (400): nothing else runs. */
  handshakeRefusal(req: IncomingMessage): ApiError | undefined {
    if (this.sessions.draining) return Errors.unavailable();
    const problem = handshakeProblem(req);
    return problem === undefined ? undefined : Errors.badRequest(problem);
  }

  /** An admitted upgrade (entry/gateway.ts): its price, its key, the provider's handshake, then the caller's 101 and the session. */
  relay(exchange: Exchange, socket: Duplex, head: Buffer): void {
    void this.run(exchange, socket, head);
  }

  private async run(exchange: Exchange, socket: Duplex, head: Buffer): Promise<void> {
    const { ctx, req, res } = exchange;
    let credential: CredentialSecrets;
    try {
      await this.transcriptionPriced(ctx);
      credential = actingFor(await this.s.credentials.secretsFor(ctx.auth!.credential), ctx.auth!.token.memberId);
    } catch (err) {
      return exchange.refuse(err);
    }
    // The caller left while we checked: nothing is forwarded, so nothing counts.
    if (exchange.gone) return exchange.abandon();
    exchange.forwarded(SESSION_LEG);
    const offered = offeredProtocols(req) ?? [];
    let dialed: Dialed;
    try {
      dialed = await dialUpstream({
        provider: ctx.provider!, providers: this.s.providers, credential, signer: this.signers.get(ctx.provider!.id)!, path: ctx.path, query: ctx.query, req,
        protocols: offered.filter((p) => !carriesKey(p, this.s.providers.tokenCarriers)), connectTimeoutMs: this.s.config.upstreamConnectTimeoutMs, maxMessage: this.s.config.wsMaxMessage,
      });
    } catch (err) {
      if (!(err instanceof UpstreamRefusal)) {
        if (!(err instanceof ApiError)) this.s.log.error({ err, request_id: ctx.requestId }, 'realtime dial failed');
        return exchange.fail(toApiError(err));
      }
      // The provider's own answer, passed back as it answered (masked), with the gateway's and the stages' headers.
      if (exchange.gone) return;
      exchange.respond(err.status, http.STATUS_CODES[err.status] ?? 'Unknown', [...err.headers, 'content-length', String(err.body.length)]);
      res.end(err.body);
      return;
    }
    ctx.ttfbMs = Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
    if (exchange.gone) {
      // The caller's side closed while the provider answered (the exchange's end, if not yet: forwarded, 499).
      dialed.socket.terminate();
      return exchange.finish();
    }
    this.answers.set(req, { protocol: dialed.protocol, headers: [...dialed.headers, ...headerPairs(exchange.head(101))] });
    releaseUpgrade(res, socket);
    let caller: WebSocket | undefined;
    this.wss.handleUpgrade(req, socket, head, (ws) => (caller = ws));
    if (!caller) {
      // ws refused the handshake after all, or the socket closed: the provider's side goes too.
      this.answers.delete(req);
      dialed.socket.terminate();
      ctx.status = 499;
      return exchange.finish();
    }
    ctx.status = 101;
    this.start(exchange, caller, dialed);
  }

  /**
   * `?intent=transcription` under a cap: a session whose audio cannot be priced is not opened (400 price_unknown):
   * a route that declares no audio-token rate, or a transcription model the upgrade names (Azure's deployment) with
   * no price or bound. One named later (the session's settings) is checked when it is.
   */
  private async transcriptionPriced(ctx: RequestContext): Promise<void> {
    const ws = ctx.route?.websocket;
    if (!ws || protocolOf(ws.protocol).transcribesFromStart?.(this.queryOf(ctx)) !== true) return;
    if (!(await this.limitsOf(ctx).applies())) return;
    const rate = ws.inputAudioTokensPerSecond;
    if (ctx.model !== undefined || rate === undefined) transcriptionPrice(ctx.model, ctx.model === undefined ? undefined : this.s.prices.lookup(ctx.provider!.id, ctx.model), rate);
  }

  /** The upgrade's query as a protocol reads it: without the parameters that carry keys (a ptok sent as `?key=`). */
  private queryOf(ctx: RequestContext): URLSearchParams {
    return new URLSearchParams(stripKeyParams(ctx.query, this.s.providers.keyQueryParams));
  }

  private limitsOf(ctx: RequestContext): ResponseLimits {
    const auth = ctx.auth!;
    return new ResponseLimits(this.s.limits, {
      tokenId: auth.token.id, orgId: auth.credential.orgId, tokenBudget: auth.token.scopes.budgetMicros, scopes: auth.token.scopes as Record<string, unknown>,
      teamId: auth.token.teamId, memberId: auth.token.memberId,
    });
  }

  private start(exchange: Exchange, caller: WebSocket, dialed: Dialed): void {
    const { ctx, req } = exchange;
    const auth = ctx.auth!;
    const provider = ctx.provider!.id;
    const scope = auth.token.scopes.models;
    const limits = this.limitsOf(ctx);
    let protocol: RealtimeSessionProtocol | undefined;
    let session: Session | undefined;
    const costOf = (usage: Parameters<typeof usageCost>[1], model?: string) => {
      const name = model ?? protocol?.model;
      const price = name === undefined ? undefined : this.s.prices.lookup(provider, name);
      return price ? usageCost(price, usage) : undefined;
    };
    const book = new ResponseBook(limits, costOf, {
      uncovered: (err) => session?.fail(err, 1008),
      settled: (usage, micros) => exchange.settledPart(usage, micros, protocol?.model),
    });
    const transcriptions = new TranscriptionBook(limits, {
      uncovered: (err) => session?.fail(err, 1008),
      settled: (usage, micros, model) => exchange.settledPart(usage, micros, model ?? protocol?.model),
    });
    protocol = protocolOf(ctx.route!.websocket!.protocol).open(realtimeHost({
      book, transcriptions, model: ctx.model, scoped: scope !== undefined,
      query: this.queryOf(ctx), inputAudioTokensPerSecond: ctx.route!.websocket!.inputAudioTokensPerSecond,
      modelAllowed: (m) => scope === undefined || modelAllowed(scope, m),
      price: (m) => this.s.prices.lookup(provider, m),
      seen: (m) => this.s.unpriced.observe(auth.credential.orgId, provider, m),
    }));
    session = new Session({
      log: this.s.log, requestId: ctx.requestId, protocol, masks: dialed.masks, now: () => this.s.clock.now(),
      fromCallerHooks: ctx.bodyHooks?.filter('request', ctx), fromProviderHooks: ctx.bodyHooks?.filter('response', ctx),
      refused: (err) => {
        if (err.code === 'budget_exhausted') this.s.refused(ctx, 'budget.refused');
      },
      ended: (s) => {
        book.close();
        transcriptions.close();
        remove();
        ctx.bytesOut = s.bytesToCaller;
        exchange.finish();
      },
    }, caller, dialed.socket);
    // A stage's cut (exchange.ts) ends the session from now on.
    exchange.session = session;
    const remove = this.sessions.add(session, auth, presentedToken(req.headers, ctx.query, this.s.providers.tokenCarriers, ctx) ?? '');
    this.answers.delete(req);
    session.start();
  }
}

const headerPairs = (h: Record<string, string>): string[] => Object.entries(h).flat();

/** What the exchange asks of a session's upstream leg: sent once dialled; its usage is settled response by response. */
const SESSION_LEG: UpstreamLeg = { sent: true, abandon: () => undefined, ended: () => undefined };
