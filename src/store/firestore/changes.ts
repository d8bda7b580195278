/**
 * The Firestore store's change feed. A mutation that caches must hear of
 * (revocation, deletion, rotation) adds a changes/{auto} document to its own
 * batch or transaction with `publish`, so the change commits with it or not
 * at all. Every process watches the collection with onSnapshot and delivers
 * each added document once; a watch that fails for good is opened again a
 * second later, replaying from just before the newest change it saw. Old
 * documents are swept in the background, at most once a minute per instance.
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

/** A batch or a transaction: both create documents that commit with the rest of their writes. */
interface Writes {
  create(ref: DocumentReference, data: DocumentData): unknown;
}

export class FirestoreChanges implements ChangeFeed {
  private readonly listeners = new Set<(c: Change) => void>();
  private unsubscribe: (() => void) | undefined;
  private watchRetry: NodeJS.Timeout | undefined;
  /** The current watch has delivered a snapshot and not failed since. */
  private live = false;
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
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  /**
   * Live from the first snapshot until the stream fails for good (not while it
   * is opened again). The client's own reconnects after transient faults are
   * not visible here.
   */
  isLive(): boolean {
    return this.live;
  }

  /** Drops every listener and the watch (the store is closing). */
  stop(): void {
    this.listeners.clear();
    this.stopWatching();
  }

  /** Listens to changes/ documents newer than `from`; every one added is delivered once. */
  private startWatching(from: number): void {
    let newest = from;
    this.unsubscribe = this.db.changes.where('at', '>', from).orderBy('at').onSnapshot(
      (snap) => {
        this.live = true;
        for (const ch of snap.docChanges()) {
          if (ch.type !== 'added' || this.seen.has(ch.doc.id)) continue;
          const at = ch.doc.get('at') as number;
          this.seen.set(ch.doc.id, at);
          if (at > newest) newest = at;
          const change: Change = { kind: ch.doc.get('kind'), id: ch.doc.get('id') };
          for (const l of [...this.listeners]) {
            try {
              l(change);
            } catch { /* a listener's bug must not stop the feed */ }
          }
        }
        // Forget delivered ids once they are older than anything a snapshot can still hold.
        if (this.seen.size > 1000) {
          const cutoff = Date.now() - CHANGE_RETENTION_MS - 60_000;
          for (const [id, at] of this.seen) if (at < cutoff) this.seen.delete(id);
        }
      },
      () => {
        // The stream failed for good (the client retries transient faults itself): open it again.
        this.live = false;
        this.unsubscribe = undefined;
        if (this.db.closed || this.listeners.size === 0) return;
        this.watchRetry = setTimeout(() => {
          this.watchRetry = undefined;
          if (!this.db.closed && this.listeners.size > 0 && !this.unsubscribe) this.startWatching(newest - CHANGE_LOOKBACK_MS);
        }, WATCH_RETRY_MS);
        this.watchRetry.unref();
      },
    );
  }

  private stopWatching(): void {
    this.live = false;
    if (this.watchRetry) clearTimeout(this.watchRetry);
    this.watchRetry = undefined;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    unsubscribe?.();
  }
}
