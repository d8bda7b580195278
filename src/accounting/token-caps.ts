/**
 * A token's caps as its refusals see them (GET /v1/tokens/:id, the console's token view, `keyward tokens
 * get`): each read from the lease pool the proxy reserves that cap from, as GET /v1/usage reads the
 * organisation's (usage-summary.ts), so a token is never shown room its next request would be refused:
 *   `budget_usd`         `spend:tok:<id>`  used, held, limit in µ$ (lifetime)
 *   `tokens_per_minute`  `tpm:tok:<id>`    used_in_window, held, limit in tokens (a rolling minute)
 *   `max_requests`       `token:<id>`      used, held, limit in requests (lifetime)
 * `held` is what instances hold for the cap and have not used: requests in flight and leased blocks not yet
 * used. A dead instance's in-flight worst cases are charged as used once it is reclaimed (one lease TTL),
 * which the token's usage counters never see: that is why the caps come from the pools, not from `usage`.
 * used + held ≤ limit, and limit − used − held is at most what a new request can still get.
 *
 * A rolling pool's live holders do not tell the store which of their units are uses still in the window
 * and which are in flight or idle, so `used_in_window` is what the pool counts for holders that are gone
 * (until their window is over) plus the uses this instance itself has in the window; the rest is `held`.
 * The sum, the only figure a refusal reads, is the same from every instance.
 *
 * Read only here, on an admin read: one store read per cap the token has, never on the proxy's path.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { LeaseStore, TokenRecord, UsageCounts } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { tokenRequestsKey } from './quota-ledger.js';
import { tokenSpendKey } from './spend-ledger.js';
import { TokenLimits, tpmKey } from './token-limits.js';
import { usedAndHeld } from './usage-summary.js';

export interface TokenCapsView {
  /** µ$. */
  budget?: { used: number; held: number; limit: number };
  tokensPerMinute?: { usedInWindow: number; held: number; limit: number };
  maxRequests?: { used: number; held: number; limit: number };
}

@injectable()
export class TokenCaps {
  constructor(
    @inject(Symbols.LeaseStore) private readonly leases: LeaseStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(TokenLimits) private readonly limits: TokenLimits,
  ) {}

  /** The caps `token` has, each from its pool; `counted`: the token's usage counters (lifetime), taken as used where they run ahead. */
  async of(token: Pick<TokenRecord, 'id' | 'scopes'>, counted: UsageCounts): Promise<TokenCapsView> {
    const now = this.clock.now();
    const { budgetMicros, tokensPerMinute, maxRequests } = token.scopes;
    const [spend, tpm, requests] = await Promise.all([
      budgetMicros === undefined ? undefined : this.leases.leaseLedger(tokenSpendKey(token.id), now),
      tokensPerMinute === undefined ? undefined : this.leases.leaseLedger(tpmKey(token.id), now),
      maxRequests === undefined ? undefined : this.leases.leaseLedger(tokenRequestsKey(token.id), now),
    ]);
    const view: TokenCapsView = {};
    if (spend) view.budget = { ...usedAndHeld(spend, counted.spendMicros, budgetMicros!), limit: budgetMicros! };
    if (requests) view.maxRequests = { ...usedAndHeld(requests, counted.requests, maxRequests!), limit: maxRequests! };
    if (tpm) {
      const limit = tokensPerMinute!;
      // This instance's own uses in the window are part of what its live holder holds: shown as used, not held.
      const mine = Math.min(tpm.held, this.limits.inWindow(token.id));
      const usedInWindow = Math.min(limit, tpm.used + mine);
      view.tokensPerMinute = { usedInWindow, held: Math.max(0, Math.min(limit - usedInWindow, tpm.held - mine)), limit };
    }
    return view;
  }
}
