/**
 * The store contract's lease part (contract.ts runs it for every adapter): pools that never grant past
 * their limit, claims of at least `min` or nothing (returned units pooled), holder writes that land only
 * on the seq before them (a retry of one that landed is reported written; another attempt of the same seq
 * conflicts), release, retire and reclaim by expiry (idle units back, used and armed counted), the
 * ledger's used + held = outstanding, charges without a holder, and three instances claiming at once.
 */
import type { TestFn } from 'ava';
import { randomBytes } from 'node:crypto';
import type { HolderOutcome, HolderState, HolderWrite, Store } from '../../src/store/ports.js';
import { newId } from '../../src/ids.js';
import type { StoreHarness } from './contract.js';

const NOW = Date.UTC(2026, 10, 15, 12);
const TTL = 60_000;

/** A holder's side of the protocol, minimal: its last stored state and the next write. */
class Holder {
  state: HolderState;
  constructor(private readonly store: Store, readonly key: string, holder = `inst_${randomBytes(3).toString('hex')}.1`) {
    this.state = { holder, seq: 0, nonce: '', granted: 0, returned: 0, used: 0, armed: 0, expiresAt: NOW + TTL };
  }

  next(change: Partial<HolderState> = {}): HolderState {
    return { ...this.state, seq: this.state.seq + 1, nonce: randomBytes(6).toString('hex'), ...change };
  }

  async write(op: HolderWrite, change: Partial<HolderState> = {}, state = this.next(change)): Promise<HolderOutcome> {
    const out = await this.store.writeHolder(this.key, state, op);
    if (out.kind === 'written') this.state = out.state;
    return out;
  }

  claim(limit: number, min: number, want: number, change: Partial<HolderState> = {}, now = NOW): Promise<HolderOutcome> {
    return this.write({ op: 'claim', limit, min, want, now }, change);
  }
}

const granted = (o: HolderOutcome): number => (o.kind === 'written' ? o.state.granted : 0);

export function leaseContract(test: TestFn, h: StoreHarness): void {
  const n = (title: string) => `${h.name}: ${title}`;

  test(n('claims grant between min and want, never past the limit; a claim that cannot have min gets nothing'), async (t) => {
    const store = await (await h.backend(t)).open();
    const key = `quota:${newId('org')}:2026-11`;
    const a = new Holder(store, key);
    const b = new Holder(store, key);
    t.like(await a.claim(10, 1, 4), { kind: 'written', outstanding: 4, state: { seq: 1, granted: 4 } });
    t.like(await b.claim(10, 1, 4), { kind: 'written', outstanding: 8 });
    t.like(await a.claim(10, 1, 4), { kind: 'written', outstanding: 10, state: { seq: 2, granted: 6 } }, 'only 2 were left');
    t.deepEqual(await b.claim(10, 1, 4), { kind: 'refused', outstanding: 10 });
    t.is(b.state.seq, 1, 'a refused claim writes nothing');
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 10, used: 0, held: 10 });
    // Keys are independent; a claim's armed is never more than it holds.
    const other = new Holder(store, `token:${newId('tok')}`);
    t.like(await other.claim(3, 1, 5, { armed: 99 }), { kind: 'written', state: { granted: 3, armed: 3 } });
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 10, used: 0, held: 10 });
    // All or nothing from min (a spend reservation): 0 left here, so even 1 is refused.
    t.is((await a.claim(10, 1, 1)).kind, 'refused');
  });

  test(n('a write lands only on the seq before it: a retry of one that landed is written, another attempt of its seq conflicts'), async (t) => {
    const store = await (await h.backend(t)).open();
    const key = `spend:tok:${newId('tok')}`;
    const a = new Holder(store, key);
    const first = a.next({ armed: 5 });
    t.like(await a.write({ op: 'claim', limit: 100, min: 10, want: 10, now: NOW }, {}, first), { kind: 'written', state: { granted: 10, armed: 5 } });
    // The same write again (its answer was lost): written, nothing granted twice.
    t.like(await store.writeHolder(key, first, { op: 'claim', limit: 100, min: 10, want: 10, now: NOW }), { kind: 'written', state: { seq: 1, granted: 10 } });
    t.is((await store.leaseLedger(key, NOW)).outstanding, 10);
    // Another attempt of seq 1 (a different nonce) finds seq 1 stored: a conflict naming it.
    const rival = { ...first, nonce: 'other' };
    t.like(await store.writeHolder(key, rival, { op: 'report' }), { kind: 'conflict', current: { seq: 1, nonce: first.nonce } });
    t.like(await a.write({ op: 'report' }, { used: 3, armed: 7 }), { kind: 'written', state: { seq: 2, used: 3, armed: 7 } });
    t.like(await store.writeHolder(key, { ...first, seq: 2, nonce: 'late' }, { op: 'report' }), { kind: 'conflict', current: { seq: 2 } }, 'a late copy of seq 2 lands nowhere');
    t.like(await store.readHolder(key, a.state.holder), { seq: 2, used: 3, armed: 7, granted: 10 });
    t.is(await store.readHolder(key, 'nobody.1'), undefined);
    t.like(await store.writeHolder(key, { ...a.state, holder: 'nobody.1', seq: 5 }, { op: 'report' }), { kind: 'conflict', current: undefined }, 'no such holder');
  });

  test(n('release and retire hand units back; used and armed stay counted; the ledger adds up'), async (t) => {
    const store = await (await h.backend(t)).open();
    const key = `quota:${newId('org')}:2026-11`;
    const a = new Holder(store, key);
    const b = new Holder(store, key);
    await a.claim(20, 1, 12);
    await b.claim(20, 1, 8);
    t.like(await a.write({ op: 'release', units: 4 }, { returned: 4, used: 2, armed: 1 }), { kind: 'written', state: { returned: 4 } });
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 16, used: 2, held: 14 });
    t.like(await b.claim(20, 1, 100), { kind: 'written', outstanding: 20, state: { granted: 12 } }, 'the 4 returned, then what was left');
    // Retire: idle (granted − returned − used − armed) goes back; used and armed stay out.
    t.like(await a.write({ op: 'retire' }, { used: 3, armed: 2 }), { kind: 'written' });
    t.is(await store.readHolder(key, a.state.holder), undefined);
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 17, used: 5, held: 12 });
    t.like(await a.write({ op: 'retire' }, { used: 3, armed: 2 }), { kind: 'written' }, 'a retire retried after it landed');
    t.like(await a.write({ op: 'report' }), { kind: 'conflict', current: undefined }, 'gone');
  });

  test(n('an expired holder is reclaimed: its idle units back, its used and armed units charged; live holders stay'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const key = `spend:org:${newId('org')}:2026-11`;
    const dead = new Holder(s1, key);
    const live = new Holder(s2, key);
    await dead.claim(1000, 1, 600, { expiresAt: NOW + 1000, used: 0, armed: 0 });
    await dead.write({ op: 'report' }, { used: 100, armed: 150, expiresAt: NOW + 1000 });
    await live.claim(1000, 1, 300, { expiresAt: NOW + 10_000 });
    t.deepEqual(await s2.leaseLedger(key, NOW), { outstanding: 900, used: 100, held: 800 });
    t.is(await s2.reclaimExpired(key, NOW + 999), 0, 'not expired yet');
    // A claim that does not fit reclaims first: 350 idle come back, 250 stay charged.
    t.like(await live.claim(1000, 400, 400, { expiresAt: NOW + 10_000 }, NOW + 2000), { kind: 'written', state: { granted: 700 } });
    const ledger = await s2.leaseLedger(key, NOW + 2000);
    t.deepEqual(ledger, { outstanding: 950, used: 250, held: 700 });
    t.is(await s1.readHolder(key, dead.state.holder), undefined);
    t.like(await dead.write({ op: 'report' }, { expiresAt: NOW + 60_000 }), { kind: 'conflict', current: undefined }, 'the reclaimed holder cannot come back');
    // The ledger reclaims by itself too.
    const idle = new Holder(s1, key);
    await idle.claim(1000, 1, 50, { expiresAt: NOW + 3000 });
    t.deepEqual(await s1.leaseLedger(key, NOW + 3001), { outstanding: 950, used: 250, held: 700 });
    t.is(await s2.reclaimExpired(key, NOW + 3001), 0, 'once');
  });

  test(n('a rolling pool (tpm:): an expired holder is reclaimed only a window (60 s) after its expiry, then whole, armed units too'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    const key = `tpm:tok:${newId('tok')}`;
    const dead = new Holder(s1, key);
    const live = new Holder(s2, key);
    await dead.claim(1000, 1, 600, { expiresAt: NOW + 1000, used: 0, armed: 0 });
    await dead.write({ op: 'report' }, { armed: 450, expiresAt: NOW + 1000 });
    await live.claim(1000, 1, 300, { expiresAt: NOW + 120_000 });
    // Expired, but what it armed may have been used in the last 60 s: not reclaimed, and a claim does not fit.
    t.is(await s2.reclaimExpired(key, NOW + 1001), 0, 'expired a moment ago: kept');
    t.like(await live.claim(1000, 400, 400, { expiresAt: NOW + 120_000 }, NOW + 60_999), { kind: 'refused' }, 'a window after its expiry not yet over');
    t.is(await s1.readHolder(key, dead.state.holder) !== undefined, true);
    // A window after its expiry, everything it held comes back, armed units included.
    t.like(await live.claim(1000, 400, 700, { expiresAt: NOW + 120_000 }, NOW + 61_001), { kind: 'written', state: { granted: 1000 } });
    t.deepEqual(await s2.leaseLedger(key, NOW + 61_001), { outstanding: 1000, used: 0, held: 1000 });
    t.is(await s1.readHolder(key, dead.state.holder), undefined);
  });

  test(n('a claim by a holder past its expiry that reclaims holders reclaims it too: a conflict (gone), its units counted back once'), async (t) => {
    const backend = await h.backend(t);
    const [s1, s2] = [await backend.open(), await backend.open()];
    for (const key of [`spend:org:${newId('org')}:2026-11`, `tpm:tok:${newId('tok')}`]) {
      const late = new Holder(s1, key);
      const other = new Holder(s2, key);
      await late.claim(100, 1, 60, { expiresAt: NOW + 1000, armed: 0 });
      await other.claim(100, 1, 40, { expiresAt: NOW + 500_000 });
      // Long past its expiry (and a rolling pool's window), it claims again: the pool is short, so expired holders go first, itself among them.
      t.like(await late.claim(100, 10, 10, { expiresAt: NOW + 500_000 }, NOW + 100_000), { kind: 'conflict', current: undefined }, key);
      t.is(await s1.readHolder(key, late.state.holder), undefined);
      t.deepEqual(await s2.leaseLedger(key, NOW + 100_000), { outstanding: 40, used: 0, held: 40 }, `${key}: its 60 back once, nothing granted to a gone holder`);
    }
  });

  test(n('chargeLease counts units with no holder, whatever the limit'), async (t) => {
    const store = await (await h.backend(t)).open();
    const key = `spend:org:${newId('org')}:2026-11`;
    await store.chargeLease(key, 700);
    await store.chargeLease(key, 0);
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 700, used: 700, held: 0 });
    const a = new Holder(store, key);
    t.like(await a.claim(1000, 1, 1000), { kind: 'written', state: { granted: 300 } });
    await store.chargeLease(key, 50);
    t.deepEqual(await store.leaseLedger(key, NOW), { outstanding: 1050, used: 750, held: 300 });
  });

  test(n('claims from 3 instances at once never pass the limit and reach it exactly; units handed back are claimed again whole'), async (t) => {
    const backend = await h.backend(t);
    const stores = [await backend.open(), await backend.open(), await backend.open()];
    const key = `quota:${newId('org')}:2026-11`;
    const limit = 100;
    const holders = Array.from({ length: 45 }, (_, i) => new Holder(stores[i % 3]!, key));
    const wants = holders.map((_, i) => 1 + ((i * 7) % 9)); // sum ≫ limit
    const grants = await Promise.all(holders.map((hd, i) => hd.claim(limit, 1, wants[i]!)));
    for (const [i, g] of grants.entries()) t.true(granted(g) <= wants[i]!);
    t.is(grants.reduce((s, g) => s + granted(g), 0), limit);
    for (const s of stores) t.is((await s.leaseLedger(key, NOW)).outstanding, limit);
    // Two holders hand units back (as on SIGTERM); whole claims of at least their size take exactly those.
    const [x, y] = holders.filter((hd) => hd.state.granted >= 3).slice(0, 2);
    await Promise.all([x!.write({ op: 'release', units: 3 }, { returned: 3 }), y!.write({ op: 'release', units: 3 }, { returned: 3 })]);
    const again = await Promise.all(Array.from({ length: 6 }, (_, i) => new Holder(stores[i % 3]!, key).claim(limit, 2, 2)));
    t.is(again.filter((g) => g.kind === 'written').length, 3);
    t.is((await stores[0]!.leaseLedger(key, NOW)).outstanding, limit);
  });
}
