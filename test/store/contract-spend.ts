/**
 * The store contract's spend-budget part (contract.ts runs it for every adapter): an org's spend
 * limit is stored, read back, cleared, and announced on the change feed. (Spend caps are lease pools:
 * contract-leases.ts covers claims of all of `min` or nothing.)
 */
import type { TestFn } from 'ava';
import type { Change, OrgRecord } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

export function spendContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

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
