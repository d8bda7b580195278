/**
 * The SQLite store's quota leases (`leases`: one running total per key). A
 * grant reads and adds under one write lock, so the total granted never passes
 * the limit across every process on the file (`leaseAtLeast` grants nothing
 * unless at least its `min` fits); a release never takes a total below zero,
 * so a bad release cannot mint units.
 */
import type { LeaseStore } from '../ports.js';
import type { SqliteDb } from './db.js';

export class SqliteLeases implements LeaseStore {
  constructor(private readonly db: SqliteDb) {}

  lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    return this.leaseAtLeast(key, limit, 1, want);
  }

  leaseAtLeast(key: string, limit: number, min: number, want: number): Promise<{ granted: number; leased: number }> {
    return this.db.guard(() => this.db.tx(() => {
      const held = this.held(key);
      let grant = Math.max(0, Math.min(want, limit - held));
      if (grant < Math.max(1, min)) grant = 0;
      if (grant > 0) {
        this.db.run('INSERT INTO leases (key, leased) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET leased = leased + excluded.leased', key, grant);
      }
      return { granted: grant, leased: held + grant };
    }));
  }

  release(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.db.guard(() => {
      this.db.run('UPDATE leases SET leased = MAX(0, leased - ?) WHERE key = ?', units, key);
    });
  }

  leased(key: string): Promise<number> {
    return this.db.guard(() => this.held(key));
  }

  private held(key: string): number {
    return (this.db.one('SELECT leased FROM leases WHERE key = ?', key)?.leased as number | undefined) ?? 0;
  }
}
