/**
 * The SQLite store's counters: quota leases (a grant never lets the total pass
 * its limit: read and add under one write lock) and usage (upserts that add, so
 * several processes on one file stay exact).
 */
import type { UsageCounts, UsageDelta, UsageScope } from '../ports.js';
import type { Sql } from './sqlite-sql.js';

export class SqliteCounters {
  constructor(private readonly sql: Sql) {}

  lease(key: string, limit: number, want: number): { granted: number; leased: number } {
    return this.sql.tx(() => {
      const held = this.leased(key);
      const grant = Math.max(0, Math.min(want, limit - held));
      if (grant > 0) {
        this.sql.run('INSERT INTO leases (key, leased) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET leased = leased + excluded.leased', key, grant);
      }
      return { granted: grant, leased: held + grant };
    });
  }

  release(key: string, units: number): void {
    this.sql.run('UPDATE leases SET leased = MAX(0, leased - ?) WHERE key = ?', units, key);
  }

  leased(key: string): number {
    return (this.sql.one('SELECT leased FROM leases WHERE key = ?', key)?.leased as number | undefined) ?? 0;
  }

  addUsage(deltas: UsageDelta[]): void {
    this.sql.tx(() => {
      for (const d of deltas) {
        this.sql.run(
          `INSERT INTO usage (scope, id, period, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT(scope, id, period) DO UPDATE SET requests = requests + excluded.requests,
             input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`,
          d.scope, d.id, d.period, d.requests, d.inputTokens, d.outputTokens,
        );
      }
    });
  }

  getUsage(scope: UsageScope, id: string, period?: string): UsageCounts {
    const r = period === undefined
      ? this.sql.one('SELECT SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o FROM usage WHERE scope = ? AND id = ?', scope, id)
      : this.sql.one('SELECT requests AS r, input_tokens AS i, output_tokens AS o FROM usage WHERE scope = ? AND id = ? AND period = ?', scope, id, period);
    return { requests: (r?.r as number) ?? 0, inputTokens: (r?.i as number) ?? 0, outputTokens: (r?.o as number) ?? 0 };
  }
}
