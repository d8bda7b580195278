/**
 * BufferBudget on its own: the sum of what is taken never passes the limit, a
 * refused take takes nothing, and giving back an eighth of the budget asks V8
 * for a collection (seen as a major GC by a PerformanceObserver).
 */
import test from 'ava';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { BufferBudget } from '../../src/gateway/buffer-budget.js';
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
