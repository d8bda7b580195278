/**
 * A token's `max_concurrent` (concurrency 170) and `tokens_per_minute` (tokens_per_minute 130), on the
 * lease ledger of src/accounting/token-limits.ts, exact across instances.
 *
 * concurrency: after the rate limit (250), before max_requests (150): a request refused for concurrency
 * spends nothing else. Its slot is held until the request ends (`log`, after the last byte), or given back
 * at once when it is refused later or never forwarded (`undo`).
 *
 * tokens_per_minute: after max_requests, before budget (120): the token's, and its team's (shared by every
 * token of the team, `tpm:team:<id>`), each its own lease counter, reserved both or neither. The worst case (input bounded by the body's
 * length, or the context window for media and provider-side tools; output by the request's cap or the
 * model's largest output: src/pricing/spend-bound.ts, as budgets do) is reserved before forwarding; after
 * the response it is settled to the usage the provider reported when final, else to the larger of what was
 * seen and the reservation (settlement's one rule). A body is read whole only for such tokens. A pooled
 * request's attempt whose body went whole to a member that gave no answer is charged its whole reservation,
 * and the next attempt reserves the same again or is not made (`reattempt`). A request whose price dimension
 * selects a tier the price book does not price is refused (400 price_unknown), as under a budget.
 */
import { boundOrRefuse, boundScan } from '../../pricing/spend-bound.js';
import type { PriceBook, PriceEntry } from '../../pricing/prices.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { LimitHold, TokenLimits } from '../../accounting/token-limits.js';
import { Errors } from '../../errors.js';
import { exitOf, type RequestContext } from '../entry/context.js';
import { cappedPrice } from '../exit/price-choice.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import type { SpendHost } from '../exit/spend-host.js';

const SLOT = 'limits:slot';
/** An unpriced model's bound: its output only by the request's own cap (else 400 max_tokens_required). */
const UNPRICED: PriceEntry = { input: 0, cachedInput: 0, cacheWriteInput: 0, output: 0, source: 'none' };
const TOKENS = 'limits:tokens';
/** Neither the token nor its team has a tokens_per_minute. */
const NONE = Symbol('no tokens_per_minute');

type Auth = NonNullable<RequestContext['auth']>;

export class ConcurrencyStage implements CoreStage {
  readonly name = 'concurrency';
  readonly priority = 170;

  constructor(private readonly limits: TokenLimits) {}

  access(ctx: RequestContext): Promise<void> | undefined {
    const max = ctx.auth!.token.scopes.maxConcurrent;
    if (max === undefined) return undefined;
    // Cut if the slot's lease is lost (the store may give the slot to another instance): through the exit, so an
    // HTTP/2 caller gets RST_STREAM INTERNAL_ERROR and an HTTP/1.1 caller a closed connection, never a clean end.
    return this.limits.openSlot(ctx.auth!.token.id, max, () => exitOf(ctx)?.cut()).then((hold) => {
      ctx.state.set(SLOT, hold);
    });
  }

  undo(ctx: RequestContext): void {
    this.free(ctx);
  }

  log(ctx: RequestContext): void {
    this.free(ctx);
  }

  private free(ctx: RequestContext): void {
    const hold = ctx.state.get(SLOT) as LimitHold | undefined;
    if (!hold) return;
    ctx.state.delete(SLOT);
    this.limits.closeSlot(hold);
  }
}

/** A request's holds under the token's and its team's tokens_per_minute (either may be absent). */
interface TokenHolds {
  token?: LimitHold;
  team?: LimitHold;
}

export class TokensPerMinuteStage implements CoreStage {
  readonly name = 'tokens_per_minute';
  readonly priority = 130;
  readonly body;

  constructor(private readonly limits: TokenLimits, private readonly prices: PriceBook, providers: ProviderRegistry, private readonly teams: Pick<SpendHost, 'peekTeam' | 'teamLimit'>) {
    // The same scan as the budget's (the union of readers then skips declarations for both).
    this.body = { ...boundScan(providers.toolScan, providers.priceFields), when: (ctx: RequestContext) => this.perMinute(ctx.auth!) !== NONE };
  }

  /** The token's and its team's caps as known here (undefined: the team's not known yet); NONE when neither has one. */
  private perMinute(auth: Auth): { token: number | undefined; team: number | undefined } | typeof NONE | undefined {
    const token = auth.token.scopes.tokensPerMinute;
    const teamId = auth.token.teamId;
    if (teamId === undefined) return token === undefined ? NONE : { token, team: undefined };
    const team = this.teams.peekTeam(teamId);
    if (team === undefined) return undefined;
    // A deleted team's token is refused by the budget stage.
    const perTeam = team?.tokensPerMinute ?? undefined;
    return token === undefined && perTeam === undefined ? NONE : { token, team: perTeam };
  }

  access(ctx: RequestContext): Promise<void> | undefined {
    const auth = ctx.auth!;
    const caps = this.perMinute(auth);
    if (caps === NONE) return undefined;
    if (caps === undefined) return this.teams.teamLimit(auth.credential.orgId, auth.token.teamId!).then(() => this.access(ctx));
    return this.hold(ctx, caps, this.worstCase(ctx));
  }

  /** Reserves `worst` under the token's cap, then its team's, or neither (a refusal gives back what was held). */
  private hold(ctx: RequestContext, caps: { token: number | undefined; team: number | undefined }, worst: number): Promise<void> | undefined {
    const auth = ctx.auth!;
    const holds: TokenHolds = {};
    const failed = (err: unknown): never => {
      if (holds.token) this.limits.refundTokens(holds.token);
      if (holds.team) this.limits.refundTokens(holds.team);
      throw err;
    };
    const team = (): Promise<void> | undefined => {
      if (caps.team !== undefined) {
        const teamId = auth.token.teamId!;
        // Most reservations fit what this instance holds: made in this turn, no promise per request.
        const now = this.limits.reserveTeamTokensNow(teamId, caps.team, worst);
        if (!now) {
          return this.limits.reserveTeamTokens(teamId, caps.team, worst).then((hold) => {
            holds.team = hold;
            ctx.state.set(TOKENS, holds);
          });
        }
        holds.team = now;
      }
      ctx.state.set(TOKENS, holds);
      return undefined;
    };
    try {
      if (caps.token !== undefined) {
        const now = this.limits.reserveTokensNow(auth.token.id, caps.token, worst);
        if (!now) {
          return this.limits.reserveTokens(auth.token.id, caps.token, worst).then((hold) => {
            holds.token = hold;
            return team();
          }).catch(failed);
        }
        holds.token = now;
      }
      return team()?.catch(failed);
    } catch (err) {
      return failed(err);
    }
  }

  /** A pooled request's attempt that may have been billed: charged its whole reservation; the next reserves again, or false. */
  reattempt(ctx: RequestContext, again: boolean): boolean | Promise<boolean> {
    const holds = ctx.state.get(TOKENS) as TokenHolds | undefined;
    if (!holds || (!holds.token && !holds.team)) return true;
    ctx.state.delete(TOKENS);
    const units = (holds.token ?? holds.team)!.units;
    if (holds.token) this.limits.settleTokens(holds.token, holds.token.units);
    if (holds.team) this.limits.settleTokens(holds.team, holds.team.units);
    if (!again) return false;
    const caps = { token: holds.token && ctx.auth!.token.scopes.tokensPerMinute, team: holds.team?.counter.limit };
    try {
      const pending = this.hold(ctx, caps, units);
      return pending ? pending.then(() => true, () => false) : true;
    } catch {
      return false;
    }
  }

  undo(ctx: RequestContext): void {
    const holds = ctx.state.get(TOKENS) as TokenHolds | undefined;
    ctx.state.delete(TOKENS);
    if (holds?.token) this.limits.refundTokens(holds.token);
    if (holds?.team) this.limits.refundTokens(holds.team);
  }

  log(ctx: RequestContext): void {
    const holds = ctx.state.get(TOKENS) as TokenHolds | undefined;
    if (!holds) return;
    ctx.state.delete(TOKENS);
    for (const hold of [holds.token, holds.team]) {
      if (!hold) continue;
      if (!ctx.forwarded) {
        this.limits.refundTokens(hold);
        continue;
      }
      const seen = ctx.usage.inputTokens + ctx.usage.outputTokens;
      // Settlement's one rule: only a provider's final usage is final; otherwise the larger of seen and reserved. A
      // token count the reader does not know may be tokens it did not add up: fail closed likewise.
      const known = ctx.usageFinal && (ctx.usage.unknownFields?.length ?? 0) === 0;
      const used = known ? seen : Math.max(seen, hold.units);
      this.limits.settleTokens(hold, ctx.usageFinal && seen === 0 && (ctx.status ?? 0) < 400 ? hold.units : used);
    }
  }

  /** Input + output tokens at most, as budgets bound them (a body-less request: 0). */
  private worstCase(ctx: RequestContext): number {
    if (!ctx.bodyFollows || ctx.bodyBytes === 0) return 0;
    if (ctx.bodyBytes === undefined) throw Errors.unavailable();
    // A price dimension the book does not price is refused here too (400 price_unknown); an unpriced model is not.
    const price = cappedPrice(this.prices, ctx) ?? UNPRICED;
    const body = { fields: ctx.bodyFields ?? new Map(), bytes: ctx.bodyBytes, mediaKeys: ctx.bodyKeys ?? new Set<string>(), elements: ctx.bodyElements };
    const bound = boundOrRefuse(price, body, { declared: ctx.provider?.tools, model: ctx.model ?? '' });
    return bound.inputTokens + bound.outputTokens;
  }
}
