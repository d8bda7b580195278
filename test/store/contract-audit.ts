/**
 * The store contract's audit and deployment-secret part (contract.ts runs it
 * for every adapter): appends, aggregated counts that stay exact across
 * instances, expiry, and secrets that the first instance creates for all.
 */
import type { TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import { BAD_CURSOR, type AuditRecord } from '../../src/store/ports.js';
import { newId } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

/** An expiry no test reaches (2096; Firestore Timestamps stop at year 9999). */
const FAR_FUTURE = 4_000_000_000_000;

export function auditContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  // ---- audit ------------------------------------------------------------------

  test(n('appendAudit and listAudit: newest first, paged, per organisation'), async (t) => {
    const store = await (await h.backend(t)).open();
    const orgA = newId('org');
    const orgB = newId('org');
    const base = 1_700_000_000_000;
    const rec = (org: string, time: number, action = 'credential.create'): AuditRecord => ({
      id: newId('evt'), time, requestId: newId('req'), org, actor: newId('otk'), action, target: newId('cred'), outcome: 'success', ip: '127.0.0.1',
      count: 1, expireAt: FAR_FUTURE,
    });
    const mine = [rec(orgA, base), rec(orgA, base + 1), rec(orgA, base + 1), rec(orgA, base + 5, 'token.revoke'), rec(orgA, base + 9)];
    const theirs = rec(orgB, base + 3);
    const nobody: AuditRecord = { ...rec('', base + 4, 'auth.failed'), actor: 'anonymous', outcome: 'failure', target: '' };
    await store.appendAudit([mine[0]!, theirs, mine[1]!]);
    await store.appendAudit([mine[2]!, nobody, mine[3]!, mine[4]!]);
    await store.appendAudit([]);
    const expected = [...mine].sort((x, y) => y.time - x.time || (x.id < y.id ? 1 : -1));

    const p1 = await store.listAudit(orgA, { limit: 3 });
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1.data, expected.slice(0, 3));
    t.true(p1.hasMore);
    const p2 = await store.listAudit(orgA, { limit: 3, startingAfter: p1.data[2]!.id });
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2.data, expected.slice(3));
    t.false(p2.hasMore);
    t.is(await store.listAudit(orgA, { limit: 3, startingAfter: newId('evt') }), BAD_CURSOR);
    t.is(await store.listAudit(orgA, { limit: 3, startingAfter: theirs.id }), BAD_CURSOR);
    t.deepEqual(await store.listAudit(orgB, { limit: 10 }), { data: [theirs], hasMore: false });
    t.deepEqual(await store.listAudit('', { limit: 10 }), { data: [nobody], hasMore: false });
    // A retried append of a record that did land stores it once.
    await store.appendAudit([mine[4]!]);
    t.is((await store.listAudit(orgA, { limit: 10 }) as { data: AuditRecord[] }).data.length, mine.length);
  });

  test(n('addAuditCounts: a new id is stored, each batch adds its count once and the first writer\'s fields stay; exact from 3 instances'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const orgA = newId('org');
    const base = Date.now();
    const refusal = (time: number, count: number, id: string): AuditRecord => ({
      id, time, requestId: newId('req'), org: orgA, actor: 'anonymous', action: 'auth.failed', target: '/v1/credentials',
      outcome: 'denied', ip: '203.0.113.9', count, expireAt: FAR_FUTURE,
    });
    const id = newId('evt');
    const first = refusal(base, 3, id);
    await stores[0]!.addAuditCounts('i0.1', [first]);
    await stores[1]!.addAuditCounts('i1.1', [refusal(base + 10, 4, id)]);
    // A batch sent again (its first attempt landed but timed out) adds nothing.
    await stores[1]!.addAuditCounts('i1.1', [refusal(base + 10, 4, id)]);
    const page = await stores[2]!.listAudit(orgA, { limit: 10 });
    if (page === BAD_CURSOR) return t.fail();
    t.deepEqual(page.data, [{ ...first, count: 7 }]);

    // Concurrent flushes of two keys from three instances, twenty rounds each: nothing lost, nothing doubled.
    const other = newId('evt');
    await Promise.all(Array.from({ length: 60 }, (_, i) =>
      stores[i % 3]!.addAuditCounts(`i${i % 3}.${2 + i}`, [refusal(base + 20 + i, 1, id), refusal(base + 20 + i, 2, other)])));
    const after = await stores[0]!.listAudit(orgA, { limit: 10 });
    if (after === BAD_CURSOR) return t.fail();
    t.deepEqual(new Map(after.data.map((r) => [r.id, r.count])), new Map([[other, 120], [id, 67]]));
    t.is(after.data.find((r) => r.id === id)!.time, base, 'the first writer\'s time stays');
  });

  test(n('listAudit leaves out records expired at `now`, and pages on across them'), async (t) => {
    const store = await (await h.backend(t)).open();
    const orgA = newId('org');
    const base = 1_800_000_000_000;
    const rec = (i: number, expireAt: number): AuditRecord => ({
      id: newId('evt'), time: base + i, requestId: newId('req'), org: orgA, actor: 'cli', action: 'token.create', target: newId('tok'),
      outcome: 'success', ip: '', count: 1, expireAt,
    });
    // Newest first: live, expired, live, 60 expired (more than one read), live.
    const records = [rec(100, base + 10_000), rec(99, base + 50), rec(98, base + 10_000), ...Array.from({ length: 60 }, (_, i) => rec(97 - i, base + 50)), rec(0, base + 10_000)];
    await store.appendAudit(records);
    const now = base + 1_000;
    const live = records.filter((r) => r.expireAt > now);
    const all = await store.listAudit(orgA, { limit: 10 }, now);
    if (all === BAD_CURSOR) return t.fail();
    t.deepEqual(all, { data: live, hasMore: false });
    const p1 = await store.listAudit(orgA, { limit: 2 }, now);
    if (p1 === BAD_CURSOR) return t.fail();
    t.deepEqual(p1, { data: live.slice(0, 2), hasMore: true });
    const p2 = await store.listAudit(orgA, { limit: 2, startingAfter: p1.data[1]!.id }, now);
    if (p2 === BAD_CURSOR) return t.fail();
    t.deepEqual(p2, { data: live.slice(2), hasMore: false });
    // Before they expire, all are listed.
    const before = await store.listAudit(orgA, { limit: 100 }, base);
    if (before === BAD_CURSOR) return t.fail();
    t.is(before.data.length, records.length);
  });

  // ---- deployment secrets -----------------------------------------------------

  test(n('createSecretIfAbsent: the first of several instances wins, every one reads it back; rewrapSecret swaps only the value it read'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const name = `test-${newId('req')}`;
    const made = Array.from({ length: 9 }, (_, i) => ({ name, wrapped: randomBytes(60), kekId: `local:${i}`, createdAt: 1_800_000_000_000 + i }));
    const outcomes = await Promise.all(made.map((s, i) => stores[i % 3]!.createSecretIfAbsent(s)));
    const winner = made.find((s) => s.wrapped.equals(outcomes[0]!.wrapped));
    t.truthy(winner);
    for (const o of outcomes) t.deepEqual(o, winner);
    t.deepEqual(await stores[1]!.getSecret(name), winner);
    t.is(await stores[0]!.getSecret(`${name}-other`), undefined);
    const next = randomBytes(60);
    t.false(await stores[0]!.rewrapSecret(name, randomBytes(60), next, 'local:new'), 'not the value it read: nothing swapped');
    t.true(await stores[2]!.rewrapSecret(name, winner!.wrapped, next, 'local:new'));
    t.deepEqual(await stores[1]!.getSecret(name), { ...winner!, wrapped: next, kekId: 'local:new' });
  });
}
