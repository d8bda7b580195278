/**
 * A pooled token's request on the upstream leg: which member it goes to, and the next one when a member fails
 * before any response byte reached the caller. Envoy's router and its retry state are the model: the gateway
 * hands the leg the admitted exchange once (upstream-router.ts), each attempt is made there, and a failed one
 * comes back here from upstream.ts (`retry`); nothing goes back through the gateway, and the caller hears only
 * through the exchange.
 *
 * Order: the pool's strategy over the members not cooling (`round_robin`: smooth weighted turns, so the
 * spread follows the weights exactly; `ordered`: the listed order; `least_busy`: fewest requests in flight on
 * this instance, then the turn), then on round the list from the chosen one. With every member cooling,
 * the one whose cooling ends first is tried alone (its provider's own answer reaches the caller).
 *
 * Failover: on a connect error, a timeout, or a 429, 500, 502, 503 or 529 answer, the request goes to the
 * next member, at most KEYWARD_POOL_ATTEMPTS members in all; its body is replayed from the bytes the first
 * attempt sent, kept as they passed (or read whole for a signer that needs them): only a body that declared
 * a length of at most KEYWARD_RETRY_BODY_MAX is kept, under the process's buffer budget and the token's
 * share of it; a larger one, one the budget cannot hold, or one the member answered before it was whole,
 * is not retried. Each attempt is built and signed for its member by the upstream
 * leg (a Bedrock pool of two regions is signed for each region). The upstream leg asks before writing any
 * response head (`retry`), so nothing reached the caller; once a head went out nothing is retried, and a
 * stream cut later reaches the caller as a cut. The stages ran once: quota counts once; the member that
 * answered is the request's credential, so usage and settlement are its.
 *
 * Settlement of each attempt (the exchange's `reattempt`): an attempt the member answered (429, 529, 5xx) was
 * not billed and costs nothing, as one nothing was sent for (a connect error, a body not sent whole); its
 * reservation carries over. An attempt whose body went whole to the member and that got no answer (a
 * timeout, a reset) may have been billed: it is charged its reservation at every cap, and the next attempt
 * reserves again; when a cap does not take that, no further member is tried and the caller gets this
 * member's failure (504 upstream_timeout, 502 upstream_unreachable), as without a pool.
 *
 * Cooling: a member that answered 429 or 529 is skipped for its Retry-After (30 s without one, at most
 * 10 min), one that failed otherwise for 5 s; shared through the pool service (store + change feed).
 */
import { Readable } from 'node:stream';
import type { Config } from '../../settings/config.js';
import { Errors, type ApiError } from '../../errors.js';
import type { Metrics } from '../../telemetry/metrics.js';
import type { CredentialSecrets } from '../../catalog/provider.js';
import type { CredentialService } from '../../vault/credential-service.js';
import type { PoolService, Outcome } from '../../vault/pool-service.js';
import type { ResolvedCredential, ResolvedPool } from '../../vault/token-service.js';
import type { Exchange } from '../exit/exchange.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import { CHUNK_OVERHEAD } from '../wire/body-scan.js';

/** Statuses that send a pooled request on to the next member. */
const FAILOVER_STATUSES = new Set([429, 500, 502, 503, 529]);
const RATE_LIMITED = new Set([429, 529]);
const DEFAULT_COOL_MS = 30_000;
const MAX_COOL_MS = 600_000;
const FAULT_COOL_MS = 5_000;

type Member = ResolvedPool['members'][number];

/** What the upstream leg asks a pooled request (upstream.ts Forward.failover). */
export interface Failover {
  /** The body may be kept for a replay (it declared a length within KEYWARD_RETRY_BODY_MAX). */
  readonly captureBody: boolean;
  /** The body stream the first attempt is sending: its bytes are kept as they pass (a second reader), within the budget. */
  record(source: Readable): void;
  /** The bytes the first attempt read whole for its signer: kept for the next (true), or too large to keep (false: release them as usual). */
  keep(bytes: Buffer, release: () => void): boolean;
  /**
   * The member answered `status` (undefined: it failed, `timeout` saying how; `sentWhole`: after the request's body
   * went whole to it) and nothing reached the caller yet: true when the request is taken over (this attempt is
   * dropped: another member gets it, or the caller this failure); false when this answer goes out.
   */
  retry(status: number | undefined, retryAfter: string | undefined, timeout: boolean, sentWhole: boolean): boolean;
}

/**
 * What makes one attempt (upstream-router.ts): the member's secrets, the request built and signed for it and sent,
 * its answer told to the exchange; `replay` is the body kept from the first attempt (undefined: the caller's, streamed).
 */
export interface AttemptMaker {
  attempt(exchange: Exchange, credential: CredentialSecrets, failover: Failover | undefined, replay: Buffer | undefined): void;
}

/** Retry-After as ms (seconds or an HTTP date), bounded; undefined when absent or unreadable. */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  const ms = /^\d+$/.test(v) ? Number(v) * 1000 : Date.parse(v) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(MAX_COOL_MS, Math.max(1000, ms));
}

export class PoolRouter {
  /** Smooth weighted round-robin state per pool (nginx's): each member's current weight. */
  private readonly turns = new Map<string, number[]>();
  /** Requests in flight per member credential on this instance (least_busy). */
  private readonly busy = new Map<string, number>();

  constructor(
    readonly config: Config,
    private readonly credentials: CredentialService,
    readonly pools: PoolService,
    private readonly metrics: Metrics,
    private readonly now: () => number,
    /** What kept bodies are charged to (the gateway's one budget). */
    readonly budget: BufferBudget,
    /** The upstream leg's attempts: each member's request is made there, never back through the gateway. */
    readonly attempts: AttemptMaker,
  ) {}

  /** Routes a pooled request: the first member now, the next ones as members fail. */
  route(exchange: Exchange): void {
    const pool = exchange.ctx.auth!.pool!;
    this.pools.track(pool.id, exchange.ctx.auth!.credential.orgId, pool.cooling);
    new PooledRequest(this, exchange, this.plan(pool)).next();
  }

  /** The members to try, in order, at most KEYWARD_POOL_ATTEMPTS of them. */
  plan(pool: ResolvedPool): Member[] {
    const members = pool.members;
    const healthy: number[] = [];
    let soonest = -1;
    let soonestUntil = Infinity;
    const now = this.now();
    for (let i = 0; i < members.length; i++) {
      const until = this.pools.coolingUntil(pool.id, members[i]!.id, now);
      if (until === 0) healthy.push(i);
      else if (until < soonestUntil) [soonest, soonestUntil] = [i, until];
    }
    if (healthy.length === 0) return [members[soonest]!];
    let first = healthy[0]!;
    if (pool.strategy === 'round_robin') first = this.turn(pool, healthy);
    else if (pool.strategy === 'least_busy') {
      const turn = this.turn(pool, healthy);
      let best = Infinity;
      for (const i of [turn, ...healthy]) {
        const load = this.busy.get(members[i]!.id) ?? 0;
        if (load < best) [best, first] = [load, i];
      }
    }
    const at = healthy.indexOf(first);
    const n = Math.min(healthy.length, this.config.pools.attempts);
    const plan: Member[] = new Array(n);
    for (let k = 0; k < n; k++) plan[k] = members[healthy[(at + k) % healthy.length]!]!;
    return plan;
  }

  /** The next member by smooth weighted round robin among `healthy` (indexes into the pool's members). */
  private turn(pool: ResolvedPool, healthy: number[]): number {
    let current = this.turns.get(pool.id);
    if (!current || current.length !== pool.members.length) this.turns.set(pool.id, (current = pool.members.map(() => 0)));
    let total = 0;
    let best = healthy[0]!;
    for (const i of healthy) {
      const w = pool.members[i]!.weight;
      current[i]! += w;
      total += w;
      if (current[i]! > current[best]!) best = i;
    }
    current[best]! -= total;
    return best;
  }

  /** An attempt on `member` begins (+1) or ends (−1). */
  load(member: string, delta: 1 | -1): void {
    const n = (this.busy.get(member) ?? 0) + delta;
    if (n <= 0) this.busy.delete(member);
    else this.busy.set(member, n);
  }

  secretsFor(member: ResolvedCredential): CredentialSecrets | Promise<CredentialSecrets> {
    return this.credentials.secretsFor(member);
  }

  /** Cools a failed member (429/529: Retry-After; else 5 s) and counts the attempt; whether a cooling began. */
  failed(exchange: Exchange, member: Member, status: number | undefined, retryAfter: string | undefined): boolean {
    const poolId = exchange.ctx.auth!.pool!.id;
    const now = this.now();
    const ms = status !== undefined && RATE_LIMITED.has(status) ? retryAfterMs(retryAfter, now) ?? DEFAULT_COOL_MS : FAULT_COOL_MS;
    const cooled = this.pools.coolingUntil(poolId, member.id) < now + ms;
    this.pools.cool(member.orgId, poolId, member.id, now + ms);
    const outcome: Outcome = status === undefined ? 'errors' : status === 429 || status === 529 ? '429' : '5xx';
    this.pools.record(poolId, member.id, outcome);
    return cooled;
  }

  count(member: string, outcome: string, failover: boolean, cooled: boolean): void {
    this.metrics.poolAttempt(member, outcome, failover, cooled);
  }
}

/** One pooled request: its plan, the attempt in the air, and the body kept for a replay. */
class PooledRequest implements Failover {
  readonly captureBody: boolean;
  private index = -1;
  /** Attempts handed to the upstream leg so far. */
  private sends = 0;
  private replay: Buffer | undefined;
  private releaseReplay: (() => void) | undefined;
  /** Whether the request can be sent again: no body, or its bytes kept. */
  private replayable: boolean;
  private member: Member | undefined;

  constructor(private readonly router: PoolRouter, private readonly exchange: Exchange, private readonly plan: Member[]) {
    const { ctx, req } = exchange;
    const declared = req.headers['content-length'];
    this.replayable = !ctx.bodyFollows;
    this.captureBody = ctx.bodyFollows && plan.length > 1 && declared !== undefined && Number(declared) <= router.config.pools.retryBodyMax;
    ctx.attempts = [];
    exchange.res.once('close', () => this.done());
  }

  keep(bytes: Buffer, release: () => void): boolean {
    if (this.sends > 1 || bytes.length > this.router.config.pools.retryBodyMax || this.exchange.gone) return false;
    this.replay = bytes;
    this.releaseReplay = release;
    this.replayable = true;
    return true;
  }

  record(source: Readable): void {
    if (this.sends > 1 || this.exchange.gone) return;
    this.recording = { source, chunks: [], bytes: 0, charged: 0, dropped: false };
    source.on('data', this.onRecordedData);
  }

  /** The body being kept as the first attempt sends it (record): its chunks, charged to the buffer budget. */
  private recording: { source: Readable; chunks: Buffer[]; bytes: number; charged: number; dropped: boolean } | undefined;

  /** One chunk of the first attempt's body: kept, or the whole recording dropped (too large, or over the budget). */
  private readonly onRecordedData = (chunk: Buffer): void => {
    const r = this.recording;
    if (!r || r.dropped) return;
    // Each chunk held is charged its object too (as the body scan charges), so many tiny ones cannot pass the budget.
    if (r.bytes + chunk.length > this.router.config.pools.retryBodyMax || !this.router.budget.take(chunk.length + CHUNK_OVERHEAD, this.exchange.ctx.bufferHolder)) return this.dropRecording(r);
    r.bytes += chunk.length;
    r.charged += chunk.length + CHUNK_OVERHEAD;
    r.chunks.push(chunk);
  };

  private dropRecording(r: NonNullable<PooledRequest['recording']>): void {
    r.dropped = true;
    r.chunks.length = 0;
    this.router.budget.release(r.charged, this.exchange.ctx.bufferHolder);
    r.charged = 0;
  }

  /** The recorded body as a whole, once it ended (asked only when a member failed); its bytes stay charged until release. */
  private takeRecorded(): Buffer | undefined {
    const r = this.recording;
    if (!r || r.dropped || !r.source.readableEnded) return undefined;
    const whole = r.chunks.length === 1 ? r.chunks[0]! : Buffer.concat(r.chunks, r.bytes);
    r.chunks.length = 0; // the joined copy stands for them
    return whole;
  }

  retry(status: number | undefined, retryAfter: string | undefined, timeout: boolean, sentWhole: boolean): boolean {
    const member = this.member!;
    const outcome = status === undefined ? (timeout ? 'timeout' : 'error') : String(status);
    this.exchange.ctx.attempts!.at(-1)!.outcome = outcome;
    if (status !== undefined && !FAILOVER_STATUSES.has(status)) {
      this.router.count(member.id, outcome, false, false);
      this.release();
      return false;
    }
    const cooled = this.router.failed(this.exchange, member, status, retryAfter);
    if (!this.replayable && this.recording) {
      this.replay = this.takeRecorded();
      this.replayable = this.replay !== undefined;
    }
    const again = this.replayable && this.index + 1 < this.plan.length && !this.exchange.gone;
    this.router.count(member.id, outcome, again, cooled);
    if (!again) {
      this.release();
      return false;
    }
    this.router.load(member.id, -1);
    this.member = undefined;
    // No answer after the whole body: the provider may have billed it. Settled (and the next reserved) after the
    // upstream leg has dropped this attempt, as it does once this returns.
    const billed = status === undefined && sentWhole;
    const failure = timeout ? Errors.upstreamTimeout() : Errors.upstreamUnreachable();
    queueMicrotask(() => this.settle(billed, failure));
    return true;
  }

  /** The failed attempt is settled and the next one reserved (exchange.ts reattempt): then the next member, or the caller gets `failure`. */
  private settle(billed: boolean, failure: ApiError): void {
    const go = (fits: boolean): void => {
      if (fits) return this.next();
      this.release();
      if (!this.exchange.gone) this.exchange.fail(failure);
    };
    const fits = this.exchange.reattempt(billed);
    if (fits instanceof Promise) fits.then(go, () => go(false));
    else go(fits);
  }

  /** Sends the request to the next member of the plan. */
  next(): void {
    const ctx = this.exchange.ctx;
    // The caller left: before any attempt nothing counts; after one, the exchange has ended already.
    if (this.exchange.gone) return this.index < 0 ? this.exchange.abandon() : undefined;
    const member = this.plan[++this.index]!;
    this.member = member;
    this.router.load(member.id, 1);
    ctx.attempts!.push({ credentialId: member.id, outcome: 'pending' });
    // The member is the request's credential from now on: its usage, its settlement, its log line.
    ctx.auth = { ...ctx.auth!, credential: member };
    let secrets: CredentialSecrets | Promise<CredentialSecrets>;
    try {
      secrets = this.router.secretsFor(member);
    } catch (err) {
      return this.unusable(err);
    }
    const go = (s: CredentialSecrets): void => {
      // The first attempt sent streams the caller's body (and keeps it); later ones replay what was kept.
      const replay = this.sends === 0 ? undefined : this.replay;
      this.sends++;
      this.router.attempts.attempt(this.exchange, s, this, replay);
    };
    if (secrets instanceof Promise) secrets.then(go, (err: unknown) => this.unusable(err));
    else go(secrets);
  }

  /** The member's key could not be had (deleted since the pool was cached, KMS down): the next member, else the refusal. */
  private unusable(err: unknown): void {
    this.exchange.ctx.attempts!.at(-1)!.outcome = 'unavailable';
    this.router.load(this.member!.id, -1);
    this.member = undefined;
    // Nothing was sent for this attempt: the next member gets the body as the first would have (unread, or kept).
    if (this.index + 1 < this.plan.length && (this.sends === 0 || this.replayable)) return this.next();
    if (this.exchange.ctx.forwarded) this.exchange.fail(Errors.upstreamUnreachable());
    else this.exchange.refuse(err);
  }

  /** No more attempts: the kept body goes back to the buffer budget. */
  private release(): void {
    const release = this.releaseReplay;
    this.releaseReplay = undefined;
    this.replay = undefined;
    release?.();
    const r = this.recording;
    if (!r) return;
    this.recording = undefined;
    r.source.off('data', this.onRecordedData);
    if (!r.dropped) this.dropRecording(r);
  }

  private done(): void {
    if (this.member) this.router.load(this.member.id, -1);
    this.member = undefined;
    this.release();
  }
}

/** The bytes kept for a replay, as a request body stream. */
export function replayStream(bytes: Buffer): Readable {
  return Readable.from(bytes.length > 0 ? [bytes] : [], { objectMode: false });
}
