/**
 * The budget plugin's services (PluginHost.spend): the price book, each org's
 * cap as cached in memory (OrgLimits), and the SpendLedger's reservations. A
 * reservation handed to the plugin is an opaque token: the ledger's hold it
 * stands for (the caps' counters it was made under) is a private field no
 * plugin can read or set (a `Reservation`), and it can be refunded or settled
 * once only, so nothing a stage does can add money to a counter.
 */
import { Errors } from '../errors.js';
import type { PriceBook } from '../catalog/prices.js';
import type { SpendCap, SpendHold, SpendLedger } from '../accounting/spend-ledger.js';
import type { OrgLimits } from '../vault/org-limits.js';
import type { SpendHost, SpendReservation } from './contracts.js';
import { cappedPrice } from './price-choice.js';

/** What a plugin holds: the amount (read-only), and the ledger's hold, out of its reach, closed once. */
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

export function spendHost(ledger: SpendLedger, limits: OrgLimits, prices: PriceBook): SpendHost {
  const capsOf = (request: Parameters<SpendHost['reserve']>[0]): SpendCap[] => {
    const caps: SpendCap[] = [];
    if (request.tokenBudget !== undefined) caps.push(ledger.tokenCap(request.tokenId, request.tokenBudget));
    if (request.orgLimit !== null) caps.push(ledger.orgCap(request.orgId, request.orgLimit));
    return caps;
  };
  return {
    price: (providerId, model) => prices.lookup(providerId, model),
    requestPrice: (request) => cappedPrice(prices, request),
    peekOrgLimit: (orgId) => limits.peek(orgId),
    orgLimit: (orgId) => limits.get(orgId),
    async reserve(request, micros) {
      const held = await ledger.reserve(capsOf(request), micros);
      if ('kind' in held) throw Errors.budgetExhausted(held.kind, held.kind === 'org' ? ledger.secondsToMonthEnd() : undefined, { neededMicros: micros, leftMicros: held.left });
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
