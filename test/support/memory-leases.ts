/**
 * An in-memory LeaseStore with the adapters' semantics (the contract suite checks the real ones alike):
 * holder writes land only on seq − 1 (a retry with the same nonce reports written), claims never pass the
 * limit (reclaiming holders expired at the caller's `now` when short), ending a holder returns its idle
 * units. Counts calls, and can fail writes before they land (`failWrites = 'before'`) or after
 * (`'after'`: the write lands, then the call rejects, as a timeout would). For ledger unit tests.
 */
import { BackendUnavailable } from '../../src/errors.js';
import type { HolderOutcome, HolderState, HolderWrite, LeaseLedger, LeaseStore } from '../../src/store/ports.js';
import { reclaimCutoff, unitsBackAtEnd } from '../../src/store/lease-port.js';

interface Pool {
  outstanding: number;
  holders: Map<string, HolderState>;
}


export class MemoryLeases implements LeaseStore {
  private readonly pools = new Map<string, Pool>();
  writeCalls = 0;
  claimCalls = 0;
  failWrites: 'before' | 'after' | undefined;

  private pool(key: string): Pool {
    let p = this.pools.get(key);
    if (!p) this.pools.set(key, (p = { outstanding: 0, holders: new Map() }));
    return p;
  }

  async writeHolder(key: string, state: HolderState, write: HolderWrite): Promise<HolderOutcome> {
    this.writeCalls++;
    if (write.op === 'claim') this.claimCalls++;
    if (this.failWrites === 'before') throw new BackendUnavailable('memory');
    const out = this.apply(key, state, write);
    if (this.failWrites === 'after') throw new BackendUnavailable('memory');
    return out;
  }

  private apply(key: string, state: HolderState, write: HolderWrite): HolderOutcome {
    const p = this.pool(key);
    const current = p.holders.get(state.holder);
    if (current && current.seq === state.seq && current.nonce === state.nonce) return { kind: 'written', state: { ...current } };
    if (write.op === 'retire' && !current) return { kind: 'written', state };
    if ((current?.seq ?? 0) !== state.seq - 1) return { kind: 'conflict', current: current && { ...current } };
    const next = { ...state };
    let outstanding: number | undefined;
    if (write.op === 'claim') {
      const need = Math.max(1, write.min);
      if (write.limit - p.outstanding < need) this.reclaim(key, p, write.now);
      if (current && !p.holders.has(state.holder)) return { kind: 'conflict', current: undefined }; // it reclaimed itself
      const grant = Math.max(0, Math.min(Math.max(need, write.want), write.limit - p.outstanding));
      if (grant < need) return { kind: 'refused', outstanding: p.outstanding };
      p.outstanding += grant;
      outstanding = p.outstanding;
      next.granted += grant;
    } else if (write.op === 'release') {
      p.outstanding = Math.max(0, p.outstanding - write.units);
    }
    next.armed = Math.max(0, Math.min(next.armed, next.granted - next.returned - next.used));
    if (write.op === 'retire') {
      p.outstanding = Math.max(0, p.outstanding - unitsBackAtEnd(key, next));
      p.holders.delete(next.holder);
    } else {
      p.holders.set(next.holder, next);
    }
    return outstanding === undefined ? { kind: 'written', state: { ...next } } : { kind: 'written', state: { ...next }, outstanding };
  }

  private reclaim(key: string, p: Pool, now: number): number {
    let n = 0;
    const cutoff = reclaimCutoff(key, now);
    for (const s of [...p.holders.values()]) {
      if (s.expiresAt >= cutoff) continue;
      p.outstanding = Math.max(0, p.outstanding - unitsBackAtEnd(key, s));
      p.holders.delete(s.holder);
      n++;
    }
    return n;
  }

  async readHolder(key: string, holder: string): Promise<HolderState | undefined> {
    const s = this.pool(key).holders.get(holder);
    return s && { ...s };
  }

  async reclaimExpired(key: string, now: number): Promise<number> {
    return this.reclaim(key, this.pool(key), now);
  }

  async leaseLedger(key: string, now: number): Promise<LeaseLedger> {
    const p = this.pool(key);
    this.reclaim(key, p, now);
    const held = Math.min(p.outstanding, [...p.holders.values()].reduce((n, s) => n + Math.max(0, s.granted - s.returned - s.used), 0));
    return { outstanding: p.outstanding, used: p.outstanding - held, held };
  }

  async chargeLease(key: string, units: number): Promise<void> {
    if (units > 0) this.pool(key).outstanding += units;
  }

  /** The pool's units out (every holder, live or gone), without reclaiming anything. */
  outstanding(key: string): number {
    return this.pools.get(key)?.outstanding ?? 0;
  }
}
