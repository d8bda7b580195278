/**
 * How property tests run: fast-check (https://fast-check.dev) inside an ava test, so that every property test
 * reads alike and reports alike.
 *
 * `checkProperty(t, property, { numRuns })` runs the property with a new seed each time (under CI=true a fixed one,
 * so a landing never rests on a draw; `KEYWARD_PROPERTY_SEED=random` draws anyway), logs the seed, and on a
 * failure fails the test with fast-check's report: the seed, the path to the shrunk counterexample, the
 * counterexample itself and the error it raised. A property states its invariant by throwing (never through `t`:
 * an ava assertion does not throw, so fast-check could neither see nor shrink it); what the generator must have
 * exercised (coverage) is asserted with `t` after the property held.
 *
 * Replaying a printed failure:
 * - `KEYWARD_PROPERTY_SEED=<seed> npx ava <file>` runs the same cases again and shrinks them again;
 * - `KEYWARD_PROPERTY_SEED=<seed> KEYWARD_PROPERTY_PATH=<path> npx ava <file>` runs the shrunk counterexample alone
 *   (a property built on `fc.gen()`, as the fuzz test's, replays by its seed and the path's first number only).
 *
 * Sizes come from each test's defaults, overridden by the environment variables it names
 * (KEYWARD_PROPERTY_SCENARIOS, KEYWARD_PROPERTY_REQUESTS, KEYWARD_FUZZ_COUNT: `npm run test:fuzz` sets them).
 */
import type { ExecutionContext } from 'ava';
import fc from 'fast-check';

/** An integer from the environment, or `fallback` when the variable is unset or empty. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer (got ${JSON.stringify(raw)})`);
  return n;
}

/** The seed a run uses when CI gives none: fixed, so a landing never depends on a draw (exploring is `npm run test:fuzz`'s). */
const CI_SEED = 20261128;

/**
 * KEYWARD_PROPERTY_SEED: an integer replays that seed; `random` draws a new one. Unset: a new one on a developer's
 * machine (each run explores), the fixed CI_SEED under CI=true.
 */
export function propertySeed(): number {
  const raw = (process.env.KEYWARD_PROPERTY_SEED ?? '').trim();
  if (raw === '' && process.env.CI === 'true') return CI_SEED;
  if (raw === '' || raw === 'random') return (Date.now() ^ (Math.random() * 0x1_0000_0000)) | 0;
  return envInt('KEYWARD_PROPERTY_SEED', CI_SEED);
}

/** True when KEYWARD_PROPERTY_PATH asks for one counterexample: the run is not the whole property, coverage checks do not apply. */
export const replayingPath = (): boolean => (process.env.KEYWARD_PROPERTY_PATH ?? '') !== '';

/**
 * Runs `property` `numRuns` times (its cases shrunk on a failure) and fails `t` with fast-check's report if it does
 * not hold. Returns true when the property held over a whole run, so the caller may go on to its coverage checks.
 * Shrinking stops `timeLimitMs` after the start (30 s unless given, inside ava's timeout) and the report shows the
 * smallest case found by then; replaying its path shrinks on from there.
 */
export async function checkProperty<Ts>(
  t: ExecutionContext,
  property: fc.IAsyncProperty<Ts> | fc.IProperty<Ts>,
  params: { numRuns: number; timeLimitMs?: number } & Omit<fc.Parameters<Ts>, 'seed' | 'path' | 'numRuns'>,
): Promise<boolean> {
  // fast-check would draw the seed itself; drawing it here lets the log carry it even when a later coverage check fails.
  const seed = propertySeed();
  const path = replayingPath() ? process.env.KEYWARD_PROPERTY_PATH : undefined;
  const { timeLimitMs = 30_000, ...rest } = params;
  t.log(`fast-check: seed ${seed}${path ? `, path ${path}` : ''}, ${params.numRuns} runs`);
  const details = await fc.check(property as fc.IRawProperty<Ts>, { ...rest, seed, path, skipAllAfterTimeLimit: timeLimitMs, includeErrorInReport: true });
  if (!details.failed) return path === undefined;
  t.fail(fc.defaultReportMessage(details));
  return false;
}

/**
 * `p` of the time true: a weighted choice that shrinks to false. `chance(0.3)` instead of `fc.boolean()` where a
 * branch should be taken at its own rate.
 */
export function chance(p: number): fc.Arbitrary<boolean> {
  const yes = Math.round(p * 1000);
  return fc.oneof({ withCrossShrink: true }, { arbitrary: fc.constant(false), weight: 1000 - yes }, { arbitrary: fc.constant(true), weight: yes });
}

/** `arb` with probability `p`, else undefined (which it shrinks to). */
export function maybe<T>(p: number, arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  const yes = Math.round(p * 1000);
  return fc.oneof({ withCrossShrink: true }, { arbitrary: fc.constant(undefined), weight: 1000 - yes }, { arbitrary: arb, weight: yes });
}

/**
 * Dice, for long runs of steps. A step drawn as a record of weighted choices costs fast-check several times what
 * running it costs; the same step drawn as a few integers and read through `.map` costs a fraction of that, still
 * shrinks (each die towards 0, which the reading makes the simplest choice: the first of a table) and is printed as
 * what it was read as. `die(n)`: 0 to n − 1.
 */
export const die = (faces: number): fc.Arbitrary<number> => fc.integer({ min: 0, max: faces - 1 });

/** A table of choices by weight, such as `[[90, undefined], [5, 'before'], [5, 'after']]`, for `dieFor` and `landsOn`. */
export type Weighted<T> = ReadonlyArray<readonly [number, T]>;

/** A die with one face per unit of weight of `choices`. */
export const dieFor = <T>(choices: Weighted<T>): fc.Arbitrary<number> => die(choices.reduce((n, [w]) => n + w, 0));

/** The choice a roll of `dieFor(choices)` lands on: each takes as many faces as its weight, the first from 0. */
export function landsOn<T>(roll: number, choices: Weighted<T>): T {
  let rest = roll;
  for (const [weight, choice] of choices) {
    if (rest < weight) return choice;
    rest -= weight;
  }
  throw new RangeError(`roll ${roll} is past the table`);
}

/** True `p` of the time on a `die(1000)`, false at 0 (what it shrinks to). */
export const atRate = (roll: number, p: number): boolean => roll >= 1000 * (1 - p);

/** What an arbitrary produces (over a union of arbitraries, the union of what they produce). */
export type Produced<A> = A extends fc.Arbitrary<infer T> ? T : never;

/** One of `choices`, each at its weight: `weighted([[45, reserve], [30, settle], ...])`. Shrinks towards the first. */
export function weighted<const C extends ReadonlyArray<readonly [number, fc.Arbitrary<unknown>]>>(choices: C): fc.Arbitrary<Produced<C[number][1]>> {
  return fc.oneof({ withCrossShrink: true }, ...choices.map(([weight, arbitrary]) => ({ weight, arbitrary }))) as fc.Arbitrary<Produced<C[number][1]>>;
}

/**
 * fc.gen(), unbiased, for a value among many (the elements of an array). fc.gen() draws from a copy of the random
 * stream it is handed and leaves that stream where it was: every element of an array of fc.gen() draws the same
 * values, and when fast-check copies a value to run or shrink it again, the copy draws from wherever the stream has
 * got to since. This one hands fc.gen() a copy of its own and moves the stream on by STREAM_GAP draws (more than
 * one request of the fuzz test draws) before the next element.
 */
class IndependentGen extends fc.Arbitrary<fc.GeneratorValue> {
  private readonly gen = fc.noBias(fc.gen());

  generate(mrng: fc.Random, biasFactor: number | undefined): fc.Value<fc.GeneratorValue> {
    const own = mrng.clone();
    for (let i = 0; i < STREAM_GAP; i++) mrng.nextInt(0, 0x7fff_ffff);
    return this.gen.generate(own, biasFactor);
  }

  canShrinkWithoutContext(value: unknown): value is fc.GeneratorValue {
    return this.gen.canShrinkWithoutContext(value);
  }

  shrink(value: fc.GeneratorValue, context: unknown): fc.Stream<fc.Value<fc.GeneratorValue>> {
    return this.gen.shrink(value, context);
  }
}
const STREAM_GAP = 4096;
export const independentGen = (): fc.Arbitrary<fc.GeneratorValue> => new IndependentGen();

/**
 * Draws made while a property runs, for generators whose choices depend on what the run has seen so far (the fuzz
 * test picks ids among those that exist at that moment). Backed by an `fc.gen()` value (`independentGen()` for many
 * at once), so a run replays from its seed and its draws shrink, as far as `fc.gen()` shrinks (later draws are
 * redrawn when an earlier one changes).
 */
export interface Draws {
  /** 0 to n − 1 (0 when n ≤ 1). */
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
  /** True `p` of the time (false is the shrunk value). */
  chance(p: number): boolean;
  /** `n` characters from `chars`; past 64, a drawn pattern of up to 64 repeated (a size, not a content, is the point). */
  text(chars: readonly string[], n: number): string;
  /** `n` random bytes (at most 2048). */
  bytes(n: number): Buffer;
  /** What a failure report prints for these draws (by default, the list of values drawn); described only when printed. */
  printAs(describe: () => string): void;
}

/**
 * The sizes random bytes are drawn in (the smallest power of two that covers what is asked, then cut), each an arbitrary of its
 * own taking no arguments: fc.gen() finds an arbitrary by comparing arguments, and none is the cheapest to compare.
 */
const BYTE_DRAWS = Array.from({ length: 12 }, (_, i) => 2 ** i).map((size) => ({ size, arbitrary: () => fc.uint8Array({ minLength: size, maxLength: size }) }));

export function drawsFrom(g: fc.GeneratorValue): Draws {
  // A few arbitraries in all: fc.gen() looks each one up by its arguments in a list that grows with every new set.
  // Scaled, not taken modulo: a draw shrinking towards 0 moves towards the first choice, not about at random.
  const int = (n: number): number => (n <= 1 ? 0 : Math.floor((g(fc.nat) * n) / 2 ** 31));
  const byteString = (n: number): Uint8Array => g(BYTE_DRAWS.find((d) => d.size >= n)!.arbitrary).subarray(0, n);
  const text = (chars: readonly string[], n: number): string => {
    // Drawn as bytes, each read as one of `chars` (an order of magnitude cheaper to draw than fc.string's units).
    if (n <= 64) return n === 0 ? '' : Array.from(byteString(n), (b) => chars[b % chars.length]!).join('');
    const pattern = text(chars, 1 + int(64));
    return pattern.repeat(Math.ceil(n / pattern.length)).slice(0, n);
  };
  return {
    int,
    pick: (xs) => xs[int(xs.length)]!,
    chance: (p) => atRate(int(1000), p),
    text,
    bytes: (n) => {
      if (n > 2048) throw new RangeError(`at most 2048 random bytes (asked ${n})`);
      return Buffer.from(n === 0 ? [] : byteString(n));
    },
    printAs: (describe) => void Object.defineProperty(g, fc.toStringMethod, { value: describe, configurable: true }),
  };
}
