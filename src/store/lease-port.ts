/**
 * The lease port (re-exported by ports.ts, where the other ports are): bounded pools held by instances,
 * shared by every limit that leases (quota, max_requests, spend caps; concurrency slots and tokens per
 * minute next). Adapters: sqlite/leases.ts, firestore/leases.ts; test/store/contract-leases.ts checks both.
 */

/**
 * Leases of a bounded pool under a key (an org's monthly quota, a token's max_requests, a spend cap in µ$),
 * held by holders: one instance's incarnation of one counter. The pool never grants past its limit.
 * A holder writes its whole state each time (HolderState, seq n+1 replacing n: a write of seq n lands only
 * while seq n−1 is stored, so of two writes with one seq at most one lands, and a late copy of an old write
 * never lands after a newer one). What a holder holds (granted − returned − used) splits into `armed`
 * (what it may consume without writing again: in-flight reservations and a little headroom) and idle.
 * A holder not renewed by `expiresAt` is reclaimed by anyone: its idle units go back to the pool, its
 * armed units are charged as used (it may have spent them), so nothing it forwarded can pass the limit.
 * The pool's `outstanding` (granted out, not returned) = live holders' (granted − returned) + everything
 * consumed by holders gone; so used = outstanding − held, and limit − outstanding is what is left.
 */
export interface HolderState {
  /** The holder: one instance's incarnation of one counter (`<instance>.<n>`). */
  holder: string;
  /** 1 on the first write (always a claim), then +1 per write. */
  seq: number;
  /** Random per write attempt: tells a retried write's outcome apart when it is read back. */
  nonce: string;
  /** Units taken from the pool, ever (the store sets it on a claim; other writes keep the stored one). */
  granted: number;
  /** Units handed back to the pool, ever. */
  returned: number;
  /** Units consumed for good. */
  used: number;
  /** Units the holder may consume beyond `used` before its next write; charged as used if it dies. */
  armed: number;
  /** Epoch ms: the holder's wall clock at the write plus the lease TTL; afterwards anyone may reclaim it. */
  expiresAt: number;
}

export type HolderWrite =
  /** State only: renewal, arming more of what is held, recording what was used. */
  | { op: 'report' }
  /**
   * Takes between `min` and `want` units from the pool (none when fewer than `min` fit) into `granted`;
   * when short, first reclaims holders expired at `now` (the caller's clock: the store keeps none).
   */
  | { op: 'claim'; limit: number; min: number; want: number; now: number }
  /** Hands `units` back to the pool (`state.returned` already counts them). */
  | { op: 'release'; units: number }
  /** Ends the holder: its idle units back to the pool, `used` + `armed` stay consumed. */
  | { op: 'retire' };

export type HolderOutcome =
  /** The write landed (now or by an earlier attempt with this nonce); `state` as stored; a claim's `outstanding`: the pool's total out. */
  | { kind: 'written'; state: HolderState; outstanding?: number }
  /** A claim that did not fit (after reclaiming expired holders): nothing written. */
  | { kind: 'refused'; outstanding: number }
  /** `seq − 1` is not what is stored: `current` is (undefined: the holder is gone, reclaimed or retired). */
  | { kind: 'conflict'; current: HolderState | undefined };

/** A pool as the usage API shows it: used + held = outstanding ≤ limit. */
export interface LeaseLedger {
  outstanding: number;
  /** Consumed: by holders gone (reclaimed, retired) and as last written by live ones. */
  used: number;
  /** Held by live holders (armed and idle), not yet used. */
  held: number;
}

export interface LeaseStore {
  /** One holder write, atomic with its effect on the pool; see HolderWrite and HolderOutcome. */
  writeHolder(key: string, state: HolderState, write: HolderWrite): Promise<HolderOutcome>;
  /** What is stored for `holder` now (resolves a write whose outcome was unknown). */
  readHolder(key: string, holder: string): Promise<HolderState | undefined>;
  /** Reclaims every holder of `key` whose expiresAt is before `now` (idle back, armed charged); how many. */
  reclaimExpired(key: string, now: number): Promise<number>;
  /** The pool's totals, after reclaiming expired holders. */
  leaseLedger(key: string, now: number): Promise<LeaseLedger>;
  /** Counts `units` as consumed with no holder (spend made before a cap existed), whatever the limit. */
  chargeLease(key: string, units: number): Promise<void>;
}

/** A rolling pool (`tpm:…`, tokens per minute): units count against it for this long after they were used. */
export const ROLLING_WINDOW_MS = 60_000;

/** Whether `key` names a rolling pool: nothing in it is used for good, everything comes back a window later. */
export function isRollingPool(key: string): boolean {
  return key.startsWith('tpm:');
}

/**
 * What goes back to the pool when a holder ends (retired or reclaimed): its idle units, its armed ones
 * staying charged (it may have spent them). Two kinds of pool are the exception, nothing in them being used
 * for good: concurrency slots (`slots:…`), whose dead holder's connections died with it, and rolling pools
 * (`tpm:…`), whose dead holder is reclaimed only a window after its expiry (reclaimCutoff), when whatever it
 * may have used has left the window. Both come back whole. A live rolling holder retires only with nothing
 * in its window (lease-keeper.ts).
 */
export function unitsBackAtEnd(key: string, s: Pick<HolderState, 'granted' | 'returned' | 'used' | 'armed'>): number {
  const held = s.granted - s.returned - s.used;
  return Math.max(0, key.startsWith('slots:') || isRollingPool(key) ? held : held - s.armed);
}

/** Holders of `key` that expired before the returned time may be reclaimed at `now`: a rolling pool's a window later. */
export function reclaimCutoff(key: string, now: number): number {
  return isRollingPool(key) ? now - ROLLING_WINDOW_MS : now;
}
