/**
 * The SQLite store's lease pools and holders. `leases` keeps one running total per key (`leased`: granted
 * out and not returned, the pool's outstanding); `lease_holders` one row per live holder with its state.
 * A holder write reads and writes both under one write lock (BEGIN IMMEDIATE, across every process on the
 * file): it lands only while the stored seq is the one before it (a retry of a write that landed finds its
 * own nonce and reports it written), a claim never takes the total past the limit (reclaiming expired
 * holders first when short), and ending a holder (retire, reclaim) puts its idle units back while its
 * used and armed units stay counted.
 */
import type { HolderOutcome, HolderState, HolderWrite, LeaseLedger, LeaseStore } from '../ports.js';
import { reclaimCutoff, unitsBackAtEnd } from '../lease-port.js';
import type { Row, SqliteDb } from './db.js';

const toState = (r: Row): HolderState => ({
  holder: r.holder as string, seq: r.seq as number, nonce: r.nonce as string, granted: r.granted as number,
  returned: r.returned as number, used: r.used as number, armed: r.armed as number, expiresAt: r.expires_at as number,
});


export class SqliteLeases implements LeaseStore {
  constructor(private readonly db: SqliteDb) {}

  writeHolder(key: string, state: HolderState, write: HolderWrite): Promise<HolderOutcome> {
    return this.db.guard(() => this.db.tx('lease', () => {
      const row = this.db.one('SELECT * FROM lease_holders WHERE key = ? AND holder = ?', key, state.holder);
      const current = row ? toState(row) : undefined;
      if (current && current.seq === state.seq && current.nonce === state.nonce) return { kind: 'written', state: current } as const;
      if (write.op === 'retire' && !current) return { kind: 'written', state } as const; // an earlier attempt landed
      if ((current?.seq ?? 0) !== state.seq - 1) return { kind: 'conflict', current } as const;
      const next: HolderState = { ...state };
      let outstanding: number | undefined;
      if (write.op === 'claim') {
        outstanding = this.outstanding(key);
        const need = Math.max(1, write.min);
        if (write.limit - outstanding < need && this.reclaim(key, write.now) > 0) {
          // The claimer itself may have been past its expiry: then it is gone like any other (as on Firestore).
          if (current && !this.db.one('SELECT 1 AS x FROM lease_holders WHERE key = ? AND holder = ?', key, state.holder)) return { kind: 'conflict', current: undefined } as const;
          outstanding = this.outstanding(key);
        }
        const grant = Math.max(0, Math.min(Math.max(need, write.want), write.limit - outstanding));
        if (grant < need) return { kind: 'refused', outstanding } as const;
        this.add(key, grant);
        outstanding += grant;
        next.granted += grant;
      } else if (write.op === 'release') {
        this.add(key, -write.units);
      }
      next.armed = Math.max(0, Math.min(next.armed, next.granted - next.returned - next.used));
      if (write.op === 'retire') {
        this.end(key, next);
      } else {
        this.db.run(
          `INSERT INTO lease_holders (key, holder, seq, nonce, granted, returned, used, armed, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(key, holder) DO UPDATE SET seq = excluded.seq, nonce = excluded.nonce, granted = excluded.granted, returned = excluded.returned,
             used = excluded.used, armed = excluded.armed, expires_at = excluded.expires_at`,
          key, next.holder, next.seq, next.nonce, next.granted, next.returned, next.used, next.armed, next.expiresAt,
        );
      }
      return outstanding === undefined ? { kind: 'written', state: next } as const : { kind: 'written', state: next, outstanding } as const;
    }));
  }

  readHolder(key: string, holder: string): Promise<HolderState | undefined> {
    return this.db.guard(() => {
      const row = this.db.one('SELECT * FROM lease_holders WHERE key = ? AND holder = ?', key, holder);
      return row ? toState(row) : undefined;
    });
  }

  reclaimExpired(key: string, now: number): Promise<number> {
    return this.db.guard(() => this.db.tx('lease', () => this.reclaim(key, now)));
  }

  leaseLedger(key: string, now: number): Promise<LeaseLedger> {
    return this.db.guard(() => this.db.tx('lease', () => {
      this.reclaim(key, now);
      const outstanding = this.outstanding(key);
      const held = (this.db.one('SELECT COALESCE(SUM(MAX(0, granted - returned - used)), 0) AS h FROM lease_holders WHERE key = ?', key)?.h as number) ?? 0;
      const shown = Math.min(held, outstanding);
      return { outstanding, used: outstanding - shown, held: shown };
    }));
  }

  chargeLease(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.db.guard(() => this.db.tx('lease', () => this.add(key, units)));
  }

  /** Inside a transaction: ends every holder of `key` expired at `now` (a rolling pool's, a window before). */
  private reclaim(key: string, now: number): number {
    const expired = this.db.all('SELECT * FROM lease_holders WHERE key = ? AND expires_at < ?', key, reclaimCutoff(key, now)).map(toState);
    for (const s of expired) this.end(key, s);
    return expired.length;
  }

  /** Inside a transaction: the holder's idle units back to the pool; its row gone. */
  private end(key: string, s: HolderState): void {
    const idle = unitsBackAtEnd(key, s);
    if (idle > 0) this.add(key, -idle);
    this.db.run('DELETE FROM lease_holders WHERE key = ? AND holder = ?', key, s.holder);
  }

  /** Adds to (or, negative, takes from) the pool's outstanding; never below zero, so a bad release cannot mint units. */
  private add(key: string, units: number): void {
    this.db.run('INSERT INTO leases (key, leased) VALUES (?, 0) ON CONFLICT(key) DO NOTHING', key);
    this.db.run('UPDATE leases SET leased = MAX(0, leased + ?) WHERE key = ?', units, key);
  }

  private outstanding(key: string): number {
    return (this.db.one('SELECT leased FROM leases WHERE key = ?', key)?.leased as number | undefined) ?? 0;
  }
}
