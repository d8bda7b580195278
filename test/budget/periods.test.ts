/**
 * The UTC month and day names every proxied request asks for (usage counters, quota, spend). They are
 * cached for the last month and day seen: the cache must never answer for a moment outside them,
 * whatever order moments come in (edges, going back, far years).
 */
import test from 'ava';
import { dayOf, periodOf } from '../../src/accounting/periods.js';

/** What a fresh Date says, in the functions' formats (the month's year unpadded, the day's ISO). */
const expected = (ms: number): { month: string; day: string } => {
  const d = new Date(ms);
  return { month: `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`, day: d.toISOString().slice(0, 10) };
};

test('month and day names match a fresh Date at every edge, in any order, including years a cache could misread', (t) => {
  const edges = [
    Date.UTC(2026, 10, 23, 5), Date.UTC(2026, 10, 30, 23, 59, 59, 999), Date.UTC(2026, 11, 1), Date.UTC(2026, 10, 1) - 1,
    Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), Date.UTC(2028, 1, 29, 12), 0, -1,
    // Date.UTC reads year 50 as 1950: a cached range for 0050-01 must not answer for 1950-01.
    Date.parse('0050-01-15T00:00:00Z'), Date.UTC(1950, 0, 15),
  ];
  const order = [...edges, ...[...edges].reverse(), ...edges.flatMap((a) => edges.map((b) => [a, b]).flat())];
  for (const ms of order) {
    const e = expected(ms);
    t.is(periodOf(ms), e.month, `month of ${new Date(ms).toISOString()}`);
    t.is(dayOf(ms), e.day, `day of ${new Date(ms).toISOString()}`);
  }
});
