/**
 * The SQLite store's change feed. A mutation that caches must hear of
 * (revocation, deletion, rotation) writes a `changes` row with `publishChange`
 * inside its own transaction, so the change commits with it or not at all.
 * Every process on the file (the CLI's included) polls the table five times a
 * second and delivers each row once, in order; rows older than ten minutes are
 * dropped by the writers. The feed is live while its polls succeed; `pollFault`
 * lets tests fail them with the store otherwise up. The poll's timer is the
 * injected one (clock.ts).
 */
import { systemTimers, type Timers } from '../../clock.js';
import type { Change, ChangeFeed } from '../ports.js';
import type { Row, SqliteDb } from './db.js';

/** How often other processes' changes are picked up (the contract allows one second). */
const CHANGE_POLL_MS = 200;
/** Change rows are only needed until every live process has polled them. */
const CHANGE_RETENTION_MS = 10 * 60_000;
/** The feed is live while its last poll succeeded this recently (two intervals, plus timer slack). */
const LIVE_WITHIN_MS = 2 * CHANGE_POLL_MS + 100;

/** Records a change; call it inside the mutation's transaction (`db.tx`). */
export function publishChange(db: SqliteDb, kind: Change['kind'], id: string, now = Date.now()): void {
  db.run('INSERT INTO changes (kind, id, at) VALUES (?, ?, ?)', kind, id, now);
  db.run('DELETE FROM changes WHERE at < ?', now - CHANGE_RETENTION_MS);
}

export class SqliteChanges implements ChangeFeed {
  private readonly listeners = new Set<(c: Change) => void>();
  /** The newest row delivered: a new feed starts after what the file already holds. */
  private lastSeq: number;
  /** Stops the polling (undefined: not polling). */
  private poller: (() => void) | undefined;
  /** When a poll last read the changes table, on the timers' monotonic clock (undefined: never). */
  private lastPollOk: number | undefined;
  /** Fault injection for tests: while set, every change poll fails with it (a feed outage, the store otherwise up). */
  pollFault: Error | undefined;

  constructor(private readonly db: SqliteDb, private readonly timers: Timers = systemTimers) {
    this.lastSeq = (db.one('SELECT COALESCE(MAX(seq), 0) AS s FROM changes')?.s as number) ?? 0;
  }

  watch(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    this.poller ??= this.timers.every(CHANGE_POLL_MS, () => this.poll());
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  isLive(): boolean {
    return this.poller !== undefined && this.lastPollOk !== undefined && this.timers.elapsed() - this.lastPollOk <= LIVE_WITHIN_MS;
  }

  /** Stops polling (the store is closing). */
  stop(): void {
    this.poller?.();
    this.poller = undefined;
  }

  private poll(): void {
    let rows: Row[];
    try {
      if (this.pollFault) throw this.pollFault;
      rows = this.db.all('SELECT seq, kind, id FROM changes WHERE seq > ? ORDER BY seq LIMIT 1000', this.lastSeq);
    } catch {
      return; // the store is down; /readyz says so, caches stop trusting what they hold, and the next poll retries
    }
    this.lastPollOk = this.timers.elapsed();
    for (const r of rows) {
      this.lastSeq = r.seq as number;
      const change = { kind: r.kind as Change['kind'], id: r.id as string };
      // Every listener hears every change: one that throws must not make the next miss a revocation.
      for (const l of this.listeners) {
        try {
          l(change);
        } catch { /* a listener's bug must not stop the feed */ }
      }
    }
  }
}
