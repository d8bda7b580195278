/**
 * minted-cache.ts's guarantees, each tried against many random schedules (seeded, so a failure
 * replays): a value is never handed out within a minute of its expiry; at most one mint is ever in
 * flight, whoever asks; while a fresh value exists no caller waits (the refresh runs in the
 * background); every caller waiting on a mint gets its value or its failure, and the next caller
 * after a failure starts a new mint.
 */
import test from 'ava';
import { MintedCache, REFRESH_BEFORE_MS, SEND_MARGIN_MS } from '../../src/gateway/signers/minted-cache.js';

/** mulberry32: the same sequence for the same seed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

interface PendingMint {
  resolve(v: { value: string; lifetimeMs: number }): void;
  reject(err: Error): void;
  startedAt: number;
}

const flush = () => new Promise((r) => setImmediate(r));

test('property: never a value within a minute of expiry, one mint in flight, no wait while fresh, waiters answered', async (t) => {
  const violations: string[] = [];
  let handedOut = 0;
  let mintsMade = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const random = prng(seed);
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
    const steps = 60 + Math.floor(random() * 60);
    for (let step = 0; step < steps; step++) {
      const roll = random();
      if (roll < 0.45) {
        // One caller, or a burst.
        const callers = random() < 0.2 ? 1 + Math.floor(random() * 20) : 1;
        for (let c = 0; c < callers; c++) {
          const got = cache.get();
          if (typeof got === 'string') {
            handedOut++;
            const until = expiry.get(got)!;
            if (!(now < until - SEND_MARGIN_MS)) violations.push(`seed ${seed}: ${got} handed out ${until - now} ms before it expires`);
          } else {
            if (newest && now < newest.until - SEND_MARGIN_MS) violations.push(`seed ${seed}: a caller waits while ${newest.value} is fresh`);
            const w = { promise: got, settled: false as boolean, outcome: undefined as string | undefined };
            got.then((v) => { w.settled = true; w.outcome = v; }, (e: Error) => { w.settled = true; w.outcome = `error:${e.message}`; });
            waiting.push(w);
          }
        }
      } else if (roll < 0.75 && pending.length > 0) {
        // The mint in flight answers: a value of random life, or a refusal.
        const mint = pending.shift()!;
        if (random() < 0.2) {
          mint.reject(new Error(`refused ${seed}/${step}`));
        } else {
          const lifetimeMs = (3 + Math.floor(random() * 120)) * 60_000;
          const value = `v${++minted}`;
          expiry.set(value, mint.startedAt + lifetimeMs);
          newest = { value, until: mint.startedAt + lifetimeMs };
          mint.resolve({ value, lifetimeMs });
        }
        await flush();
        await flush();
      } else {
        now += Math.floor(random() * (random() < 0.5 ? 60_000 : 20 * 60_000));
      }
      if (pending.length > 1) violations.push(`seed ${seed}: ${pending.length} mints in flight`);
    }
    // Everyone still waiting is answered once the last mint is.
    while (pending.length > 0) {
      pending.shift()!.resolve({ value: `v${++minted}`, lifetimeMs: 3_600_000 });
      expiry.set(`v${minted}`, now + 3_600_000);
      await flush();
      await flush();
    }
    await flush();
    if (!waiting.every((w) => w.settled)) violations.push(`seed ${seed}: a caller was never answered`);
    if (maxInFlight > 1) violations.push(`seed ${seed}: concurrent mints`);
    mintsMade += minted;
  }
  t.deepEqual(violations, []);
  // The property was exercised: values handed out from the cache and many mints over the seeds.
  t.true(handedOut > 1000, `${handedOut} values handed out`);
  t.true(mintsMade > 300, `${mintsMade} mints`);
});

test('steady state: with a caller at least every few minutes and prompt mints, no caller ever waits after the first', async (t) => {
  const violations: string[] = [];
  let refreshes = 0;
  for (let seed = 1; seed <= 100; seed++) {
    const random = prng(seed);
    let now = 0;
    let inFlight: PendingMint | undefined;
    const cache = new MintedCache<string>(() => new Promise((resolve, reject) => {
      inFlight = { resolve, reject, startedAt: now };
    }), () => now);
    let waited = 0;
    const first = cache.get();
    inFlight!.resolve({ value: 'v0', lifetimeMs: 3_600_000 });
    inFlight = undefined;
    await first;
    for (let i = 0; i < 200; i++) {
      // Callers arrive at most four minutes apart (inside the five-minute refresh window), for ten hours of tokens.
      now += Math.floor(random() * (REFRESH_BEFORE_MS - SEND_MARGIN_MS));
      if (typeof cache.get() !== 'string') waited++;
      // A background refresh answers within seconds.
      if (inFlight) {
        refreshes++;
        const mint: PendingMint = inFlight;
        inFlight = undefined;
        mint.resolve({ value: `v${i + 1}`, lifetimeMs: 3_600_000 });
        await flush();
      }
    }
    if (waited > 0) violations.push(`seed ${seed}: ${waited} callers waited`);
  }
  t.deepEqual(violations, []);
  t.true(refreshes >= 100, `${refreshes} background refreshes happened`);
});
