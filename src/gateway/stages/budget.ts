/**
 * budget (120): spend caps in dollars that no request overshoots, on one instance or
 * many: a token's lifetime `budget_usd`, its member's and its team's monthly
 * `budget_usd` (a token bound to them: `member_id`, `team_id`) and the organisation's
 * monthly `spend_limit_usd`. Budgets nest: a request is reserved under every level it
 * belongs to, or refused by the first that cannot hold it, and settled on each. A token
 * whose team was deleted is refused here (401 invalid_token) on every instance within a
 * second, whether or not any budget applies. After max_requests (150), before quota (100), so a request
 * refused here spends neither. A core stage, always on: a budget set on a token
 * or an organisation always holds.
 *
 * Before forwarding, a request is priced at its worst case (src/catalog/
 * spend-bound.ts: input at most its body's length plus an overhead, or the
 * context window for media and provider-side tools, plus those tools' per-use
 * fees; output at its cap or the model's largest output)
 * and that amount is reserved under every cap that applies, from what this
 * instance holds of it (the SpendLedger leases more from the store when short,
 * never past a cap). A request that sets a price dimension (its provider's
 * `priceDimensions`: `service_tier`, fast mode, a batch route…) is priced in the tier
 * it selects, and refused when the price book has no price for it. Refusals, nothing
 * forwarded and nothing counted: 400 max_tokens_required, 400 tools_unbounded, 400
 * price_unknown, 403 model_unpriced, 429 budget_exhausted (audited
 * `budget.refused`). After the response the reservation is settled to what the
 * core says the request spent (`ctx.spentMicros`, gateway/exit/settlement.ts): the
 * priced usage the provider reported; the whole reservation when none was
 * reported (the caller left, the stream was cut); nothing for a provider's own
 * error answer without usage. A pooled request's attempt whose body went whole
 * to a member that gave no answer (timeout, reset) may have been billed: it is
 * charged its whole reservation, and the next attempt reserves the same again
 * under every cap, or is not made (`reattempt`).
 *
 * Only budgeted requests pay for this: an unbudgeted one costs two map reads
 * (the token's scope and the org's cached cap), no price lookup, no body wait.
 * A budgeted request's body is read whole before it is forwarded (bounded by
 * KEYWARD_BUFFER_BUDGET). Whether a body follows is the gate's judgement from
 * the request stream (`ctx.bodyFollows`: HTTP/2's END_STREAM, HTTP/1.1's
 * framing), never content-length: a bodiless request (GET) names nothing to
 * price and is forwarded unreserved; one with a body is never forwarded unread.
 */
import { ApiError, Errors } from '../../errors.js';
import { worstCaseCost } from '../../pricing/prices.js';
import { boundOrRefuse, boundScan } from '../../pricing/spend-bound.js';
import type { ProviderRegistry } from '../../catalog/registry.js';
import type { BodyNeed, RequestView } from '../pipeline/contracts.js';
import type { RequestContext } from '../entry/context.js';
import type { CoreStage } from '../pipeline/pipeline.js';
import type { SpendHost, SpendParty, SpendReservation } from '../exit/spend-host.js';

/** The stage's state key for a request's reservation. */
const STATE = 'budget';
/** The caps a request's reservation was made under, for a pooled request's next attempt (`reattempt`). */
const CAPS = 'budget.caps';
/**
 * Set once this request's access found that no cap applies (no budget, the org's limit loaded: none): its body
 * is not needed, whatever the org-limit cache says a moment later (a cache past its age while the change feed is
 * not live reads as "not known", which would otherwise make the gate's last check ask for a body nobody needs).
 */
const NO_CAP = 'budget.none';

type Auth = NonNullable<RequestContext['auth']>;

/** The token's team was deleted. */
const GONE_TEAM = Symbol('gone team');

/** A party with no cap at any level (shared: never reserved under). */
const UNCAPPED: SpendParty = Object.freeze({ tokenId: '', tokenBudget: undefined, orgId: '', orgLimit: null });

/** Whether any level of the party has a cap. */
const capped = (p: SpendParty): boolean =>
  p.tokenBudget !== undefined || p.orgLimit !== null || p.teamBudget != null || p.memberBudget != null;

/** A tool API or an MCP server (kind tool, mcp) prices nothing: spend caps are for model APIs; quota still counts it. */
const unpriceable = (ctx: RequestContext): boolean => (ctx.provider?.kind ?? 'llm') !== 'llm';

export class BudgetStage implements CoreStage {
  readonly name = 'budget';
  readonly priority = 120;
  // The bound's fields, whatever names or bounds a provider-side tool (the loaded providers' `tools`), and the
  // fields that set a price dimension (their `priceDimensions`).
  readonly body: BodyNeed<RequestContext>;

  /** `auditRefusal`: records a refusal in the audit trail (aggregated per organisation, action, address and minute). */
  constructor(
    private readonly spend: SpendHost,
    providers: Pick<ProviderRegistry, 'toolScan' | 'priceFields'>,
    private readonly auditRefusal: (ctx: RequestView, action: string) => void,
  ) {
    this.body = { ...boundScan(providers.toolScan, providers.priceFields), when: (ctx) => this.mayBeBudgeted(ctx) };
  }

  /** Whether the body must be read whole: a budgeted token, member or team, or an org whose cap is set, or one of them not yet known here. */
  private mayBeBudgeted(ctx: RequestContext): boolean {
    if (!ctx.auth || !ctx.bodyFollows || unpriceable(ctx) || ctx.state.has(NO_CAP)) return false;
    const party = this.party(ctx.auth);
    return party === undefined || party === GONE_TEAM || capped(party);
  }

  /**
   * Each level's cap as this instance knows it now: undefined when one is not known here (then `load`), GONE_TEAM
   * when the token's team was deleted. A token bound to no team or member costs one map read (the org's cap).
   */
  private party(auth: Auth): SpendParty | typeof GONE_TEAM | undefined {
    const spend = this.spend;
    const orgId = auth.credential.orgId;
    const orgLimit = spend.peekOrgLimit(orgId);
    if (orgLimit === undefined) return undefined;
    const { id: tokenId, teamId, memberId } = auth.token;
    // The usual unbudgeted request: no object made.
    if (orgLimit === null && teamId === undefined && memberId === undefined && auth.token.scopes.budgetMicros === undefined) return UNCAPPED;
    const party: SpendParty = { tokenId, tokenBudget: auth.token.scopes.budgetMicros, orgId, orgLimit };
    if (teamId !== undefined) {
      const team = spend.peekTeam(teamId);
      if (team === undefined) return undefined;
      if (team === null) return GONE_TEAM;
      party.teamId = teamId;
      party.teamBudget = team.budgetMicros;
    }
    if (memberId !== undefined) {
      const budget = spend.peekMemberBudget(orgId, memberId);
      if (budget === undefined) return undefined;
      party.memberId = memberId;
      party.memberBudget = budget;
    }
    return party;
  }

  /** Every level's cap, loaded where this instance does not know it now (the loaded values are used, not peeked again). */
  private async load(auth: Auth): Promise<SpendParty | typeof GONE_TEAM> {
    const spend = this.spend;
    const orgId = auth.credential.orgId;
    const { id: tokenId, teamId, memberId } = auth.token;
    const [orgLimit, team, memberBudget] = await Promise.all([
      spend.peekOrgLimit(orgId) ?? spend.orgLimit(orgId),
      teamId === undefined ? undefined : spend.peekTeam(teamId) ?? spend.teamLimit(orgId, teamId),
      memberId === undefined ? undefined : spend.peekMemberBudget(orgId, memberId) ?? spend.memberBudget(orgId, memberId),
    ]);
    if (team === null) return GONE_TEAM;
    return {
      tokenId, tokenBudget: auth.token.scopes.budgetMicros, orgId, orgLimit,
      ...(teamId !== undefined ? { teamId, teamBudget: team!.budgetMicros } : {}),
      ...(memberId !== undefined ? { memberId, memberBudget } : {}),
    };
  }

  // Synchronous (no promise per request) when no cap applies, the usual unbudgeted request.
  access(ctx: RequestContext): void | Promise<void> {
    const auth = ctx.auth!;
    const party = this.party(auth);
    if (party === undefined) return this.load(auth).then((known) => this.admit(ctx, known));
    return this.admit(ctx, party);
  }

  private admit(ctx: RequestContext, party: SpendParty | typeof GONE_TEAM): void | Promise<void> {
    // The token's team was deleted (its record too): refused wherever the token is still cached.
    if (party === GONE_TEAM) throw Errors.invalidToken();
    if (!capped(party)) {
      ctx.state.set(NO_CAP, true);
      return;
    }
    if (!ctx.bodyFollows || unpriceable(ctx)) return;
    return this.reserve(ctx, party);
  }

  /**
   * The reservation of a request some cap applies to. Synchronous (no promise per request) when what is held here
   * covers the worst case under every level.
   */
  private reserve(ctx: RequestContext, request: SpendParty): void | Promise<void> {
    const spend = this.spend;
    // An empty body (zero bytes read to its end) names nothing, like a bodiless request.
    if (ctx.bodyBytes === 0) return;
    // The cap was set after the body stage let this body stream (a change just arrived): no bound, try again.
    if (ctx.bodyBytes === undefined) throw Errors.unavailable();
    let micros: number;
    let feeMicros: number;
    try {
      // The model's price in the tiers the request's price dimensions select (400 price_unknown when one has none).
      const price = spend.requestPrice(ctx);
      if (!price) throw Errors.modelUnpriced(ctx.model);
      const body = { fields: ctx.bodyFields ?? new Map(), bytes: ctx.bodyBytes, mediaKeys: ctx.bodyKeys ?? new Set(), elements: ctx.bodyElements };
      const bound = boundOrRefuse(price, body, { declared: ctx.provider?.tools, model: ctx.model! });
      // A body with no media has no audio input: priced at its text prices (audio output stays bounded).
      micros = worstCaseCost(price, bound.inputTokens, bound.outputTokens, bound.media) + bound.feeMicros;
      feeMicros = bound.feeMicros;
    } catch (err) {
      this.audited(ctx, err);
      throw err;
    }
    const reserved = (reservation: SpendReservation): void => {
      ctx.state.set(STATE, reservation);
      ctx.state.set(CAPS, request);
      ctx.reservedMicros = micros;
      if (feeMicros > 0) ctx.toolFeeMicros = feeMicros;
    };
    const now = spend.reserveNow(request, micros);
    if (now) return reserved(now);
    return spend.reserve(request, micros).then(reserved, (err: unknown) => {
      this.audited(ctx, err);
      throw err;
    });
  }

  private audited(ctx: RequestContext, err: unknown): void {
    if (err instanceof ApiError && err.code === 'budget_exhausted') this.auditRefusal(ctx, 'budget.refused');
  }

  // A pooled request's attempt that may have been billed: charged whole; the next one reserves again or is not made.
  reattempt(ctx: RequestContext, again: boolean): boolean | Promise<boolean> {
    const spend = this.spend;
    const reservation = ctx.state.get(STATE) as SpendReservation | undefined;
    if (!reservation) return true;
    ctx.state.delete(STATE);
    spend.settle(reservation, reservation.micros);
    const request = ctx.state.get(CAPS) as Parameters<SpendHost['reserve']>[0];
    const none = (): false => {
      ctx.reservedMicros = undefined;
      ctx.toolFeeMicros = undefined;
      return false;
    };
    if (!again) return none();
    const now = spend.reserveNow(request, reservation.micros);
    if (now) {
      ctx.state.set(STATE, now);
      return true;
    }
    return spend.reserve(request, reservation.micros).then((next) => {
      ctx.state.set(STATE, next);
      return true;
    }, (err: unknown) => {
      this.audited(ctx, err);
      return none();
    });
  }

  undo(ctx: RequestContext): void {
    const reservation = ctx.state.get(STATE) as SpendReservation | undefined;
    ctx.state.delete(STATE);
    ctx.reservedMicros = undefined;
    ctx.toolFeeMicros = undefined;
    if (reservation) this.spend.refund(reservation);
  }

  log(ctx: RequestContext): void {
    const reservation = ctx.state.get(STATE) as SpendReservation | undefined;
    if (!reservation) return;
    ctx.state.delete(STATE);
    if (!ctx.forwarded) return this.spend.refund(reservation);
    // The core's one figure (settlement.ts settledSpend): the reported cost, 0 for a provider's error without
    // usage, the whole reservation when nothing was reported; earlier attempts were charged as they failed.
    this.spend.settle(reservation, ctx.spentMicros === undefined ? reservation.micros : ctx.spentMicros - ctx.earlierAttemptsMicros);
  }

  close(): Promise<void> {
    return this.spend.releaseAll();
  }
}
