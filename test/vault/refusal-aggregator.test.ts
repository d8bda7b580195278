/** The refusal aggregator: one record per (org, action, address, minute), ids every instance derives alike, bounded memory without drops. */
import test from 'ava';
import { ANY_ADDRESS, RefusalAggregator, refusalId, type AuditEntry } from '../../src/controls/refusal-aggregator.js';
import { isId } from '../../src/ids.js';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 15, 12, 0, 0);
const entry = (ip: string, org = 'org_A', action = 'auth.failed'): AuditEntry =>
  ({ requestId: `req_${ip}`, org, actor: 'anonymous', action, target: '/v1/proxy/v1/models', outcome: 'denied', ip });

test('one record per (org, action, address, minute), with the first event\'s time and fields and the minute\'s count', (t) => {
  const agg = new RefusalAggregator(1000);
  agg.add(entry('10.0.0.1'), T0 + 5);
  agg.add({ ...entry('10.0.0.1'), requestId: 'req_later' }, T0 + 9);
  agg.add(entry('10.0.0.1'), T0 + MINUTE - 1);
  agg.add(entry('10.0.0.1'), T0 + MINUTE); // the next minute
  agg.add(entry('10.0.0.2'), T0 + 10);
  agg.add(entry('10.0.0.1', 'org_B'), T0 + 11);
  agg.add(entry('10.0.0.1', 'org_A', 'quota.refused'), T0 + 12);
  const { records, folded } = agg.take();
  t.is(folded, 0);
  t.is(records.length, 5);
  const first = records.find((r) => r.id === refusalId('org_A', 'auth.failed', '10.0.0.1', T0))!;
  t.like(first, { time: T0 + 5, requestId: 'req_10.0.0.1', count: 3, expireAt: T0 + 5 + 1000 });
  t.is(records.find((r) => r.id === refusalId('org_A', 'auth.failed', '10.0.0.1', T0 + MINUTE))!.count, 1);
  t.is(records.reduce((n, r) => n + r.count, 0), 7);
  t.is(agg.take().records.length, 0, 'take resets');
});

test('ids are well formed, the same on every instance, and differ for any other key', (t) => {
  const id = refusalId('org_A', 'auth.failed', '10.0.0.1', T0);
  t.true(isId('evt', id));
  t.is(refusalId('org_A', 'auth.failed', '10.0.0.1', T0), id);
  const others = [
    refusalId('org_B', 'auth.failed', '10.0.0.1', T0), refusalId('org_A', 'quota.refused', '10.0.0.1', T0),
    refusalId('org_A', 'auth.failed', '10.0.0.2', T0), refusalId('org_A', 'auth.failed', '10.0.0.1', T0 + MINUTE),
  ];
  t.is(new Set([id, ...others]).size, 5);
});

test('past the key cap, new addresses fold into a catch-all record (address *), then one with no organisation; nothing dropped', (t) => {
  const agg = new RefusalAggregator(1000, 3, 1);
  for (let i = 0; i < 10; i++) agg.add(entry(`10.0.0.${i}`, i < 8 ? 'org_A' : 'org_B'), T0 + i);
  agg.add(entry('10.0.0.0'), T0 + 20); // a known key still counts exactly
  t.is(agg.size, 5);
  const { records, folded } = agg.take();
  t.is(folded, 7);
  t.is(records.reduce((n, r) => n + r.count, 0), 11);
  const byKey = new Map(records.map((r) => [`${r.org}|${r.ip}`, r.count]));
  t.deepEqual(byKey, new Map([
    ['org_A|10.0.0.0', 2], ['org_A|10.0.0.1', 1], ['org_A|10.0.0.2', 1],
    [`org_A|${ANY_ADDRESS}`, 5], [`|${ANY_ADDRESS}`, 2],
  ]));
});

