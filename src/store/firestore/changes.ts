/**
 * The Firestore store's change feed. A mutation that caches must hear of
 * (revocation, deletion, rotation) adds a changes/{auto} document to its own
 * batch or transaction with `publish`, so the change commits with it or not
 * at all. Every process watches the collection with onSnapshot and delivers
 * each added document once; a watch that fails for good is opened again a
 * second later, replaying from just before the newest change it saw. Old
 * documents are swept in the background, at most once a minute per instance.
 *
 * Liveness is measured, not assumed: a listener on a connection held silent
 * reports nothing, ever. While watching, the feed also polls every POLL_MS for
 * changes stamped after the last answered poll began (less an overlap), each
 * poll bounded by a deadline;
 * the feed is live only while a poll succeeded within LIVE_WITHIN_MS, so a
 * silent store makes it not live within a second, and caches then trust what
 * they hold one second at most. A poll also delivers what the listener missed.
 * Cost: one document read per poll while nothing changes (docs/operate/cloud-run.md, "Operating costs and settings").
 */
import type { DocumentData, DocumentReference, WriteBatch } from '@google-cloud/firestore';
import type { Change, ChangeFeed, ChangeKind } from '../ports.js';
import { BATCH_WRITES, Code, errCode, type FirestoreDb } from './db.js';

/** Change documents are needed only until every live watcher has seen them. */
const CHANGE_RETENTION_MS = 10 * 60_000;
/** How often one instance sweeps old change documents. */
const CHANGE_SWEEP_EVERY_MS = 60_000;
/** A new watcher also replays changes this old (harmless: invalidation is idempotent; covers small clock skew). */
const CHANGE_LOOKBACK_MS = 5_000;
/** A watch stream that failed for good is opened again after this delay. */
const WATCH_RETRY_MS = 1_000;
/** How often the feed polls for changes (its liveness measure and the listener's backstop). */
const POLL_MS = 400;
/** A poll gives up after this long (a silent connection). */
const POLL_DEADLINE_MS = 800;
/** Live while a poll succeeded this recently: the contract's one second. */
const LIVE_WITHIN_MS = 1_000;
/**
 * Polls still running in the client (past their deadline here) that hold a new one back: a slow store is
 * not sent ever more polls. One older than POLL_STALE_MS no longer counts (a connection that died silently).
 */
const POLLS_OUTSTANDING = 2;
const POLL_STALE_MS = 10_000;
/**
 * A poll reads changes stamped up to this long before the last answered poll began: a change is stamped
 * before its commit lands (under load, seconds before), and writers' clocks differ a little. A change is so
 * read again for a few seconds (delivered once: `seen`); with none, a poll costs one read.
 */
const POLL_OVERLAP_MS = 5_000;

/** A batch or a transaction: both create documents that commit with the rest of their writes. */
interface Writes {
  create(ref: DocumentReference, data: DocumentData): unknown;
}

export class FirestoreChanges implements ChangeFeed {
  private readonly listeners = new Set<(c: Change) => void>();
  private unsubscribe: (() => void) | undefined;
  private watchRetry: NodeJS.Timeout | undefined;
  private poller: NodeJS.Timeout | undefined;
  /** When each poll still running in the client began (performance.now()). */
  private readonly outstanding = new Set<number>();
  /** performance.now() of the last poll that succeeded (0: none yet). */
  private lastPollOk = 0;
  /** The newest change time delivered (by the listener or a poll): a reopened listener replays from just before it. */
  private newest = 0;
  /** Wall time the last answered poll began: the next reads changes stamped after it, less the overlap. */
  private polledFrom = 0;
  /** Change documents already delivered by the current watch (snapshots can repeat them). */
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;

  constructor(private readonly db: FirestoreDb) {}

  /** Adds the change to `writes` (the mutation's own batch or transaction). */
  publish(writes: Writes, kind: ChangeKind, id: string, now = Date.now()): void {
    writes.create(this.db.changes.doc(), { kind, id, at: now });
  }

  /** Commits a batch that carries a change, then sweeps old ones if it is time. */
  async commit(batch: WriteBatch): Promise<void> {
    await batch.commit();
    this.sweep();
  }

  /**
   * As `commit`, for a batch whose writes carry an exists precondition (update, delete with `exists`):
   * false when the document was gone by then (another caller deleted it first), nothing written.
   */
  async commitUnlessGone(batch: WriteBatch): Promise<boolean> {
    try {
      await this.commit(batch);
      return true;
    } catch (err) {
      if (errCode(err) === Code.NOT_FOUND) return false;
      throw err;
    }
  }

  /** Deletes change documents older than the retention, at most once a minute per instance, in the background. */
  sweep(now = Date.now()): void {
    if (now - this.lastSweep < CHANGE_SWEEP_EVERY_MS || this.db.closed) return;
    this.lastSweep = now;
    void this.db.track((async () => {
      const old = await this.db.changes.where('at', '<', now - CHANGE_RETENTION_MS).orderBy('at').limit(BATCH_WRITES).get();
      if (old.empty) return;
      const batch = this.db.client.batch();
      for (const d of old.docs) batch.delete(d.ref);
      await batch.commit();
    })()).catch(() => { /* best effort: the next sweep retries */ });
  }

  watch(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    if (!this.unsubscribe && !this.watchRetry && !this.db.closed) this.startWatching(Date.now() - CHANGE_LOOKBACK_MS);
    if (!this.poller && !this.db.closed) {
      this.newest = Math.max(this.newest, Date.now() - CHANGE_LOOKBACK_MS);
      this.polledFrom = Date.now() - CHANGE_LOOKBACK_MS;
      this.poller = setInterval(() => void this.poll(), POLL_MS);
      this.poller.unref();
      void this.poll();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  /** Live while watching and a poll succeeded within the last second (see the header). */
  isLive(): boolean {
    return this.poller !== undefined && this.lastPollOk > 0 && performance.now() - this.lastPollOk <= LIVE_WITHIN_MS;
  }

  /** One bounded poll for changes since the last answered one; a failure only leaves the feed not live. */
  private async poll(): Promise<void> {
    const started = performance.now();
    let running = 0;
    for (const at of this.outstanding) if (started - at < POLL_STALE_MS) running++;
    if (running >= POLLS_OUTSTANDING || this.db.closed) return;
    const wallStarted = Date.now();
    this.outstanding.add(started);
    const query = this.db.track(this.db.changes.where('at', '>', this.polledFrom - POLL_OVERLAP_MS).orderBy('at').limit(BATCH_WRITES).get());
    void query.then(() => this.outstanding.delete(started), () => this.outstanding.delete(started));
    try {
      const snap = await this.db.guard(() => query, POLL_DEADLINE_MS);
      this.lastPollOk = started;
      // A full page: the next poll goes on from its last change (the overlap is subtracted again).
      const full = snap.size === BATCH_WRITES;
      this.polledFrom = Math.max(this.polledFrom, full ? (snap.docs.at(-1)!.get('at') as number) + POLL_OVERLAP_MS : wallStarted);
      for (const d of snap.docs) this.deliver(d.id, d.get('at') as number, { kind: d.get('kind'), id: d.get('id') });
    } catch {
      // The store did not answer in time: not live (isLive), the next poll tries again.
    }
  }

  /** Hands a change to every listener, once per document whichever path brought it. */
  private deliver(docId: string, at: number, change: Change): void {
    if (this.seen.has(docId)) return;
    this.seen.set(docId, at);
    if (at > this.newest) this.newest = at;
    for (const l of [...this.listeners]) {
      try {
        l(change);
      } catch { /* a listener's bug must not stop the feed */ }
    }
    // Forget delivered ids once they are older than anything a snapshot or poll can still hold.
    if (this.seen.size > 1000) {
      const cutoff = Date.now() - CHANGE_RETENTION_MS - 60_000;
      for (const [id, t] of this.seen) if (t < cutoff) this.seen.delete(id);
    }
  }

  /** Drops every listener and the watch (the store is closing). */
  stop(): void {
    this.listeners.clear();
    this.stopWatching();
  }

  /** Listens to changes/ documents newer than `from`; every one added is delivered once. */
  private startWatching(from: number): void {
    this.unsubscribe = this.db.changes.where('at', '>', from).orderBy('at').onSnapshot(
      (snap) => {
        for (const ch of snap.docChanges()) {
          if (ch.type === 'added') this.deliver(ch.doc.id, ch.doc.get('at') as number, { kind: ch.doc.get('kind'), id: ch.doc.get('id') });
        }
      },
      () => {
        // The stream failed for good (the client retries transient faults itself): open it again.
        this.unsubscribe = undefined;
        if (this.db.closed || this.listeners.size === 0) return;
        this.watchRetry = setTimeout(() => {
          this.watchRetry = undefined;
          if (!this.db.closed && this.listeners.size > 0 && !this.unsubscribe) this.startWatching(this.newest - CHANGE_LOOKBACK_MS);
        }, WATCH_RETRY_MS);
        this.watchRetry.unref();
      },
    );
  }

  private stopWatching(): void {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    this.lastPollOk = 0;
    if (this.watchRetry) clearTimeout(this.watchRetry);
    this.watchRetry = undefined;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    unsubscribe?.();
  }
}
