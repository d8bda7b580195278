/**
 * The store contract's spend-budget part (contract.ts runs it for every adapter): `leaseAtLeast`
 * grants all of its `min` or nothing and never passes the limit, alone or from three instances at
 * once, returned amounts included; an org's spend limit is stored, read back, cleared, and announced
 * on the change feed.
 */
import type { TestFn } from 'ava';
import type { Change, OrgRecord } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

export function spendContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('leaseAtLeast grants between min and want, or nothing when min does not fit; returned amounts count'), async (t) => {
    const store = await (await h.backend(t)).open();
    const key = `spend:tok:${newId('tok')}`;
    t.deepEqual(await store.leaseAtLeast(key, 100, 30, 50), { granted: 50, leased: 50 });
    t.deepEqual(await store.leaseAtLeast(key, 100, 30, 40), { granted: 40, leased: 90 });
    t.deepEqual(await store.leaseAtLeast(key, 100, 11, 20), { granted: 0, leased: 90 }, '10 left: a min of 11 gets nothing');
    t.deepEqual(await store.leaseAtLeast(key, 100, 10, 20), { granted: 10, leased: 100 }, 'between min and want');
    await store.release(key, 7);
    await store.release(key, 8);
    t.deepEqual(await store.leaseAtLeast(key, 100, 16, 16), { granted: 0, leased: 85 });
    t.deepEqual(await store.leaseAtLeast(key, 100, 15, 15), { granted: 15, leased: 100 }, 'two returned amounts make one grant');
    t.is(await store.leased(key), 100);
    await store.release(key, 20);
    t.deepEqual(await store.leaseAtLeast(key, 100, 5, 6), { granted: 6, leased: 86 }, 'part of a returned amount');
    t.deepEqual(await store.leaseAtLeast(key, 100, 14, 14), { granted: 14, leased: 100 }, 'its remainder is still there');
  });

  test(n('leaseAtLeast from 3 instances at once: never past the limit, every grant whole, the limit reached exactly'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const key = `spend:org:${newId('org')}:2026-11`;
    const limit = 1000;
    const mins = Array.from({ length: 36 }, (_, i) => 20 + ((i * 13) % 41)); // sum ≫ limit
    const grants = await Promise.all(mins.map((m, i) => stores[i % 3]!.leaseAtLeast(key, limit, m, m)));
    for (const [i, g] of grants.entries()) {
      t.true(g.granted === 0 || g.granted === mins[i], `grant ${g.granted} of ${mins[i]}`);
      t.true(g.leased <= limit);
    }
    const total = grants.reduce((s, g) => s + g.granted, 0);
    t.true(total <= limit);
    t.is(await stores[0]!.leased(key), total);
    // Hand some back from two instances; whole grants from the pool reach the limit exactly.
    await Promise.all([stores[0]!.release(key, 100), stores[1]!.release(key, 60)]);
    const rest = limit - (total - 160);
    const again = await Promise.all([stores[2]!.leaseAtLeast(key, limit, rest, rest), stores[1]!.leaseAtLeast(key, limit, rest, rest)]);
    t.deepEqual(again.map((g) => g.granted).sort((a, b) => b - a), [rest, 0], 'one whole grant, one none');
    t.is(await stores[0]!.leased(key), limit);
  });

  test(n('setOrgSpendLimit stores, reads back and clears the cap, and announces the org on the change feed'), async (t) => {
    const backend = await h.backend(t);
    const [writer, watcher] = [await backend.open(), await backend.open()];
    const org: OrgRecord = { id: newId('org'), name: 'acme', createdAt: Date.now() };
    await writer.createOrg(org, { id: newId('otk'), orgId: org.id, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null });
    t.is((await writer.getOrg(org.id))?.spendLimitMicros ?? null, null);
    const seen: Change[] = [];
    const heard = new Promise<void>((resolve) => {
      const stop = watcher.watch((c) => {
        seen.push(c);
        if (c.kind === 'org' && c.id === org.id) {
          stop();
          resolve();
        }
      });
    });
    t.true(await writer.setOrgSpendLimit(org.id, 250_000_000));
    t.is((await watcher.getOrg(org.id))?.spendLimitMicros, 250_000_000);
    // Within the feed's own second where it polls on the backend's timers (SQLite); a pushed feed's change is a real event.
    if (backend.timers) await backend.timers.tick(1000);
    await Promise.race([heard, new Promise((_, reject) => setTimeout(() => reject(new Error(`no org change: ${JSON.stringify(seen)}`)), backend.timers ? 0 : 20_000))]);
    t.true(await writer.setOrgSpendLimit(org.id, null));
    t.is((await writer.getOrg(org.id))?.spendLimitMicros ?? null, null);
    t.false(await writer.setOrgSpendLimit(newId('org'), 1), 'no such org');
  });
}
