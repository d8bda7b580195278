/**
 * The reservation the budget stage holds (src/gateway/exit/spend-host.ts) is an opaque token: its amount can be read,
 * not changed; the ledger's hold it stands for is given back once, whichever of refund and settle comes first;
 * and an object the host did not make gives nothing back. A plugin cannot add money to a counter.
 */
import test from 'ava';
import { spendHost } from '../../src/gateway/exit/spend-host.js';
import type { SpendHold, SpendLedger } from '../../src/accounting/spend-ledger.js';
import type { TeamLimits } from '../../src/vault/team-limits.js';
import type { OrgLimits } from '../../src/vault/org-limits.js';
import type { PriceBook } from '../../src/pricing/prices.js';

/** A ledger that records what reaches it: each hold is numbered so a second settle of the same one would show. */
function recordingLedger() {
  const calls: string[] = [];
  let n = 0;
  const ledger = {
    tokenCap: (tokenId: string, budget: number) => ({ key: `tok:${tokenId}`, limit: budget }),
    orgCap: (orgId: string, limit: number) => ({ key: `org:${orgId}`, limit }),
    reserve: async (_caps: unknown, micros: number) => ({ micros, parts: [], n: ++n }) as unknown as SpendHold,
    reserveNow: (_caps: unknown, micros: number) => ({ micros, parts: [], n: ++n }) as unknown as SpendHold,
    refund: (hold: SpendHold & { n?: number }) => calls.push(`refund #${hold.n} ${hold.micros}`),
    settle: (hold: SpendHold & { n?: number }, actual: number) => calls.push(`settle #${hold.n} ${hold.micros} → ${actual}`),
    secondsToMonthEnd: () => 1,
    releaseAll: async () => {},
  };
  return { calls, ledger: ledger as unknown as SpendLedger };
}

const REQUEST = { tokenId: 't1', tokenBudget: 5_000_000, orgId: 'o1', orgLimit: null };

test('a reservation is settled or refunded once, and its amount cannot be changed', async (t) => {
  const { calls, ledger } = recordingLedger();
  const host = spendHost(ledger, {} as OrgLimits, {} as PriceBook, {} as TeamLimits);
  const r = await host.reserve(REQUEST, 1200);
  t.is(r.micros, 1200);
  t.throws(() => {
    (r as { micros: number }).micros = 1;
  }, { instanceOf: TypeError });
  t.is(r.micros, 1200);
  host.settle(r, 300);
  host.settle(r, 0);
  host.refund(r);
  t.deepEqual(calls, ['settle #1 1200 → 300']);
  const now = host.reserveNow(REQUEST, 800)!;
  host.refund(now);
  host.settle(now, 800);
  t.deepEqual(calls, ['settle #1 1200 → 300', 'refund #2 800']);
  t.deepEqual(Object.keys(now), [], 'nothing of the hold shows on the object');
});

test('an object the host did not make gives nothing back', async (t) => {
  const { calls, ledger } = recordingLedger();
  const host = spendHost(ledger, {} as OrgLimits, {} as PriceBook, {} as TeamLimits);
  const real = await host.reserve(REQUEST, 1000);
  for (const forged of [{ micros: 1000 }, Object.create(real) as object, Object.assign(Object.create(null), { micros: 1000 }), 42, null]) {
    host.refund(forged as never);
    host.settle(forged as never, 0);
  }
  t.deepEqual(calls, []);
  host.refund(real);
  t.deepEqual(calls, ['refund #1 1000']);
});
