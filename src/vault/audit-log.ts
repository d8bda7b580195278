/**
 * The audit trail: every admin action, failed authentication and quota
 * refusal, appended to the store. Records are batched and flushed every
 * second (a flood of failed authentications must not become a store write per
 * request), and flushed before a read so a caller sees its own actions.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { BAD_CURSOR, type AuditRecord, type AuditStore, type Page, type PageQuery } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Errors } from '../errors.js';
import { newId } from './secrets.js';
import { BackgroundFlush } from '../background-flush.js';

const FLUSH_MS = 1000;
/** Beyond this many pending records, new ones are counted and dropped (and the drop is logged). */
const MAX_PENDING = 10_000;

export type AuditEntry = Omit<AuditRecord, 'id' | 'time'>;

@injectable()
export class AuditLog {
  private pending: AuditRecord[] = [];
  private dropped = 0;
  private readonly flusher: BackgroundFlush<AuditRecord[]>;

  constructor(
    @inject(Symbols.AuditStore) private readonly store: AuditStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) log: Logger,
  ) {
    this.flusher = new BackgroundFlush({
      take: () => {
        if (this.dropped > 0) {
          log.warn({ dropped: this.dropped }, 'audit records dropped under load');
          this.dropped = 0;
        }
        if (this.pending.length === 0) return undefined;
        const batch = this.pending;
        this.pending = [];
        return batch;
      },
      write: (batch) => this.store.appendAudit(batch),
      restore: (batch, err) => {
        log.warn({ err, records: batch.length }, 'audit flush failed; will retry');
        this.pending = batch.concat(this.pending).slice(0, MAX_PENDING);
      },
    }, FLUSH_MS);
  }

  record(entry: AuditEntry): void {
    if (this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push({ id: newId('evt'), time: this.clock.now(), ...entry });
    this.flusher.schedule();
  }

  flush(): Promise<void> {
    return this.flusher.flush();
  }

  async list(orgId: string, page: PageQuery): Promise<Page<AuditRecord>> {
    await this.flush();
    const p = await this.store.listAudit(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no audit record of this organisation.', 'starting_after');
    return p;
  }

  close(): Promise<void> {
    return this.flusher.close();
  }
}
