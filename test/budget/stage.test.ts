/**
 * The budget stage's hooks on their own (stub spend services): an unbudgeted request touches no price and
 * no reservation; a budgeted body the scan did not read to its end is refused 503 (never reserved
 * on a partial length); settlement picks the reported cost, nothing for a provider's error answer,
 * the whole reservation when nothing was reported; undo and log together give back once; a reservation
 * what is held covers is made in the same turn (no promise), one that is not waits for the ledger.
 */
import test from 'ava';
import { BudgetStage } from '../../src/gateway/stages/budget.js';
import { ApiError, Errors } from '../../src/errors.js';
import type { ProxyContext } from '../../src/gateway/pipeline/contracts.js';
import type { RequestContext } from '../../src/gateway/entry/context.js';
import type { SpendHost, SpendReservation } from '../../src/gateway/exit/spend-host.js';
import { settledSpend } from '../../src/gateway/exit/settlement.js';

/** `held`: what reserveNow finds held here (undefined: nothing, every reservation waits for reserve). */
function stubSpend(orgLimit: number | null, held?: number) {
  const calls: string[] = [];
  const spend = {
    requestPrice: () => (calls.push('price'), { input: 2_000_000, cachedInput: 2_000_000, cacheWriteInput: 2_000_000, output: 8_000_000, source: 't' }),
    peekOrgLimit: () => orgLimit,
    orgLimit: async () => orgLimit,
    reserve: async (_r: unknown, micros: number) => (calls.push(`reserve ${micros}`), Object.freeze({ micros })),
    reserveNow: (_r: unknown, micros: number) => (held !== undefined && micros <= held ? (calls.push(`reserve now ${micros}`), Object.freeze({ micros })) : undefined),
    refund: (r: SpendReservation) => calls.push(`refund ${r.micros}`),
    settle: (r: SpendReservation, actual: number) => calls.push(`settle ${r.micros} ${actual}`),
    releaseAll: async () => {},
  } as unknown as SpendHost;
  const providers = { toolScan: { fields: [], elementValues: ['type'] }, priceFields: [] } as unknown as ConstructorParameters<typeof BudgetStage>[1];
  const stage = (): BudgetStage => new BudgetStage(spend, providers, (_ctx, action) => calls.push(`audit ${action}`));
  return { spend, stage, calls };
}

function ctx(over: Partial<ProxyContext> & { budgetMicros?: number } = {}): RequestContext {
  const { budgetMicros, ...rest } = over;
  return {
    headers: { 'content-length': '40' },
    bodyFollows: true,
    auth: { token: { id: 'tok_1', scopes: budgetMicros === undefined ? {} : { budgetMicros } }, credential: { id: 'cred_1', orgId: 'org_1', provider: 'priced' } },
    model: 'pm-1',
    bodyFields: new Map([['max_tokens', { kind: 'number', value: 10 }]]),
    bodyBytes: 40,
    bodyKeys: new Set(),
    state: new Map(),
    forwarded: true,
    status: 200,
    error: undefined,
    costMicros: undefined,
    // What a pooled request's earlier attempts were charged: 0 unless a member failed after the body (context.ts).
    earlierAttemptsMicros: 0,
    ...rest,
  } as unknown as RequestContext;
}

test('unbudgeted: no price lookup, no reservation, and the body is not asked for', async (t) => {
  const { stage, calls } = stubSpend(null);
  const hooks = stage();
  const c = ctx();
  t.false(hooks.body.when!(c));
  await hooks.access(c);
  hooks.log(c);
  t.deepEqual(calls, []);
});

test('an org without a cap whose cached limit lapses mid-request: access loads it (none), and the body is not asked for after', async (t) => {
  const { spend, stage, calls } = stubSpend(null);
  // The cache: "no limit" when the body stage asks, "not known" (past its age) from then on; the store: none.
  let peeks = 0;
  (spend as unknown as { peekOrgLimit: () => number | null | undefined }).peekOrgLimit = () => (peeks++ === 0 ? null : undefined);
  const hooks = stage();
  const c = ctx({ bodyBytes: undefined, bodyFields: undefined });
  t.false(hooks.body.when!(c), 'the body stage lets the body stream unread');
  await hooks.access(c);
  t.false(hooks.body.when!(c), 'the gate\'s last check does not ask for it: no cap applies to this request');
  t.deepEqual(calls, []);
  // Without that knowledge (a new request, the limit not known), the body is asked for, as before.
  t.true(hooks.body.when!(ctx()));
});

test('a budgeted body not read to its end is refused 503, never reserved', async (t) => {
  const { stage, calls } = stubSpend(null);
  const hooks = stage();
  // Thrown in the same turn or rejected: the pipeline takes either.
  const err = await t.throwsAsync(async () => hooks.access(ctx({ budgetMicros: 1_000_000, bodyBytes: undefined })));
  t.is((err as ApiError).status, 503);
  t.deepEqual(calls, []);
});

test('settlement (the core\'s settledSpend, then the log hook): the final reported cost; nothing for the provider\'s error answer; all of it when nothing was reported or the usage is not final', async (t) => {
  const { stage, calls } = stubSpend(5_000_000);
  const hooks = stage();
  const worst = (40 + 1024) * 2 + 10 * 8;
  const run = async (after: Partial<ProxyContext>) => {
    const c = ctx();
    t.true(hooks.body.when!(c), 'an org cap: the body is read whole');
    await hooks.access(c);
    Object.assign(c, after);
    // As the core does before the log hooks (gateway.ts): the one settled figure.
    c.spentMicros = settledSpend(c as never);
    hooks.log(c);
    hooks.undo(c); // a late undo finds nothing to give back
  };
  // The provider said the message ended: its figure; an error answer reporting nothing: 0; a success reporting
  // nothing: all of it. Not final (a cut, a caller gone, partial usage): the larger of the usage seen and all of it.
  await run({ costMicros: 123, usageFinal: true });
  await run({ status: 400, usageFinal: true });
  await run({ usageFinal: true });
  await run({});
  await run({ status: 504, error: Errors.upstreamTimeout() });
  await run({ costMicros: 123 });
  await run({ costMicros: worst + 7 });
  t.deepEqual(calls.filter((x) => !x.startsWith('price')), [
    `reserve ${worst}`, `settle ${worst} 123`,
    `reserve ${worst}`, `settle ${worst} 0`,
    `reserve ${worst}`, `settle ${worst} ${worst}`,
    `reserve ${worst}`, `settle ${worst} ${worst}`,
    `reserve ${worst}`, `settle ${worst} ${worst}`,
    `reserve ${worst}`, `settle ${worst} ${worst}`,
    `reserve ${worst}`, `settle ${worst} ${worst + 7}`,
  ]);
});

test('a reservation what is held here covers is made in the same turn, no promise; one it does not waits for the ledger', async (t) => {
  const worst = (40 + 1024) * 2 + 10 * 8;
  const held = stubSpend(null, worst);
  const hooks = held.stage();
  const c = ctx({ budgetMicros: 1_000_000 });
  t.is(hooks.access(c), undefined, 'no promise');
  t.is(c.reservedMicros, worst);
  t.deepEqual(held.calls, ['price', `reserve now ${worst}`]);
  hooks.log({ ...c, spentMicros: 100 } as RequestContext);
  t.deepEqual(held.calls.slice(2), [`settle ${worst} 100`]);

  const short = stubSpend(null, worst - 1);
  const waiting = short.stage();
  const d = ctx({ budgetMicros: 1_000_000 });
  const out = waiting.access(d);
  t.true(out instanceof Promise);
  await out;
  t.is(d.reservedMicros, worst);
  t.deepEqual(short.calls, ['price', `reserve ${worst}`]);
});
