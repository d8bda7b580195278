/**
 * Per-response limits of a session: before a response can start, its worst case
 * is held under every limit that applies to the session, all or none; when the
 * response ends it is settled to what it cost (final usage), or charged whole
 * when it was cut; when it never started it is given back.
 *
 * A limit is a small interface (ResponseLimit): the spend budget (a token's
 * `budget_usd`, the organisation's monthly cap) through the same SpendHost the
 * budget stage uses, so the same ledger, leases and caps; and a token's
 * `tokens_per_minute` through the same TokenLimits as the HTTP stage (it holds
 * `worst.inputTokens + worst.outputTokens` in the response's minute window and
 * settles to the usage's tokens), and its team's the same way (`teamTokensPerMinuteLimit`).
 */
import { Errors } from '../../errors.js';
import type { TokenUsage } from '../../catalog/provider.js';
import { worstCaseCost, type PriceEntry } from '../../pricing/prices.js';
import type { SpendHost, SpendReservation } from '../exit/spend-host.js';
import type { LimitHold as TokenHold, TokenLimits } from '../../accounting/token-limits.js';
import type { TeamLimit } from '../../vault/team-limits.js';

/** Who a response is for: what a limit needs to find its caps. */
export interface SessionParty {
  readonly tokenId: string;
  readonly orgId: string;
  /** µ$: the token's `budget_usd`, if any. */
  readonly tokenBudget: number | undefined;
  readonly scopes: Readonly<Record<string, unknown>>;
  /** The token's team and member (a team's or a personal token): their monthly budgets nest under the org's cap. */
  readonly teamId?: string | undefined;
  readonly memberId?: string | undefined;
}

/** The most one response can cost: its tokens and their price. */
export interface WorstCase {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly micros: number;
}

/** What a response that ended cost, from the provider's final usage. */
export interface ResponseCost {
  readonly usage: TokenUsage;
  readonly micros: number;
}

/** One limit's hold on one response. Settle or refund once; later calls do nothing. */
export interface LimitHold {
  /** The response ended: `cost` from its final usage, or undefined (cut, no final usage: the worst case stands). */
  settle(cost: ResponseCost | undefined): void;
  /** The response never started. */
  refund(): void;
}

export interface ResponseLimit {
  readonly name: string;
  /** Whether this limit applies to the party now: synchronous where it can be (the usual, cached case). */
  applies(party: SessionParty): boolean | Promise<boolean>;
  /** Holds `worst`, or throws (rejects with) the refusal (429 budget_exhausted…). */
  hold(party: SessionParty, worst: WorstCase): Promise<LimitHold>;
}

/**
 * The spend budget: the token's, its member's, its team's and the organisation's caps (each level its own lease,
 * as the budget stage holds them), through the budget stage's SpendHost. A token whose team was deleted is refused.
 */
export function spendLimit(spend: SpendHost): ResponseLimit {
  const orgLimitOf = (orgId: string): number | null | Promise<number | null> => spend.peekOrgLimit(orgId) ?? spend.orgLimit(orgId);
  /** Each level's cap in µ$ (null: none; the team null when it was deleted, a refusal at hold). */
  const levels = (party: SessionParty) => [
    orgLimitOf(party.orgId),
    party.teamId === undefined ? undefined : spend.peekTeam(party.teamId) ?? spend.teamLimit(party.orgId, party.teamId),
    party.memberId === undefined ? undefined : spend.peekMemberBudget(party.orgId, party.memberId) ?? spend.memberBudget(party.orgId, party.memberId),
  ] as const;
  const capped = ([org, team, member]: readonly [number | null, TeamLimit | null | undefined, number | null | undefined]): boolean =>
    org !== null || team === null || (team !== undefined && team.budgetMicros !== null) || (member !== undefined && member !== null);
  return {
    name: 'budget',
    applies(party) {
      if (party.tokenBudget !== undefined) return true;
      const [org, team, member] = levels(party);
      // Synchronous in the usual case: every level known on this instance.
      if (!(org instanceof Promise) && !(team instanceof Promise) && !(member instanceof Promise)) return capped([org, team, member]);
      return Promise.all([org, team, member]).then(capped);
    },
    async hold(party, worst) {
      const [orgLimit, team, memberBudget] = await Promise.all(levels(party));
      if (team === null) throw Errors.invalidToken();
      const reservation: SpendReservation = await spend.reserve({
        tokenId: party.tokenId, tokenBudget: party.tokenBudget, orgId: party.orgId, orgLimit,
        ...(party.teamId !== undefined ? { teamId: party.teamId, teamBudget: team!.budgetMicros } : {}),
        ...(party.memberId !== undefined ? { memberId: party.memberId, memberBudget } : {}),
      }, worst.micros);
      return {
        settle: (cost) => spend.settle(reservation, cost === undefined ? reservation.micros : Math.max(0, cost.micros)),
        refund: () => spend.refund(reservation),
      };
    },
  };
}

/** A response's tokens held in a minute window: settled to the tokens it used; cut (no final usage), the worst case stands, as for spend. */
function heldTokens(limits: Pick<TokenLimits, 'settleTokens' | 'refundTokens'>, hold: TokenHold): LimitHold {
  return {
    settle: (cost) => limits.settleTokens(hold, cost === undefined ? hold.units : cost.usage.inputTokens + cost.usage.outputTokens),
    refund: () => limits.refundTokens(hold),
  };
}

/** A token's `tokens_per_minute`: each response's worst-case tokens held in its minute, settled to the tokens it used. */
export function tokensPerMinuteLimit(limits: Pick<TokenLimits, 'reserveTokens' | 'settleTokens' | 'refundTokens'>): ResponseLimit {
  const perMinuteOf = (party: SessionParty) => party.scopes.tokensPerMinute as number | undefined;
  return {
    name: 'tokens_per_minute',
    applies: (party) => perMinuteOf(party) !== undefined,
    async hold(party, worst) {
      return heldTokens(limits, await limits.reserveTokens(party.tokenId, perMinuteOf(party)!, worst.inputTokens + worst.outputTokens));
    },
  };
}

/**
 * A team's `tokens_per_minute`, shared by its tokens (as the HTTP stage holds it: gateway/stages/limits.ts): each
 * response's worst-case tokens held in the team's minute, after the token's own, settled to the tokens it used.
 */
export function teamTokensPerMinuteLimit(
  limits: Pick<TokenLimits, 'reserveTeamTokens' | 'settleTokens' | 'refundTokens'>,
  teams: Pick<SpendHost, 'peekTeam' | 'teamLimit'>,
): ResponseLimit {
  const perMinuteOf = (team: TeamLimit | null | undefined): number | undefined => team?.tokensPerMinute ?? undefined;
  const teamOf = (party: SessionParty): TeamLimit | null | Promise<TeamLimit | null> =>
    teams.peekTeam(party.teamId!) ?? teams.teamLimit(party.orgId, party.teamId!);
  return {
    name: 'team tokens_per_minute',
    applies(party) {
      if (party.teamId === undefined) return false;
      const team = teamOf(party);
      return team instanceof Promise ? team.then((t) => perMinuteOf(t) !== undefined) : perMinuteOf(team) !== undefined;
    },
    async hold(party, worst) {
      // A deleted team's token is refused by the budget limit; a cap removed meanwhile holds nothing.
      const perMinute = perMinuteOf(await teamOf(party));
      if (perMinute === undefined) return { settle: () => undefined, refund: () => undefined };
      return heldTokens(limits, await limits.reserveTeamTokens(party.teamId!, perMinute, worst.inputTokens + worst.outputTokens));
    },
  };
}

/** The holds of one response under every limit that applied when it was made. */
export interface Hold extends LimitHold {
  readonly worst: WorstCase;
  /** False when no limit applied: nothing was held. */
  readonly held: boolean;
}

/** Every limit of the gateway, for one session's party: hold all that apply, or none. */
export class ResponseLimits {
  constructor(private readonly limits: readonly ResponseLimit[], private readonly party: SessionParty) {}

  /** Whether any limit applies to the party now (then every response that can start must be held first). */
  applies(): boolean | Promise<boolean> {
    let pending: Promise<boolean>[] | undefined;
    for (const l of this.limits) {
      const a = l.applies(this.party);
      if (a === true) return true;
      if (a instanceof Promise) (pending ??= []).push(a);
    }
    return pending ? Promise.all(pending).then((all) => all.includes(true)) : false;
  }

  /** Holds `worst` under every limit that applies, or refuses (what was held already is given back). */
  async hold(worst: WorstCase): Promise<Hold> {
    const taken: LimitHold[] = [];
    try {
      for (const l of this.limits) {
        if (await l.applies(this.party)) taken.push(await l.hold(this.party, worst));
      }
    } catch (err) {
      for (const h of taken) h.refund();
      throw err;
    }
    let open = true;
    return {
      worst,
      held: taken.length > 0,
      settle(cost) {
        if (!open) return;
        open = false;
        for (const h of taken) h.settle(cost);
      },
      refund() {
        if (!open) return;
        open = false;
        for (const h of taken) h.refund();
      },
    };
  }
}

/**
 * One response's worst case at `price`: its input is the whole conversation, so at most the model's context
 * window; its output at most `outputCap` (the response's or the session's), else the model's largest output.
 * Throws 400 max_tokens_required when either bound is unknown.
 */
export function responseWorstCase(price: PriceEntry, outputCap: number | undefined): WorstCase {
  if (price.contextWindow === undefined) {
    throw Errors.maxTokensRequired('A realtime response\'s input is the whole conversation: under a spend budget its model needs a known context window (KEYWARD_PRICES `contextWindow`).');
  }
  const output = outputCap ?? price.maxOutput;
  if (output === undefined) {
    throw Errors.maxTokensRequired('Under a spend budget a realtime session must cap its output (`max_output_tokens` / `max_response_output_tokens`, Gemini `maxOutputTokens`): this model has no known largest output.');
  }
  const outputTokens = Math.min(output, price.maxOutput ?? output);
  return { inputTokens: price.contextWindow, outputTokens, micros: worstCaseCost(price, price.contextWindow, outputTokens) };
}
