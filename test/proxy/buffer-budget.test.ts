/**
 * BufferBudget on its own: the sum of what is taken never passes the limit, a
 * refused take takes nothing, one token's and one organisation's takes stay
 * within their shares (and a refused take counts against neither), and giving back an eighth of the budget asks V8
 * for a collection (seen as a major GC by a PerformanceObserver).
 */
import test from 'ava';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { BufferBudget } from '../../src/gateway/entry/buffer-budget.js';
import { eventually } from '../support/wait.js';

test('takes up to the limit and no further; a refused take takes nothing; release gives room back', (t) => {
  const b = new BufferBudget(100);
  t.true(b.take(60));
  t.true(b.take(40));
  t.is(b.held, 100);
  t.false(b.take(1));
  t.is(b.held, 100, 'the refused take took nothing');
  b.release(30);
  t.false(b.take(31));
  t.true(b.take(30));
  b.release(100);
  t.is(b.held, 0);
});

test('a token stays within its share and an organisation\'s tokens together within the organisation\'s; a refused take counts against none', (t) => {
  const b = new BufferBudget(100, 30, 50);
  const a1 = { token: 'a1', org: 'A' };
  const a2 = { token: 'a2', org: 'A' };
  const a3 = { token: 'a3', org: 'A' };
  const b1 = { token: 'b1', org: 'B' };
  t.true(b.take(30, a1));
  t.false(b.take(1, a1), 'past the token\'s share');
  t.true(b.take(20, a2));
  t.is(b.heldByOrg('A'), 50);
  t.false(b.take(1, a3), 'a third token of the same organisation: past the organisation\'s share');
  t.is(b.heldBy('a3'), 0, 'the refused take counts against the token…');
  t.is(b.heldByOrg('A'), 50, '…and the organisation not at all');
  t.true(b.take(30, b1), 'another organisation still has room');
  t.is(b.held, 80);
  b.release(20, a2);
  t.is(b.heldByOrg('A'), 30);
  t.is(b.heldBy('a2'), 0);
  t.true(b.take(20, a3), 'given back: the organisation has room again');
  b.release(30, a1);
  b.release(20, a3);
  b.release(30, b1);
  t.is(b.held, 0);
  t.is(b.heldByOrg('A'), 0);
  t.is(b.heldByOrg('B'), 0);
});

test('giving back an eighth of the budget asks for a major collection', async (t) => {
  const b = new BufferBudget(8 * 1024 * 1024);
  const majors: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors.push(e.startTime);
  });
  observer.observe({ entryTypes: ['gc'] });
  t.teardown(() => observer.disconnect());
  const since = performance.now();
  t.true(b.take(1024 * 1024));
  b.release(1024 * 1024);
  await eventually(() => majors.some((at) => at >= since), 'a major GC after the release').catch(() => undefined);
  t.true(majors.some((at) => at >= since), 'a major GC ran after the release');
});
