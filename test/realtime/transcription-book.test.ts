/**
 * The TranscriptionBook (src/gateway/realtime/transcription.ts) step by step, against a cap like the spend ledger's:
 * what a chunk and an item hold at OpenAI's prices (audio in blocks of a second), which chunks an item settles (those that ended by its end), a
 * chunk an item's end cuts (what the item used of it is charged with the next settlement), clears, refusals, and
 * the close (what is open is charged whole). transcriptionPrice refuses what it cannot bound with price_unknown.
 */
import test from 'ava';
import openaiProvider from '../../providers/openai.js';
import { priceEntry, usageCost } from '../../src/pricing/prices.js';
import { ApiError, Errors } from '../../src/errors.js';
import { ResponseLimits, type ResponseLimit } from '../../src/gateway/realtime/limits.js';
import { TranscriptionBook, transcriptionPrice } from '../../src/gateway/realtime/transcription.js';
import { shippedPrice } from '../support/shipped-prices.js';

const RATE = 20;
const entryOf = (model: 'gpt-4o-transcribe' | 'whisper-1') => priceEntry(model, shippedPrice('openai', model), 'test');
const party = { tokenId: 'tok_1', orgId: 'org_1', tokenBudget: 1, scopes: {} };

function ledger(cap: number) {
  const state = { held: 0, spent: 0, made: 0 };
  const limit: ResponseLimit = {
    name: 'cap',
    applies: () => true,
    async hold(_party, worst) {
      if (state.held + state.spent + worst.micros > cap) throw Errors.budgetExhausted('token');
      state.held += worst.micros;
      state.made++;
      let open = true;
      return {
        settle(cost) {
          if (!open) return;
          open = false;
          state.held -= worst.micros;
          const actual = cost === undefined ? worst.micros : cost.micros;
          // Past the reservation only while the cap has room (SpendLedger.settle).
          state.spent += actual > worst.micros && state.held + state.spent + actual > cap ? worst.micros : actual;
        },
        refund() {
          if (!open) return;
          open = false;
          state.held -= worst.micros;
        },
      };
    },
  };
  return { state, limits: new ResponseLimits([limit], party) };
}

function bookWith(cap: number, model: 'gpt-4o-transcribe' | 'whisper-1') {
  const { state, limits } = ledger(cap);
  const settled: Array<{ micros: number | undefined; model: string | undefined }> = [];
  const uncovered: ApiError[] = [];
  const book = new TranscriptionBook(limits, { uncovered: (e) => uncovered.push(e), settled: (_u, micros, m) => settled.push({ micros, model: m }) });
  const price = transcriptionPrice(model, entryOf(model), RATE);
  return { book, state, settled, uncovered, price, prices: () => [price] };
}

test('transcriptionPrice: a chunk at the declared rate and the dearest input price; an item at its prompt, overhead and largest transcript; whisper-1 by the second', (t) => {
  const gpt = transcriptionPrice('gpt-4o-transcribe', entryOf('gpt-4o-transcribe'), RATE);
  // 2.5 s → 50 tokens at $6 (audio) per million = 300 µ$.
  t.deepEqual(gpt.audio(2.5), { inputTokens: 50, outputTokens: 0, micros: 300 });
  // (100 + 1024) tokens at $6 + 2000 at $10.
  t.deepEqual(gpt.item(100), { inputTokens: 1124, outputTokens: 2000, micros: 6744 + 20_000 });
  const usage = { inputTokens: 25, audioInputTokens: 25, outputTokens: 9 };
  t.deepEqual(gpt.cost({ kind: 'tokens', usage }), { micros: usageCost(entryOf('gpt-4o-transcribe'), usage), tokens: 34 });
  t.is(gpt.cost({ kind: 'duration', seconds: 3 }), undefined, 'a duration for a model billed by tokens: not priceable (charged whole)');
  const whisper = transcriptionPrice('whisper-1', entryOf('whisper-1'), RATE);
  t.deepEqual(whisper.audio(2.5), { inputTokens: 50, outputTokens: 0, micros: 250 });
  t.deepEqual(whisper.item(500), { inputTokens: 0, outputTokens: 0, micros: 100 }, 'one second for a duration rounded up');
  t.deepEqual(whisper.cost({ kind: 'duration', seconds: 3.2 }), { micros: 320, tokens: 64 });
  t.is(whisper.cost({ kind: 'tokens', usage }), undefined);
  for (const [model, entry, rate, pattern] of [
    [undefined, entryOf('whisper-1'), RATE, /names no transcription model/],
    ['gpt-9-transcribe', undefined, RATE, /"gpt-9-transcribe" has no price/],
    ['whisper-1', entryOf('whisper-1'), undefined, /no input-audio token rate/],
    ['x', priceEntry('x', { input: 1, output: 1 }, 'test'), RATE, /"x" has no largest output/],
  ] as const) {
    const err = t.throws(() => transcriptionPrice(model, entry, rate), { instanceOf: ApiError });
    t.is(err?.code, 'price_unknown');
    t.is(err?.status, 400);
    t.regex(err?.message ?? '', pattern);
  }
});

test('a client commit settles exactly the chunks forwarded before it; an append that does not fit is refused and holds nothing', async (t) => {
  const { book, state, settled, prices, price } = bookWith(30_000, 'gpt-4o-transcribe');
  book.setServerCommits(false);
  await book.append(prices, 1000, 0, true);
  await book.append(prices, 1500, 0, true);
  await book.commit(prices, 0, 'evt_1');
  const item = price.item(0).micros;
  t.is(state.held, 300 + item, '50 tokens of audio (at $6 per million) and the item');
  await book.append(prices, 500, 0, true); // after the commit: the next item's, in a block of a second
  book.committed('item_1', prices, 0);
  const usage = { inputTokens: 27, audioInputTokens: 27, outputTokens: 12 };
  book.ended('item_1', { kind: 'tokens', usage });
  t.is(state.spent, usageCost(entryOf('gpt-4o-transcribe'), usage));
  t.is(state.held, 120, 'the block after the commit still held');
  t.deepEqual(settled, [{ micros: state.spent, model: 'gpt-4o-transcribe' }]);
  // 30,000 - spent - 120 left: a chunk of 10 minutes (72,000) does not fit.
  await t.throwsAsync(Promise.resolve(book.append(prices, 600_000, 0, true)), { message: /budget/ });
  t.is(state.held, 120);
  book.close();
  t.is(state.held, 0);
  t.is(state.spent, usageCost(entryOf('gpt-4o-transcribe'), usage), 'audio past the last commit goes back: with no turn detection nothing can bill it');
});

test('audio is held in blocks of a second that the next chunks fill; near the cap a chunk holds only its own worst case; with turn detection on, audio no item took is charged at the close', async (t) => {
  const { book, state, prices } = bookWith(26_144 + 120 + 6, 'gpt-4o-transcribe');
  book.setServerCommits(true);
  for (let i = 0; i < 50; i++) await book.append(prices, 20, 0, true);
  t.is(state.made, 2, 'the armed item and one block of a second for 50 chunks of 20 ms');
  t.is(state.held, 26_144 + 120);
  // A second block does not fit (6 µ$ left): the chunk's own worst case (1 token, 6 µ$) does.
  await book.append(prices, 20, 0, true);
  t.is(state.held, 26_144 + 126);
  await t.throwsAsync(Promise.resolve(book.append(prices, 20, 0, true)), { message: /budget/ });
  book.close();
  t.is(state.held, 0);
  t.is(state.spent, 26_144 + 126, 'the armed item and the audio no item took, charged whole: the server may have committed it');
});

test('a chunk cut by an item\'s end: what the item used of it is charged with the next settlement, so the total is what was billed', async (t) => {
  const { book, state, prices } = bookWith(1_300, 'whisper-1');
  book.setServerCommits(true);
  await book.append(prices, 10_000, 0, true); // armed item (100) + chunk (1,000)
  book.speechStopped('item_1', 5_000);
  book.committed('item_1', prices, 0);
  book.ended('item_1', { kind: 'duration', seconds: 5 }); // 500 billed; its own hold is 100
  t.is(state.spent, 100, 'the item\'s own hold, the rest carried (the cut chunk still holds it)');
  t.is(state.held, 1_000);
  await book.commit(prices, 0, 'evt_2'); // the rest of the audio
  book.committed('item_2', prices, 0);
  book.ended('item_2', { kind: 'duration', seconds: 5 });
  t.is(state.spent, 1_000, 'both items: 5 s + 5 s billed, 1,000 charged');
  t.is(state.held, 0);
  book.close();
  t.is(state.spent, 1_000);
});

test('server commits: one item held ahead; a second item from audio under the same hold is held when it comes, or the session must end', async (t) => {
  const { book, state, uncovered, prices, price } = bookWith(26_144 + 120 + 100, 'gpt-4o-transcribe');
  book.setServerCommits(true);
  await book.append(prices, 1_000, 0, true);
  t.is(state.held, price.item(0).micros + 120);
  book.speechStopped('item_1', 400);
  book.committed('item_1', prices, 0);
  book.speechStopped('item_2', 900);
  book.committed('item_2', prices, 0);
  await new Promise((r) => setImmediate(r));
  t.is(uncovered.length, 1, 'no room for the second item: the session must end');
  t.is(uncovered[0]!.code, 'budget_exhausted');
});

test('clear gives back the audio the server dropped; a refused commit gives its hold back; a failed transcription and the close charge whole', async (t) => {
  const { book, state, prices, price } = bookWith(100_000, 'gpt-4o-transcribe');
  book.setServerCommits(false);
  await book.append(prices, 2_000, 0, true);
  book.clear();
  await book.append(prices, 1_000, 0, true); // after the clear, before the server confirms it
  book.cleared();
  t.is(state.held, 120, 'only the chunk after the clear');
  await book.commit(prices, 0, 'evt_empty');
  book.refusedByProvider('evt_empty', true);
  t.is(state.held, 120);
  await book.commit(prices, 0, 'evt_ok');
  book.committed('item_1', prices, 0);
  book.ended('item_1', undefined); // failed: may have been billed
  t.is(state.spent, price.item(0).micros + 120);
  await book.commit(prices, 0, 'evt_late'); // committed, its transcription never reported
  book.committed('item_2', prices, 0);
  await book.append(prices, 500, 0, true);
  book.close();
  t.is(state.held, 0);
  t.is(state.spent, 2 * price.item(0).micros + 120, 'the unreported item whole; the audio after the last commit back (no turn detection)');
});
