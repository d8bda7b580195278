/**
 * The audit trail: every admin action, failed authentication and quota
 * refusal, appended to the store. Records are batched and flushed every
 * second (a flood of failed authentications must not become a store write per
 * request), and flushed before a read so a caller sees its own actions.
 */
import { inject, injectable } from 'tsyringe';
import { CreationTimes, type Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Errors } from '../errors.js';
import { newId } from './secrets.js';

const FLUSH_MS = 1000;
/** Beyond this many pending records, new ones are counted and dropped (and the drop is logged). */
const MAX_PENDING = 10_000;

export type AuditEntry = Omit<AuditRecord, 'id' | 'time'>;

@injectable()
export class AuditLog {
  private pending: AuditRecord[] = [];
  private dropped = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly times: CreationTimes;

  constructor(
    @inject(Symbols.AuditStore) private readonly store: AuditStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
  ) {
    this.times = new CreationTimes(clock);
  }

  record(entry: AuditEntry): void {
    if (this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push({ id: newId('evt'), time: this.times.next(), ...entry });
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, FLUSH_MS);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    if (this.dropped > 0) {
      this.log.warn({ dropped: this.dropped }, 'audit records dropped under load');
      this.dropped = 0;
    }
    this.flushing = this.store.appendAudit(batch).catch((err) => {
      this.log.warn({ err, records: batch.length }, 'audit flush failed; will retry');
      this.pending = batch.concat(this.pending).slice(0, MAX_PENDING);
      if (!this.timer) {
        this.timer = setTimeout(() => {
          this.timer = undefined;
          void this.flush();
        }, FLUSH_MS);
        this.timer.unref();
      }
    });
    try {
      await this.flushing;
    } finally {
      this.flushing = undefined;
    }
  }

  async list(orgId: string, page: PageQuery): Promise<Page<AuditRecord>> {
    await this.flush();
    const p = await this.store.listAudit(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no audit record of this organisation.', 'starting_after');
    return p;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}
