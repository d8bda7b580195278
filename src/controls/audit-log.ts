/**
 * The audit trail. Two kinds of record, so a flood of one can never crowd out
 * the other:
 *
 * - Changes (admin and CLI actions, success or failure) are appended to the
 *   store before `record` resolves: callers await it before they answer. If
 *   the store refuses, the change has already been made, so the caller still
 *   answers (an error would invite a retry that makes the change twice); the
 *   record is logged in full at ERROR (the log is its copy) and retried from
 *   memory every second until the store takes it. Never dropped silently.
 * - Refusals (outcome `denied`) are aggregated per organisation, action,
 *   address and minute with a `count` (refusal-aggregator.ts) and flushed
 *   each second as one batch with an id of its own (this instance and a
 *   sequence number): a flood costs a few writes, not one per request. A
 *   batch that failed is sent again as it was (what was counted since waits
 *   for the next), so one that landed and timed out never counts twice.
 *
 * Every record expires KEYWARD_AUDIT_RETENTION_DAYS after its time: it is no
 * longer listed, and the store deletes it (SQLite: here, at most once an hour
 * in bounded batches; Firestore: its TTL policy on `expire_at`).
 */
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import type { Config } from '../settings/config.js';
import type { Logger } from '../log.js';
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Errors } from '../errors.js';
import { newId } from '../ids.js';
import { BackgroundFlush } from '../accounting/background-flush.js';
import { Instance } from '../accounting/instance.js';
import { RefusalAggregator, type AuditEntry } from './refusal-aggregator.js';

export type { AuditEntry } from './refusal-aggregator.js';

const FLUSH_MS = 1000;
const DAY_MS = 86_400_000;
/** Unstored changes kept in memory for retry; past it the ERROR log line is the record's only copy (and says so). */
const MAX_UNSAVED = 10_000;
/** Expired records are deleted at most once an hour, the first time a minute after start. */
const PURGE_FIRST_MS = 60_000;
const PURGE_EVERY_MS = 3_600_000;
/** Each delete statement takes at most this many rows (a short write lock); one purge at most this many statements. */
const PURGE_BATCH = 2_000;
const PURGE_MAX_BATCHES = 100;

@injectable()
export class AuditLog {
  private readonly retentionMs: number;
  private readonly refusals: RefusalAggregator;
  private readonly refusalFlush: BackgroundFlush<{ id: string; records: AuditRecord[] }>;
  /** A refusal batch whose write failed: sent again as it was before anything newer. */
  private failedBatch: { id: string; records: AuditRecord[] } | undefined;
  private batches = 0;
  private unsaved: AuditRecord[] = [];
  private readonly retryFlush: BackgroundFlush<AuditRecord[]>;
  /** Stops the purge timers (the first run's, then the hourly one). */
  private stopPurge: (() => void) | undefined;
  private closed = false;

  constructor(
    @inject(Symbols.AuditStore) private readonly store: AuditStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.Config) config: Config,
    @inject(Symbols.Timers) timers: Timers,
    @inject(Instance) instance: Instance,
  ) {
    this.retentionMs = config.auditRetentionDays * DAY_MS;
    this.refusals = new RefusalAggregator(this.retentionMs);
    this.refusalFlush = new BackgroundFlush({
      take: () => {
        const failed = this.failedBatch;
        this.failedBatch = undefined;
        // What was counted since waits for the next flush: armed here, as nothing else may arm it.
        if (failed && this.refusals.size > 0) this.refusalFlush.schedule();
        if (failed) return failed;
        const { records, folded } = this.refusals.take();
        if (folded > 0) log.warn({ folded, keys: records.length }, 'audit refusals from too many addresses at once: folded into catch-all records (address *)');
        return records.length > 0 ? { id: `${instance.id}.${++this.batches}`, records } : undefined;
      },
      write: (batch) => this.store.addAuditCounts(batch.id, batch.records),
      restore: (batch, err) => {
        log.warn({ err, records: batch.records.length }, 'audit refusal counts not stored; will retry');
        this.failedBatch = batch;
      },
    }, FLUSH_MS, timers);
    this.retryFlush = new BackgroundFlush({
      take: () => {
        if (this.unsaved.length === 0) return undefined;
        const batch = this.unsaved;
        this.unsaved = [];
        return batch;
      },
      write: async (batch) => {
        await this.store.appendAudit(batch);
        log.warn({ records: batch.length }, 'audit records stored on retry');
      },
      restore: (batch, err) => {
        log.warn({ err, records: batch.length }, 'audit records still not stored; will retry');
        this.unsaved = batch.concat(this.unsaved);
      },
    }, FLUSH_MS, timers);
    this.stopPurge = timers.after(PURGE_FIRST_MS, () => {
      this.stopPurge = timers.every(PURGE_EVERY_MS, () => this.purgeExpired());
      return this.purgeExpired();
    });
  }

  /**
   * A refusal (outcome `denied`) is counted and returns at once. Anything else
   * is a change: stored when the promise resolves (or logged and queued for
   * retry, see above). Never rejects.
   */
  async record(entry: AuditEntry): Promise<void> {
    if (entry.outcome === 'denied') {
      this.refused(entry);
      return;
    }
    const now = this.clock.now();
    const record: AuditRecord = { id: newId('evt'), time: now, ...entry, count: 1, expireAt: now + this.retentionMs };
    try {
      await this.store.appendAudit([record]);
    } catch (err) {
      this.keepForRetry(record, err);
    }
  }

  /** Counts a refusal into its (org, action, address, minute) record. */
  refused(entry: AuditEntry): void {
    this.refusals.add(entry, this.clock.now());
    this.refusalFlush.schedule();
  }

  private keepForRetry(record: AuditRecord, err: unknown): void {
    if (this.unsaved.length >= MAX_UNSAVED) {
      this.log.error({ err, audit: record }, 'audit record not stored and the retry queue is full: this log line is its only copy');
      return;
    }
    this.log.error({ err, audit: record }, 'audit record not stored (the change was made); retrying every second');
    this.unsaved.push(record);
    this.retryFlush.schedule();
  }

  /** Writes pending refusal counts and retries unstored changes now. */
  async flush(): Promise<void> {
    await Promise.all([this.refusalFlush.flush(), this.retryFlush.flush()]);
  }

  async list(orgId: string, page: PageQuery): Promise<Page<AuditRecord>> {
    await this.flush();
    const p = await this.store.listAudit(orgId, page, this.clock.now());
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no audit record of this organisation.', 'starting_after');
    return p;
  }

  /** Deletes expired records in bounded batches (a no-op where the store expires them itself); how many it deleted. */
  async purgeExpired(): Promise<number> {
    let deleted = 0;
    try {
      for (let i = 0; i < PURGE_MAX_BATCHES && !this.closed; i++) {
        const n = await this.store.deleteExpiredAudit(this.clock.now(), PURGE_BATCH);
        deleted += n;
        if (n < PURGE_BATCH) break;
        await yieldToEvents(); // let requests run between batches
      }
    } catch (err) {
      this.log.warn({ err, deleted }, 'deleting expired audit records failed; the next hourly run retries');
    }
    if (deleted > 0) this.log.info({ deleted }, 'expired audit records deleted');
    return deleted;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopPurge?.();
    this.stopPurge = undefined;
    await Promise.all([this.refusalFlush.close(), this.retryFlush.close()]);
    // The last flush may have been a failed batch sent again alone: what was counted since goes now.
    if (!this.failedBatch && this.refusals.size > 0) await this.refusalFlush.flush();
    const counts = [...(this.failedBatch?.records ?? []), ...this.refusals.take().records];
    if (counts.length > 0) this.log.error({ audit: counts }, 'audit refusal counts not stored at shutdown: this log line is their only copy');
    if (this.unsaved.length > 0) this.log.error({ audit: this.unsaved }, 'audit records not stored at shutdown: this log line is their only copy');
  }
}
