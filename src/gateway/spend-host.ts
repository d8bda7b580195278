/**
 * The budget plugin's services (PluginHost.spend): the price book, each org's
 * cap as cached in memory (OrgLimits), and the SpendLedger's reservations. A
 * reservation handed to the plugin is an opaque token: the caps it was made
 * under stay here (a WeakMap), and it can be refunded or settled once only, so
 * nothing a stage does can add money to a counter.
 */
import { Errors } from '../errors.js';
import type { PriceBook } from '../catalog/prices.js';
import type { SpendCap, SpendLedger } from '../accounting/spend-ledger.js';
import type { OrgLimits } from '../vault/org-limits.js';
import type { SpendHost, SpendReservation } from './contracts.js';

export function spendHost(ledger: SpendLedger, limits: OrgLimits, prices: PriceBook): SpendHost {
  const open = new WeakMap<SpendReservation, readonly SpendCap[]>();
  /** The reservation's caps, once: a second refund or settle finds nothing. */
  const close = (r: SpendReservation): readonly SpendCap[] | undefined => {
    const caps = open.get(r);
    open.delete(r);
    return caps;
  };
  return {
    price: (providerId, model) => prices.lookup(providerId, model),
    peekOrgLimit: (orgId) => limits.peek(orgId),
    orgLimit: (orgId) => limits.get(orgId),
    async reserve(request, micros) {
      const caps: SpendCap[] = [];
      if (request.tokenBudget !== undefined) caps.push(ledger.tokenCap(request.tokenId, request.tokenBudget));
      if (request.orgLimit !== null) caps.push(ledger.orgCap(request.orgId, request.orgLimit));
      const refused = await ledger.reserve(caps, micros);
      if (refused) throw Errors.budgetExhausted(refused.kind, refused.kind === 'org' ? ledger.secondsToMonthEnd() : undefined);
      const reservation: SpendReservation = Object.freeze({ micros });
      open.set(reservation, caps);
      return reservation;
    },
    refund(reservation) {
      const caps = close(reservation);
      if (caps) ledger.refundAll(caps, reservation.micros);
    },
    settle(reservation, actualMicros) {
      const caps = close(reservation);
      if (caps) ledger.settle(caps, reservation.micros, actualMicros);
    },
    releaseAll: () => ledger.releaseAll(),
  };
}
