/**
 * Refusal counts under store failures: a batch that failed is sent again alone, before what was counted
 * since; what was counted since is still written (by a later flush, or at close), each refusal once.
 */
import 'reflect-metadata';
import test from 'ava';
import { AuditLog } from '../../src/controls/audit-log.js';
import { Instance } from '../../src/accounting/instance.js';
import { loadConfig } from '../../src/settings/config.js';
import { createLogger } from '../../src/log.js';
import { BackendUnavailable } from '../../src/errors.js';
import type { AuditRecord, AuditStore } from '../../src/store/ports.js';
import { ManualClock } from '../support/clocks.js';
import { Writable } from 'node:stream';

/** Stores each batch once (as the adapters do); `landThenFail` batches land and are reported failed. */
function countingStore() {
  const batches = new Map<string, number>();
  const failing = new Set<number>();
  let calls = 0;
  const store: Pick<AuditStore, 'addAuditCounts' | 'appendAudit' | 'deleteExpiredAudit'> = {
    addAuditCounts: async (batch: string, records: AuditRecord[]) => {
      const call = ++calls;
      if (!batches.has(batch)) batches.set(batch, records.reduce((n, r) => n + r.count, 0));
      if (failing.has(call)) throw new BackendUnavailable('test (landed, answer lost)');
    },
    appendAudit: async () => undefined,
    deleteExpiredAudit: async () => 0,
  };
  return { store: store as AuditStore, failCall: (n: number) => failing.add(n), total: () => [...batches.values()].reduce((a, b) => a + b, 0) };
}

const quiet = createLogger('error', new Writable({ write: (_c, _e, cb) => cb() }));
const refusal = { requestId: 'r', org: '', actor: '', action: 'auth.failed', target: '', outcome: 'denied' as const, ip: '127.0.0.1' };

for (const ending of ['a later flush', 'close'] as const) {
  test(`a failed batch sent again alone: what was counted meanwhile is written by ${ending}, every refusal once`, async (t) => {
    const clock = new ManualClock();
    const s = countingStore();
    const audit = new AuditLog(s.store, clock, quiet, loadConfig({}), clock, new Instance());
    for (let i = 0; i < 5; i++) audit.refused(refusal);
    s.failCall(1);
    await clock.tick(1000); // batch 1 lands, its answer is lost
    for (let i = 0; i < 3; i++) audit.refused(refusal); // counted while batch 1 waits to be sent again
    if (ending === 'a later flush') {
      await clock.tick(1000); // batch 1 again, alone
      t.is(s.total(), 5);
      await clock.tick(1000);
    } else {
      await audit.close(); // batch 1 again, alone, then the rest
    }
    t.is(s.total(), 8);
  });
}
