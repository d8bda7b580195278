/**
 * Refusals (any audit entry whose outcome is `denied`: auth.failed,
 * quota.refused, admin.rate_limited, budget refusals) are counted in memory,
 * one record per (org, action, address, minute), and written once a second as
 * an upsert that adds to `count`. The record's id is derived from its key, so
 * every instance adds to the same record and the count is exact across them.
 *
 * A record's time, request id, actor and target are its minute's first event
 * (the first written, when several instances count the same key).
 *
 * Memory is bounded: past `maxKeys` distinct keys, new addresses fold into one
 * record per (org, action, minute) with address `*`; past a further
 * `maxFolded`, into one per (action, minute) with no organisation. Nothing is
 * dropped; `take` reports how many events were folded, for the log.
 */
import type { AuditRecord } from '../store/ports.js';
import { derivedId } from '../ids.js';

export type AuditEntry = Omit<AuditRecord, 'id' | 'time' | 'count' | 'expireAt'>;

export const MAX_PENDING_KEYS = 10_000;
const MAX_FOLDED_KEYS = 1_000;
/** The address of a record that folds several addresses together. */
export const ANY_ADDRESS = '*';
const MINUTE_MS = 60_000;

/** The id every instance gives the record of (org, action, ip) in the minute starting at `minuteStart`. */
export function refusalId(org: string, action: string, ip: string, minuteStart: number): string {
  return derivedId('evt', minuteStart, `audit-refusal\0${org}\0${action}\0${ip}\0${minuteStart}`);
}

export class RefusalAggregator {
  private pending = new Map<string, AuditRecord>();
  private folded = 0;

  constructor(
    private readonly retentionMs: number,
    private readonly maxKeys = MAX_PENDING_KEYS,
    private readonly maxFolded = MAX_FOLDED_KEYS,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  add(entry: AuditEntry, now: number): void {
    const minuteStart = now - (now % MINUTE_MS);
    const levels: Array<[org: string, ip: string, cap: number]> = [
      [entry.org, entry.ip, this.maxKeys],
      [entry.org, ANY_ADDRESS, this.maxKeys + this.maxFolded],
      // The last resort is bounded by the actions and the minutes pending, not by any caller's input.
      ['', ANY_ADDRESS, Infinity],
    ];
    for (let level = 0; level < levels.length; level++) {
      const [org, ip, cap] = levels[level]!;
      const id = refusalId(org, entry.action, ip, minuteStart);
      const record = this.pending.get(id);
      if (record || this.pending.size < cap) {
        if (level > 0) this.folded++;
        if (record) record.count++;
        else this.pending.set(id, { ...entry, org, ip, id, time: now, count: 1, expireAt: now + this.retentionMs });
        return;
      }
    }
  }

  /** What is pending (and resets it), with how many events were folded since the last take. */
  take(): { records: AuditRecord[]; folded: number } {
    const records = [...this.pending.values()];
    const folded = this.folded;
    this.pending = new Map();
    this.folded = 0;
    return { records, folded };
  }
}
