/**
 * How the console writes numbers (console/src/format.ts), as properties over many magnitudes: an axis
 * starts at 0, steps evenly by 1, 2 or 5 × 10^k, reaches the largest value with at most one step to
 * spare, has 2 to 6 ticks, and writes every tick differently and with the same precision (never "$0"
 * beside "$0.0000"); counts are written one way (10,000; 1.2M) and figures of money keep their cents.
 */
import test from 'ava';
import { axis, count, money, niceStep } from '../../console/src/format.js';

function* magnitudes(): Generator<number> {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let e = -7; e <= 9; e++) for (let i = 0; i < 12; i++) yield (1 + 9 * rand()) * 10 ** e;
  yield 0;
}

test('axis: round ticks from 0 past the largest value, evenly spaced, each written once with one precision', (t) => {
  for (const unit of ['count', 'usd'] as const) {
    for (const max of magnitudes()) {
      const a = axis(max, unit);
      const at = `${unit} ${max}`;
      t.is(a.ticks[0], 0, at);
      t.true(a.ticks.length >= 2 && a.ticks.length <= 6, `${at}: ${a.ticks.length} ticks`);
      const step = a.ticks[1]! - a.ticks[0]!;
      const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
      t.true([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6), `${at}: step ${step}`);
      for (let i = 1; i < a.ticks.length; i++) t.true(Math.abs(a.ticks[i]! - a.ticks[i - 1]! - step) < step * 1e-9, `${at}: even`);
      t.true(a.top >= max && a.top - step < Math.max(max, unit === 'count' ? 1 : 0.001), `${at}: top ${a.top}`);
      if (unit === 'count') t.true(Number.isInteger(step), at);
      const labels = a.ticks.map(a.label);
      t.is(new Set(labels).size, labels.length, `${at}: ${labels.join(' ')}`);
      const places = labels.map((l) => (/\.(\d+)/.exec(l)?.[1]?.length ?? 0));
      if (unit === 'usd') t.true(places.every((p) => p === places[0]), `${at}: ${labels.join(' ')}`);
    }
  }
});

test('counts and money are written one way', (t) => {
  t.is(count(3), '3');
  t.is(count(10_000), '10,000');
  t.is(count(999_999), '999,999');
  t.is(count(1_200_000), '1.2M');
  t.is(count(25_000_000), '25M');
  t.is(money(20), '$20.00');
  t.is(money(0.0035), '$0.0035');
  t.is(money(1234.5), '$1,234.50');
  t.is(niceStep(290), 100);
  t.is(niceStep(7.25), 2);
});
