/**
 * Spend caps' services, for the budget stage (stages/budget.ts) and the realtime
 * sessions' per-response holds: the price book, each org's cap as cached in
 * memory (OrgLimits), each team's limits and member's budget likewise
 * (TeamLimits), and the SpendLedger's reservations under every level a request
 * belongs to (token ≤ member ≤ team ≤ organisation). A reservation handed
 * out is an opaque token: the ledger's hold it stands for (the caps' counters it
 * was made under) is a private field no stage can read or set (a `Reservation`),
 * and it can be refunded or settled once only, so nothing a stage does can add
 * money to a counter.
 */
import { Errors } from '../../errors.js';
import type { PriceBook, PriceEntry } from '../../pricing/prices.js';
import type { SpendCap, SpendHold, SpendLedger } from '../../accounting/spend-ledger.js';
import type { OrgLimits } from '../../vault/org-limits.js';
import type { TeamLimit, TeamLimits } from '../../vault/team-limits.js';
import type { RequestView } from '../pipeline/contracts.js';
import { cappedPrice } from './price-choice.js';

/** One request's reservation under its caps: what `SpendHost.reserve` made, for `refund` and `settle`. */
export interface SpendReservation {
  readonly micros: number;
}

/**
 * Who a reservation is for and each level's cap (µ$): the token's `budget_usd` (undefined: none), the organisation's
 * monthly cap (null: none), and, for a token bound to a team or a member, their monthly budgets (absent or null: none).
 */
export interface SpendParty {
  tokenId: string;
  tokenBudget: number | undefined;
  orgId: string;
  orgLimit: number | null;
  teamId?: string | undefined;
  teamBudget?: number | null | undefined;
  memberId?: string | undefined;
  memberBudget?: number | null | undefined;
}

export interface SpendHost {
  /** The price of `model` at `providerId`, or undefined (unpriced). */
  price(providerId: string, model: string): PriceEntry | undefined;
  /**
   * The price of a request under a cap: its model's, in the tiers its price dimensions select (its route, the body
   * fields its scan read: `priceFields`); undefined when the model has no price and no dimension is set. Throws
   * 400 price_unknown naming the field and value when a dimension selects a tier the price book does not price.
   */
  requestPrice(request: RequestView): PriceEntry | undefined;
  /** The organisation's monthly cap in µ$ (null: none) if this instance knows it now, else undefined: then call orgLimit. */
  peekOrgLimit(orgId: string): number | null | undefined;
  orgLimit(orgId: string): Promise<number | null>;
  /** A team's limits (null: the team was deleted) if known here now, else undefined: then call teamLimit. */
  peekTeam(teamId: string): TeamLimit | null | undefined;
  teamLimit(orgId: string, teamId: string): Promise<TeamLimit | null>;
  /** A member's monthly budget in µ$ (null: none) if known here now, else undefined: then call memberBudget. */
  peekMemberBudget(orgId: string, memberId: string): number | null | undefined;
  memberBudget(orgId: string, memberId: string): Promise<number | null>;
  /**
   * Reserves `micros` under every cap the party has (token, member, team, organisation), all or none; throws 429
   * budget_exhausted naming the level that refused when it does not fit.
   */
  reserve(request: SpendParty, micros: number): Promise<SpendReservation>;
  /**
   * The same reservation made now, from what this instance holds (no store call, no promise), or undefined when it
   * would have to wait (then call reserve). Never refuses: a reservation that may not fit is reserve's to decide.
   */
  reserveNow(request: SpendParty, micros: number): SpendReservation | undefined;
  /** Gives a reservation back whole (the request was not forwarded). */
  refund(reservation: SpendReservation): void;
  /** The response is over and cost `actualMicros`: the rest of the reservation goes back. */
  settle(reservation: SpendReservation, actualMicros: number): void;
  /** Hands every held amount back to the store (shutdown). */
  releaseAll(): Promise<void>;
}

/** What a stage holds: the amount (read-only), and the ledger's hold, out of its reach, closed once. */
class Reservation implements SpendReservation {
  readonly #micros: number;
  #hold: SpendHold | undefined;

  constructor(hold: SpendHold, micros: number) {
    this.#hold = hold;
    this.#micros = micros;
  }

  get micros(): number {
    return this.#micros;
  }

  /** The reservation's hold, once: a second refund or settle finds nothing, nor does an object this did not make. */
  static close(r: SpendReservation): SpendHold | undefined {
    if (typeof r !== 'object' || r === null || !(#hold in r)) return undefined;
    const hold = (r as Reservation).#hold;
    (r as Reservation).#hold = undefined;
    return hold;
  }
}

export function spendHost(ledger: SpendLedger, limits: OrgLimits, prices: PriceBook, teams: TeamLimits): SpendHost {
  // Innermost first: a request refused by its token's budget never touches its team's counter.
  const capsOf = (request: SpendParty): SpendCap[] => {
    const caps: SpendCap[] = [];
    if (request.tokenBudget !== undefined) caps.push(ledger.tokenCap(request.tokenId, request.tokenBudget));
    if (request.memberId !== undefined && request.memberBudget != null) caps.push(ledger.memberCap(request.orgId, request.memberId, request.memberBudget));
    if (request.teamId !== undefined && request.teamBudget != null) caps.push(ledger.teamCap(request.teamId, request.teamBudget));
    if (request.orgLimit !== null) caps.push(ledger.orgCap(request.orgId, request.orgLimit));
    return caps;
  };
  return {
    price: (providerId, model) => prices.lookup(providerId, model),
    requestPrice: (request) => cappedPrice(prices, request),
    peekOrgLimit: (orgId) => limits.peek(orgId),
    orgLimit: (orgId) => limits.get(orgId),
    peekTeam: (teamId) => teams.peekTeam(teamId),
    teamLimit: (orgId, teamId) => teams.team(orgId, teamId),
    peekMemberBudget: (orgId, memberId) => teams.peekMember(orgId, memberId),
    memberBudget: (orgId, memberId) => teams.member(orgId, memberId),
    async reserve(request, micros) {
      const held = await ledger.reserve(capsOf(request), micros);
      if ('kind' in held) throw Errors.budgetExhausted(held.kind, held.kind === 'token' ? undefined : ledger.secondsToMonthEnd(), { neededMicros: micros, leftMicros: held.left });
      return new Reservation(held, micros);
    },
    reserveNow(request, micros) {
      const held = ledger.reserveNow(capsOf(request), micros);
      return held && new Reservation(held, micros);
    },
    refund(reservation) {
      const hold = Reservation.close(reservation);
      if (hold) ledger.refund(hold);
    },
    settle(reservation, actualMicros) {
      const hold = Reservation.close(reservation);
      if (hold) ledger.settle(hold, actualMicros);
    },
    releaseAll: () => ledger.releaseAll(),
  };
}
