/**
 * The SQLite store's usage counters (`usage`: one row per scope, id and
 * period). A batch of deltas is one transaction of upserts that add, so
 * several processes on one file stay exact; a read is one period's row or the
 * sum over all periods.
 */
import type { UsageCounts, UsageDelta, UsageScope, UsageStore } from '../ports.js';
import type { SqliteDb } from './db.js';

export class SqliteUsage implements UsageStore {
  constructor(private readonly db: SqliteDb) {}

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    return this.db.guard(() => this.db.tx(() => {
      for (const d of deltas) {
        this.db.run(
          `INSERT INTO usage (scope, id, period, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT(scope, id, period) DO UPDATE SET requests = requests + excluded.requests,
             input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`,
          d.scope, d.id, d.period, d.requests, d.inputTokens, d.outputTokens,
        );
      }
    }));
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.db.guard(() => {
      const r = period === undefined
        ? this.db.one('SELECT SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o FROM usage WHERE scope = ? AND id = ?', scope, id)
        : this.db.one('SELECT requests AS r, input_tokens AS i, output_tokens AS o FROM usage WHERE scope = ? AND id = ? AND period = ?', scope, id, period);
      return { requests: (r?.r as number) ?? 0, inputTokens: (r?.i as number) ?? 0, outputTokens: (r?.o as number) ?? 0 };
    });
  }
}
