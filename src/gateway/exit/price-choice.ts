/**
 * A request's price dimensions as the core reads them (pricing/price-dimensions.ts): from its provider's
 * declarations, the route it matched and the body fields its scan read; and its price under a cap, where a
 * dimension the price book does not price is refused (400 price_unknown) before anything is sent. One
 * function for every cap (the budget stage through its SpendHost, tokens_per_minute), so they refuse alike.
 */
import { Errors } from '../../errors.js';
import { priceAt, priceUnknownMessage, reportedDimensions, requestDimensions, unpricedChoice, type DimensionChoice } from '../../pricing/price-dimensions.js';
import type { PriceBook, PriceEntry, PriceMatch } from '../../pricing/prices.js';
import type { TokenUsage } from '../../catalog/provider.js';
import type { ProxyContext, RequestView } from '../pipeline/contracts.js';

/** What the request's route and scanned body fields select (standard choices left out). */
export function requestChoices(ctx: RequestView): DimensionChoice[] {
  const core = ctx as ProxyContext;
  return requestDimensions(core.provider?.priceDimensions, ctx.method, core.route?.path, ctx.bodyFields);
}

/**
 * The request's price under a cap: its model's in the tiers it selects; undefined for a model with no price when it
 * selects none. Throws 400 price_unknown for a choice the book does not price (an unpriced model prices no tier).
 */
export function cappedPrice(prices: PriceBook, ctx: RequestView): PriceEntry | undefined {
  const providerId = (ctx as ProxyContext).provider?.id ?? ctx.providerId ?? '';
  const model = ctx.model === undefined ? undefined : prices.lookup(providerId, ctx.model);
  const choices = requestChoices(ctx);
  if (choices.length === 0) return model;
  const unpriced = unpricedChoice(model, choices);
  if (unpriced) throw Errors.priceUnknown(priceUnknownMessage(providerId, ctx.model, unpriced));
  return priceAt(model!, choices.map((c) => c.tier!)) ?? undefined;
}

const NONE: readonly never[] = Object.freeze([]);

/** What a finished request is priced at: its model's match, the prices it may have been billed at, and the choices no price covers. */
export interface SettlementPrices {
  readonly match: PriceMatch | undefined;
  /** The model's price in the tiers the request asked for, and in those the response says served it (when it says). */
  readonly candidates: readonly PriceEntry[];
  /** Choices (asked for or reported) the book does not price: the request is charged no less than its reservation. */
  readonly unpriced: readonly DimensionChoice[];
}

/**
 * A finished request's prices: the tiers its body asked for (when its scan read them) and the tiers the response
 * reported (the usage reader's `reported`); it is charged at the dearer, never the cheaper. A choice the book
 * does not price is returned in `unpriced` (counted, and settled at no less than the reservation under a cap).
 */
export function settlementPrices(prices: PriceBook, ctx: RequestView, model: string | undefined): SettlementPrices {
  const provider = (ctx as ProxyContext).provider;
  const match = model === undefined ? undefined : prices.match(provider?.id ?? '', model);
  const asked = requestChoices(ctx);
  const reported = reportedDimensions(provider?.priceDimensions, (ctx.usage as TokenUsage).reported);
  // Most requests select no tier and their response reports none: the model's own price, with none of the work below.
  if (asked.length === 0 && reported.length === 0) return { match, candidates: match ? [match.price] : NONE, unpriced: NONE };
  const sets = [asked, reported];
  const candidates: PriceEntry[] = [];
  const unpriced: DimensionChoice[] = [];
  for (const [i, choices] of sets.entries()) {
    // What the response reported is a candidate only when it reported a tier (silence is not the standard tier).
    if (i === 1 && choices.length === 0) continue;
    const missing = choices.filter((c) => unpricedChoice(match?.price, [c]) !== undefined);
    // Each priced alone, but not together (two tiers of their own prices): unpriced too.
    const together = missing.length === 0 ? unpricedChoice(match?.price, choices) : undefined;
    if (together) missing.push(together);
    unpriced.push(...missing);
    const tiered = match && missing.length === 0 ? priceAt(match.price, choices.map((c) => c.tier!)) : null;
    if (tiered) candidates.push(tiered);
  }
  if (candidates.length === 0 && match) candidates.push(match.price);
  return { match, candidates, unpriced };
}
