/**
 * minted-cache.ts's guarantees, each tried against many random schedules: a value is never handed out
 * within a minute of its expiry; at most one mint is ever in flight, whoever asks; while a fresh value
 * exists no caller waits (the refresh runs in the background); every caller waiting on a mint gets its
 * value or its failure, and the next caller after a failure starts a new mint.
 *
 * fast-check (test/support/property.ts): a failure shrinks to the shortest schedule that breaks it and
 * prints its seed and path (replay: KEYWARD_PROPERTY_SEED, KEYWARD_PROPERTY_PATH).
 */
import test from 'ava';
import fc from 'fast-check';
import { MintedCache, REFRESH_BEFORE_MS, SEND_MARGIN_MS } from '../../src/gateway/upstream/signers/minted-cache.js';
import { chance, checkProperty, weighted, type Produced } from '../support/property.js';

interface PendingMint {
  resolve(v: { value: string; lifetimeMs: number }): void;
  reject(err: Error): void;
  startedAt: number;
}

const flush = () => new Promise((r) => setImmediate(r));

/** One step of a schedule: callers ask (one, or a burst of up to 20); the mint in flight answers (a value of 3 to 122 minutes, or a refusal); time passes. */
const step = weighted([
  [45, fc.record({ do: fc.constant('get' as const), callers: weighted([[80, fc.constant(1)], [20, fc.integer({ min: 1, max: 20 })]]) })],
  [30, fc.record({ do: fc.constant('answer' as const), refused: chance(0.2), minutes: fc.integer({ min: 3, max: 122 }) })],
  [25, fc.record({ do: fc.constant('wait' as const), ms: weighted([[50, fc.integer({ min: 0, max: 59_999 })], [50, fc.integer({ min: 0, max: 20 * 60_000 - 1 })]]) })],
]);
type Step = Produced<typeof step>;

test('property: never a value within a minute of expiry, one mint in flight, no wait while fresh, waiters answered', async (t) => {
  let handedOut = 0;
  let mintsMade = 0;
  const schedule = async (steps: Step[]) => {
    let now = 1_000_000;
    const pending: PendingMint[] = [];
    /** value → its expiry, as the mint that made it said. */
    const expiry = new Map<string, number>();
    let minted = 0;
    let maxInFlight = 0;
    /** The newest value minted and when it expires. */
    let newest: { value: string; until: number } | undefined;
    const cache = new MintedCache<string>(() => new Promise((resolve, reject) => {
      pending.push({ resolve, reject, startedAt: now });
      maxInFlight = Math.max(maxInFlight, pending.length);
    }), () => now);
    const waiting: Array<{ promise: Promise<string>; settled: boolean; outcome?: string }> = [];
    for (const [i, s] of steps.entries()) {
      if (s.do === 'get') {
        for (let c = 0; c < s.callers; c++) {
          const got = cache.get();
          if (typeof got === 'string') {
            handedOut++;
            const until = expiry.get(got)!;
            if (!(now < until - SEND_MARGIN_MS)) throw new Error(`step ${i}: ${got} handed out ${until - now} ms before it expires`);
          } else {
            if (newest && now < newest.until - SEND_MARGIN_MS) throw new Error(`step ${i}: a caller waits while ${newest.value} is fresh`);
            const w = { promise: got, settled: false as boolean, outcome: undefined as string | undefined };
            got.then((v) => { w.settled = true; w.outcome = v; }, (e: Error) => { w.settled = true; w.outcome = `error:${e.message}`; });
            waiting.push(w);
          }
        }
      } else if (s.do === 'answer') {
        const mint = pending.shift();
        if (!mint) continue; // nothing in flight to answer
        if (s.refused) {
          mint.reject(new Error(`refused at step ${i}`));
        } else {
          const lifetimeMs = s.minutes * 60_000;
          const value = `v${++minted}`;
          expiry.set(value, mint.startedAt + lifetimeMs);
          newest = { value, until: mint.startedAt + lifetimeMs };
          mint.resolve({ value, lifetimeMs });
        }
        await flush();
        await flush();
      } else {
        now += s.ms;
      }
      if (pending.length > 1) throw new Error(`step ${i}: ${pending.length} mints in flight`);
    }
    // Everyone still waiting is answered once the last mint is.
    while (pending.length > 0) {
      pending.shift()!.resolve({ value: `v${++minted}`, lifetimeMs: 3_600_000 });
      expiry.set(`v${minted}`, now + 3_600_000);
      await flush();
      await flush();
    }
    await flush();
    if (!waiting.every((w) => w.settled)) throw new Error('a caller was never answered');
    if (maxInFlight > 1) throw new Error('concurrent mints');
    mintsMade += minted;
  };
  const property = fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 120, size: 'max' }), schedule);
  if (!(await checkProperty(t, property, { numRuns: 300 }))) return;
  // The property was exercised: values handed out from the cache and many mints over the runs.
  t.log(`${handedOut} values handed out, ${mintsMade} mints`);
  t.true(handedOut > 1000, `${handedOut} values handed out`);
  t.true(mintsMade > 300, `${mintsMade} mints`);
});

test('steady state: with a caller at least every few minutes and prompt mints, no caller ever waits after the first', async (t) => {
  let refreshes = 0;
  // Callers arrive at most four minutes apart (inside the five-minute refresh window), for up to ten hours of tokens.
  const gaps = fc.array(fc.integer({ min: 0, max: REFRESH_BEFORE_MS - SEND_MARGIN_MS - 1 }), { minLength: 1, maxLength: 200, size: 'max' });
  const steady = async (between: number[]) => {
    let now = 0;
    let inFlight: PendingMint | undefined;
    const cache = new MintedCache<string>(() => new Promise((resolve, reject) => {
      inFlight = { resolve, reject, startedAt: now };
    }), () => now);
    const first = cache.get();
    inFlight!.resolve({ value: 'v0', lifetimeMs: 3_600_000 });
    inFlight = undefined;
    await first;
    for (const [i, gap] of between.entries()) {
      now += gap;
      if (typeof cache.get() !== 'string') throw new Error(`caller ${i + 1} waited`);
      // A background refresh answers within seconds.
      if (inFlight) {
        refreshes++;
        const mint: PendingMint = inFlight;
        inFlight = undefined;
        mint.resolve({ value: `v${i + 1}`, lifetimeMs: 3_600_000 });
        await flush();
      }
    }
  };
  if (!(await checkProperty(t, fc.asyncProperty(gaps, steady), { numRuns: 100 }))) return;
  t.log(`${refreshes} background refreshes`);
  t.true(refreshes >= 100, `${refreshes} background refreshes happened`);
});
