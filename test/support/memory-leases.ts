/**
 * An in-memory LeaseStore granting as the real adapters do (never past the limit; `leaseAtLeast` all of
 * `min` or nothing), counting calls, with a switch to make release fail. For ledger unit tests.
 */
import type { LeaseStore } from '../../src/store/ports.js';

export class MemoryLeases implements LeaseStore {
  readonly out = new Map<string, number>();
  leaseCalls = 0;
  releaseCalls = 0;
  failRelease = false;
  async lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    return this.leaseAtLeast(key, limit, 1, want);
  }
  async leaseAtLeast(key: string, limit: number, min: number, want: number): Promise<{ granted: number; leased: number }> {
    this.leaseCalls++;
    const cur = this.out.get(key) ?? 0;
    let granted = Math.max(0, Math.min(want, limit - cur));
    if (granted < Math.max(1, min)) granted = 0;
    this.out.set(key, cur + granted);
    return { granted, leased: cur + granted };
  }
  async release(key: string, units: number): Promise<void> {
    this.releaseCalls++;
    if (this.failRelease) throw new Error('store down');
    this.out.set(key, Math.max(0, (this.out.get(key) ?? 0) - units));
  }
  async leased(key: string): Promise<number> {
    return this.out.get(key) ?? 0;
  }
}
