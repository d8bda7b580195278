/**
 * Property test of the per-response holds (ResponseBook over ResponseLimits): random sessions (clients asking
 * for responses, server turns switched on and off, the provider starting, ending and refusing responses, the
 * session closing at any point) against one cap, trying to make the book let a response start unheld or let
 * money leak. Invariants, after every step: what is held plus what was charged never passes the cap; a
 * client request the book accepted is held; a server turn input is forwarded only while a hold is armed; and
 * after the close nothing is held and every response charged exactly once (its usage, or its worst case if cut).
 */
import test from 'ava';
import { Errors } from '../../src/errors.js';
import { ResponseBook } from '../../src/gateway/realtime/book.js';
import { ResponseLimits, type ResponseLimit } from '../../src/gateway/realtime/limits.js';

/** A cap like the spend ledger's: reserve all or refuse; settle charges the actual, refund gives back. */
function capLimit(cap: number) {
  const state = { held: 0, spent: 0, holds: 0 };
  const limit: ResponseLimit = {
    name: 'cap',
    applies: () => true,
    async hold(_party, worst) {
      await Promise.resolve();
      if (state.held + state.spent + worst.micros > cap) throw Errors.budgetExhausted('token');
      state.held += worst.micros;
      state.holds++;
      let open = true;
      return {
        settle(cost) {
          if (!open) return;
          open = false;
          state.held -= worst.micros;
          state.spent += cost === undefined ? worst.micros : cost.micros;
          state.holds--;
        },
        refund() {
          if (!open) return;
          open = false;
          state.held -= worst.micros;
          state.holds--;
        },
      };
    },
  };
  return { limit, state };
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
}

const WORST = 1000;
const party = { tokenId: 'tok_1', orgId: 'org_1', tokenBudget: 1, scopes: {} };

test('random sessions never let held + charged pass the cap, never start uncovered input, and settle everything once', async (t) => {
  for (let seed = 1; seed <= 300; seed++) {
    const random = rng(seed);
    const cap = WORST * (1 + Math.floor(random() * 4)) + Math.floor(random() * WORST);
    const { limit, state } = capLimit(cap);
    let settledCount = 0;
    let uncovered = 0;
    const book = new ResponseBook(new ResponseLimits([limit], party), (usage) => usage.outputTokens, {
      uncovered: () => uncovered++,
      settled: () => settledCount++,
    });
    const worst = () => ({ inputTokens: 10, outputTokens: 10, micros: WORST });
    let nextId = 0;
    const running: string[] = [];
    let started = 0;
    let forwardedAsks = 0;
    let closed = false;
    const covers: Promise<void>[] = [];
    for (let step = 0; step < 40; step++) {
      const r = random();
      if (r < 0.25) {
        // A client asks: accepted means held.
        const before = state.holds;
        const ok = await book.forClient(worst, `e${step}`).then(() => true, () => false);
        if (ok) {
          forwardedAsks++;
          t.true(state.holds > before || state.holds >= 1, `seed ${seed}: an accepted request is held`);
        }
      } else if (r < 0.4) {
        // Server-turn input: forwarded only if covered.
        // (cover may wait for a running response to end: not awaited, checked when it answers)
        book.setServerTurns(true);
        covers.push(book.cover(worst).then(() => {
          if (!closed && book.serverTurnsOn) t.true(state.holds >= 1, `seed ${seed}: input forwarded while a hold is armed`);
        }, () => {}));
      } else if (r < 0.55 && (forwardedAsks > 0 || book.serverTurnsOn)) {
        const id = `r${nextId++}`;
        book.started(id, worst);
        running.push(id);
        started++;
        if (forwardedAsks > 0) forwardedAsks--;
        await Promise.resolve();
      } else if (r < 0.8 && running.length > 0) {
        const id = running.splice(Math.floor(random() * running.length), 1)[0]!;
        book.ended(id, random() < 0.8 ? { inputTokens: 5, outputTokens: Math.floor(random() * WORST) } : undefined);
      } else if (r < 0.85) {
        book.setServerTurns(false);
      } else if (r < 0.9) {
        book.refusedByProvider(undefined, 'newest');
      }
      await new Promise((res) => setImmediate(res));
      t.true(state.held + state.spent <= cap + WORST * uncovered, `seed ${seed} step ${step}: held ${state.held} + spent ${state.spent} ≤ cap ${cap}`);
    }
    closed = true;
    book.close();
    await Promise.all(covers);
    await new Promise((res) => setImmediate(res));
    t.is(state.held, 0, `seed ${seed}: nothing held after the close`);
    t.is(state.holds, 0);
    t.true(settledCount >= started - uncovered, `seed ${seed}: every started response settled`);
    t.true(state.spent <= cap, `seed ${seed}: spent ${state.spent} ≤ cap ${cap}`);
  }
});
