/**
 * Property tests (fast-check: shrinking, the seed printed on failure) of what a realtime session holds under one
 * cap, each against a limit that reserves all or refuses like the spend ledger:
 *
 * - ResponseBook: random sessions (clients asking for responses, server turns switched on and off, the provider
 *   starting, ending and refusing responses, the session closing at any point). After every step what is held
 *   plus what was charged never passes the cap; a client request the book accepted is held; server-turn input is
 *   forwarded only while a hold is armed; after the close nothing is held and every response is charged once.
 * - TranscriptionBook: random transcription sessions against a modelled provider that bills what it transcribes
 *   (OpenAI's documented 1 audio token per 100 ms and a few special tokens, the prompt, a transcript up to the
 *   model's largest output; whisper-1 by the second, rounded up): audio appended in chunks of any size, speech or
 *   not, commits by the client and by the server's turn detection at any point of the audio (cutting chunks),
 *   clears, turn detection switched, the provider's events arriving late and in order, transcriptions completing
 *   or failing in any order, the session closing with some unfinished. Held plus charged never passes the cap;
 *   what the provider billed never passes it; at the close what was charged is never below what it billed, and
 *   nothing is held.
 *
 * KEYWARD_PROPERTY_RUNS sets the number of sessions of each (default 150), KEYWARD_PROPERTY_SEED the seed.
 */
import test from 'ava';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import openaiProvider from '../../providers/openai.js';
import { priceEntry, usageCost } from '../../src/pricing/prices.js';
import { Errors } from '../../src/errors.js';
import { ResponseBook } from '../../src/gateway/realtime/book.js';
import { ResponseLimits, type ResponseLimit } from '../../src/gateway/realtime/limits.js';
import { TranscriptionBook, transcriptionPrice, type TranscriptionUsage } from '../../src/gateway/realtime/transcription.js';
import { shippedPrice } from '../support/shipped-prices.js';
import { propertySeed } from '../support/property.js';

const RUNS = Number(process.env.KEYWARD_PROPERTY_RUNS ?? 150);
/** The seed (test/support/property.ts: fixed under CI=true, else new each run unless KEYWARD_PROPERTY_SEED names one). */
const SEED: number | undefined = propertySeed();
const params = { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) };

/**
 * A cap like the spend ledger's: reserve all or refuse; settle charges the actual, refund gives back. An actual above
 * the reservation is charged only while the cap has room for it (the ledger logs the rest, never counted past the cap).
 */
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
          const actual = cost === undefined ? worst.micros : cost.micros;
          state.spent += actual > worst.micros && state.held + state.spent + actual > cap ? worst.micros : actual;
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

const party = { tokenId: 'tok_1', orgId: 'org_1', tokenBudget: 1, scopes: {} };
const turn = () => new Promise((r) => setImmediate(r));

const WORST = 1000;
const responseStep = fc.record({ r: fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), pick: fc.nat(), used: fc.nat({ max: WORST - 1 }), reported: fc.boolean() });

test('ResponseBook: random sessions never let held + charged pass the cap, never start uncovered input, and settle everything once', async (t) => {
  await fc.assert(fc.asyncProperty(fc.integer({ min: WORST, max: 5 * WORST - 1 }), fc.array(responseStep, { maxLength: 40 }), async (cap, steps) => {
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
    for (const [i, { r, pick, used, reported }] of steps.entries()) {
      if (r < 0.25) {
        // A client asks: accepted means held.
        const ok = await book.forClient(worst, `e${i}`).then(() => true, () => false);
        if (ok) {
          forwardedAsks++;
          assert.ok(state.holds >= 1, 'an accepted request is held');
        }
      } else if (r < 0.4) {
        // Server-turn input: forwarded only if covered (cover may wait for a running response to end: checked when it answers).
        book.setServerTurns(true);
        covers.push(book.cover(worst).then(() => {
          if (!closed && book.serverTurnsOn) assert.ok(state.holds >= 1, 'input forwarded while a hold is armed');
        }, () => {}));
      } else if (r < 0.55 && (forwardedAsks > 0 || book.serverTurnsOn)) {
        const id = `r${nextId++}`;
        book.started(id, worst);
        running.push(id);
        started++;
        if (forwardedAsks > 0) forwardedAsks--;
        await Promise.resolve();
      } else if (r < 0.8 && running.length > 0) {
        const id = running.splice(pick % running.length, 1)[0]!;
        book.ended(id, reported ? { inputTokens: 5, outputTokens: used } : undefined);
      } else if (r < 0.85) {
        book.setServerTurns(false);
      } else if (r < 0.9) {
        book.refusedByProvider(undefined, 'newest');
      }
      await turn();
      assert.ok(state.held + state.spent <= cap + WORST * uncovered, `step ${i}: held ${state.held} + spent ${state.spent} ≤ cap ${cap}`);
    }
    closed = true;
    book.close();
    await Promise.all(covers);
    await turn();
    assert.equal(state.held, 0, 'nothing held after the close');
    assert.equal(state.holds, 0);
    assert.ok(settledCount >= started - uncovered, 'every started response settled');
    assert.ok(state.spent <= cap, `spent ${state.spent} ≤ cap ${cap}`);
  }), params);
  // fc.assert threw had any run broken the property (with its seed and shrunk case); this says the runs were made.
  t.true(params.numRuns > 0, 'the property ran');
});

/** What the modelled provider bills: OpenAI's documented audio rate (the provider file declares twice it as the bound). */
const BILLED_TOKENS_PER_SECOND = 10;
const DECLARED = openaiProvider.routes.find((r) => r.path === 'v1/realtime')!.websocket!.inputAudioTokensPerSecond!;
const MODELS = ['gpt-4o-transcribe', 'gpt-4o-mini-transcribe', 'whisper-1'] as const;

const transcriptionStep = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('append' as const), ms: fc.oneof(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 300_000 })) }), weight: 6 },
  { arbitrary: fc.record({ op: fc.constant('commit' as const) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('vad' as const), cut: fc.double({ min: 0, max: 1, noNaN: true }) }), weight: 2 },
  { arbitrary: fc.record({ op: fc.constant('deliver' as const), all: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ op: fc.constant('clear' as const) }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('detection' as const), on: fc.boolean() }), weight: 1 },
  { arbitrary: fc.record({ op: fc.constant('transcribe' as const), pick: fc.nat(), out: fc.nat({ max: 2_000 }), special: fc.nat({ max: 6 }), fail: fc.boolean() }), weight: 3 },
);

test('TranscriptionBook: the provider bills what it transcribes; billed never passes the cap, charged never falls below billed', async (t) => {
  const scenario = fc.record({
    model: fc.constantFrom(...MODELS),
    // Caps of every size, and small ones (a few seconds of audio, about one item) often.
    cap: fc.oneof(fc.integer({ min: 0, max: 150_000 }), fc.integer({ min: 0, max: 30_000 }), fc.integer({ min: 0, max: 3_000 })),
    promptBytes: fc.nat({ max: 600 }),
    detection: fc.boolean(),
    deliverAtEnd: fc.boolean(),
    steps: fc.array(transcriptionStep, { maxLength: 60 }),
  });
  await fc.assert(fc.asyncProperty(scenario, async ({ model, cap, promptBytes, detection, deliverAtEnd, steps }) => {
    const { limit, state } = capLimit(cap);
    const entry = priceEntry(model, shippedPrice('openai', model), 'test');
    const price = transcriptionPrice(model, entry, DECLARED);
    const itemWorst = price.item(promptBytes).micros;
    let uncovered = 0;
    const book = new TranscriptionBook(new ResponseLimits([limit], party), { uncovered: () => uncovered++, settled: () => {} });
    const prices = () => [price];
    book.setServerCommits(detection);
    let confirmedDetection = detection;
    const asks: boolean[] = [];
    const recount = () => {
      book.setServerCommits(confirmedDetection || asks.includes(true));
      if (!book.serverCommitsOn) armed = false;
    };

    // The provider: the audio it has (ms, the same format as measured), where its buffer starts, its items.
    let providerDetection = detection;
    let written = 0;
    let bufferStart = 0;
    let billed = 0;
    let nextItem = 0;
    const pending: Array<{ id: string; ms: number }> = [];
    const events: Array<() => void> = [];
    const bill = (ms: number, out: number, special: number): TranscriptionUsage => {
      if (model === 'whisper-1') return { kind: 'duration', seconds: Math.ceil(ms / 1000) };
      const audio = Math.ceil((ms / 1000) * BILLED_TOKENS_PER_SECOND) + special;
      return { kind: 'tokens', usage: { inputTokens: audio + promptBytes, audioInputTokens: audio, outputTokens: out } };
    };
    const costOf = (u: TranscriptionUsage) => (u.kind === 'duration' ? Math.ceil(u.seconds * entry.perAudioSecond!) : usageCost(entry, u.usage));
    // The residue the book leaves (docs/agents/realtime.md): one item hold is armed ahead for the server's commits, made
    // again before the next append once the book hears that an item took it; an item the server commits beyond
    // that (from audio forwarded under the same armed hold, or before the news of the previous one came) is held
    // when its news comes, else the session ends: each may pass the cap by its item's worst case. `armed` follows
    // the book's armed hold: made before an append or a cover, taken by a server commit's news, gone when server
    // commits go off.
    let residue = 0;
    let armed = false;
    let vadUnheard = 0;
    const commitItem = (end: number, stopped: boolean) => {
      const id = `item_${++nextItem}`;
      pending.push({ id, ms: end - bufferStart });
      bufferStart = end;
      if (stopped) {
        vadUnheard++;
        events.push(() => book.speechStopped(id, end));
      }
      events.push(() => {
        if (stopped) {
          vadUnheard--;
          if (armed) armed = false;
          else residue++;
        }
        book.committed(id, prices, promptBytes);
      });
    };
    const allowance = () => itemWorst * (residue + uncovered);

    for (const [i, step] of steps.entries()) {
      if (uncovered > 0) break; // the session has ended (1008)
      switch (step.op) {
        case 'append': {
          const ok = await Promise.resolve(book.append(prices, step.ms, promptBytes, true)).then(() => true, () => false);
          if (ok) {
            written += step.ms;
            if (book.serverCommitsOn) armed = true;
          }
          break;
        }
        case 'commit': {
          const eventId = `evt_${i}`;
          const ok = await book.commit(prices, promptBytes, eventId).then(() => true, () => false);
          if (!ok) break;
          if (written === bufferStart) events.push(() => book.refusedByProvider(eventId, true));
          else commitItem(written, false);
          break;
        }
        case 'vad':
          // The server's turn detection commits the audio up to any point of what it has (a chunk may be cut).
          if (providerDetection && written > bufferStart) commitItem(bufferStart + Math.max(1, Math.floor(step.cut * (written - bufferStart))), true);
          break;
        case 'deliver':
          for (let n = step.all ? events.length : 1; n > 0 && events.length > 0; n--) events.shift()!();
          break;
        case 'clear':
          book.clear();
          bufferStart = written;
          events.push(() => book.cleared());
          break;
        case 'detection': {
          // As providers/lib/realtime/openai-transcription.ts does: turning it on counts at once, and holds the next item before
          // the setting is forwarded (refused: not forwarded); off counts once the server confirms it and no update
          // still unconfirmed asks it on.
          const before = book.serverCommitsOn;
          if (step.on) {
            book.setServerCommits(true);
            const ok = await book.cover(prices, promptBytes).then(() => true, () => false);
            if (!ok) {
              book.setServerCommits(before);
              break;
            }
            armed = true;
          }
          asks.push(step.on);
          recount();
          providerDetection = step.on;
          events.push(() => {
            asks.shift();
            confirmedDetection = step.on;
            recount();
          });
          break;
        }
        case 'transcribe': {
          if (pending.length === 0) break;
          const item = pending.splice(step.pick % pending.length, 1)[0]!;
          const usage = bill(item.ms, step.out, step.special);
          billed += costOf(usage);
          events.push(() => book.ended(item.id, step.fail ? undefined : usage));
          break;
        }
      }
      await turn();
      assert.ok(state.held + state.spent <= cap + allowance(), `step ${i} (${step.op}): held ${state.held} + charged ${state.spent} ≤ cap ${cap}`);
    }
    if (deliverAtEnd) while (events.length > 0) events.shift()!();
    // Items committed whose news never came: the armed hold (charged at the close) covers one.
    residue += Math.max(0, vadUnheard - (armed ? 1 : 0));
    // Whatever was committed and not yet transcribed is transcribed and billed after the session ends.
    for (const item of pending) billed += costOf(bill(item.ms, 2_000, 6));
    book.close();
    await turn();
    assert.equal(state.held, 0, 'nothing held after the close');
    assert.equal(state.holds, 0);
    assert.ok(billed <= cap + allowance(), `billed ${billed} ≤ cap ${cap}`);
    assert.ok(state.spent >= billed - allowance(), `charged ${state.spent} ≥ billed ${billed}`);
    assert.ok(state.spent <= cap + allowance(), `charged ${state.spent} ≤ cap ${cap}`);
  }), params);
  // fc.assert threw had any run broken the property (with its seed and shrunk case); this says the runs were made.
  t.true(params.numRuns > 0, 'the property ran');
});
