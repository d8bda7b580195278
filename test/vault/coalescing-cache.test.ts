/**
 * CoalescingCache on its own: invalidation by key, id and group costs O(1)
 * (it reads no other entry), is never undone by a load begun before it, and
 * leaves loads of anything else alone; entries are trusted one second at most
 * while the feed is not live; its maps stay bounded.
 */
import test from 'ava';
import { CoalescingCache } from '../../src/vault/coalescing-cache.js';

interface Value {
  id: string;
  group: string;
  n: number;
}

/** A value whose every property read is counted: invalidation must read none. */
function counted(v: Value, reads: { n: number }): Value {
  return new Proxy(v, {
    get(target, prop, receiver) {
      reads.n++;
      return Reflect.get(target, prop, receiver);
    },
  });
}

function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

class FakeTime {
  ms = 1_000_000;
  now = () => this.ms;
}

function tokenCache(options: { live?: () => boolean; time?: FakeTime; max?: number; maxMarks?: number } = {}) {
  return new CoalescingCache<Value>({
    max: options.max ?? 100_000,
    ttlMs: 60_000,
    tagsOf: (v) => ({ id: v.id, group: v.group }),
    ...(options.live ? { isLive: options.live } : {}),
    ...(options.time ? { now: options.time.now } : {}),
    ...(options.maxMarks ? { maxMarks: options.maxMarks } : {}),
  });
}

/** Counts loads per key. */
function loader() {
  const loads = new Map<string, number>();
  return {
    loads,
    total: () => [...loads.values()].reduce((a, b) => a + b, 0),
    of: (v: Value) => () => {
      loads.set(v.id, (loads.get(v.id) ?? 0) + 1);
      return Promise.resolve(v);
    },
  };
}

test('invalidating a group of N entries reads no entry and drops exactly that group, lazily', async (t) => {
  const cache = tokenCache();
  const reads = { n: 0 };
  const l = loader();
  const values: Value[] = [];
  for (let i = 0; i < 20_000; i++) values.push(counted({ id: `tok_${i}`, group: i < 10_000 ? 'cred_a' : `cred_${i % 7}`, n: i }, reads));
  for (const v of values) await cache.get(`h${v.n}`, l.of(v));
  t.is(l.total(), 20_000);
  reads.n = 0;

  cache.forgetGroup('cred_a');
  cache.forgetId('tok_15000');
  cache.forgetKey('h15001');
  t.is(reads.n, 0, 'no cached value was looked at');

  for (const v of values) await cache.get(`h${v.n}`, l.of(v));
  // cred_a's 10,000 and the two forgotten ones were loaded again; the other 9,998 were hits.
  t.is(l.total(), 20_000 + 10_002);
  t.is(l.loads.get('tok_10000'), 1);
  t.is(l.loads.get('tok_15000'), 2);
  t.is(l.loads.get('tok_15001'), 2);
  t.is(l.loads.get('tok_0'), 2);
});

test("invalidating one group leaves an unrelated key's load in flight to be cached", async (t) => {
  const cache = tokenCache();
  const gate = deferred<Value>();
  let loads = 0;
  const load = () => {
    loads++;
    return gate.promise;
  };
  const first = cache.get('h_other', load);
  cache.forgetGroup('cred_a');
  cache.forgetId('tok_unrelated');
  cache.forgetKey('h_unrelated');
  gate.resolve({ id: 'tok_other', group: 'cred_b', n: 1 });
  t.is((await first)?.id, 'tok_other');
  t.is((await cache.get('h_other', load))?.id, 'tok_other');
  t.is(loads, 1, 'the load begun before the unrelated invalidations was cached');
});

test('a load begun before its group, id or key was invalidated is served once, never cached', async (t) => {
  const forgets: Array<(c: CoalescingCache<Value>, i: number) => void> = [
    (c, i) => c.forgetGroup(`cred_${i}`),
    (c, i) => c.forgetId(`tok_${i}`),
    (c, i) => c.forgetKey(`h${i}`),
  ];
  for (const [i, forget] of forgets.entries()) {
    const cache = tokenCache();
    const gate = deferred<Value>();
    let loads = 0;
    const first = cache.get(`h${i}`, () => {
      loads++;
      return gate.promise;
    });
    forget(cache, i);
    gate.resolve({ id: `tok_${i}`, group: `cred_${i}`, n: 1 });
    t.is((await first)?.n, 1, 'its waiters get the result');
    await cache.get(`h${i}`, () => {
      loads++;
      return Promise.resolve({ id: `tok_${i}`, group: `cred_${i}`, n: 2 });
    });
    t.is(loads, 2, 'the next lookup loads again');
    t.is((await cache.get(`h${i}`, () => Promise.reject(new Error('not cached'))))?.n, 2, 'a load begun after the invalidation is cached');
  }
});

test('a forgotten key does not share its disowned load with the next caller', async (t) => {
  const cache = tokenCache();
  const old = deferred<Value>();
  const first = cache.get('h1', () => old.promise);
  cache.forgetKey('h1');
  const second = cache.get('h1', () => Promise.resolve({ id: 'tok_1', group: 'cred_a', n: 2 }));
  old.resolve({ id: 'tok_1', group: 'cred_a', n: 1 });
  t.is((await first)?.n, 1);
  t.is((await second)?.n, 2);
  t.is((await cache.get('h1', () => Promise.reject(new Error('not cached'))))?.n, 2);
});

test('while the feed is not live an entry is trusted one second at most; while live, until its TTL', async (t) => {
  const time = new FakeTime();
  let live = true;
  const cache = tokenCache({ time, live: () => live });
  const l = loader();
  const v: Value = { id: 'tok_1', group: 'cred_a', n: 1 };
  await cache.get('h1', l.of(v));
  time.ms += 30_000;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 1, 'live feed: a 30 s old entry is a hit');
  live = false;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 2, 'feed down: the 30 s old entry is reloaded');
  time.ms += 999;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 2, 'feed down: trusted for under a second');
  time.ms += 1;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 3, 'feed down: reloaded at one second');
  live = true;
  time.ms += 59_999;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 3);
  time.ms += 1;
  await cache.get('h1', l.of(v));
  t.is(l.total(), 4, 'the TTL still ends an entry');
  t.deepEqual([cache.hits, cache.misses], [3, 4]);
});

test('the index and the marks stay bounded; a mark pushed out takes its entries with it', async (t) => {
  const cache = tokenCache({ max: 100, maxMarks: 50 });
  const l = loader();
  for (let i = 0; i < 1000; i++) await cache.get(`h${i}`, l.of({ id: `tok_${i}`, group: `cred_${i}`, n: i }));
  for (let i = 0; i < 1000; i++) cache.forgetId(`tok_x${i}`);
  for (let i = 0; i < 1000; i++) cache.forgetGroup(`cred_x${i}`);
  const sizes = cache.sizes();
  t.is(sizes.entries, 100);
  t.is(sizes.ids, 100, 'the id index holds only cached entries');
  t.true(sizes.groupMarks <= 50);
  t.true(sizes.idMarks <= 50);
  t.is(sizes.inflight, 0);
  // Every cached entry's group mark was pushed out by the 1000 invalidations: they are misses now, never stale hits.
  const before = l.total();
  for (let i = 900; i < 1000; i++) await cache.get(`h${i}`, l.of({ id: `tok_${i}`, group: `cred_${i}`, n: i }));
  t.is(l.total() - before, 100);
  // A mark pushed out while a load of its group was in flight still stops that load being cached.
  const gate = deferred<Value>();
  const inflight = cache.get('h_late', () => gate.promise);
  cache.forgetGroup('cred_late');
  for (let i = 0; i < 100; i++) cache.forgetGroup(`cred_y${i}`);
  gate.resolve({ id: 'tok_late', group: 'cred_late', n: 0 });
  await inflight;
  let reloaded = false;
  await cache.get('h_late', () => {
    reloaded = true;
    return Promise.resolve({ id: 'tok_late', group: 'cred_late', n: 1 });
  });
  t.true(reloaded);
});

test('a revoked id: its entry goes at once, other entries of its group stay', async (t) => {
  const cache = tokenCache();
  const l = loader();
  const a: Value = { id: 'tok_a', group: 'cred', n: 1 };
  const b: Value = { id: 'tok_b', group: 'cred', n: 2 };
  await cache.get('ha', l.of(a));
  await cache.get('hb', l.of(b));
  cache.forgetId('tok_a');
  t.is(cache.sizes().entries, 1);
  t.is(cache.sizes().ids, 1);
  await cache.get('ha', l.of(a));
  await cache.get('hb', l.of(b));
  t.deepEqual([l.loads.get('tok_a'), l.loads.get('tok_b')], [2, 1]);
});
