/**
 * The SQLite store's usage counters (`usage`: one row per scope, id and
 * period: requests, tokens and spend in micro-dollars). A batch of deltas is
 * one transaction of upserts that add, so several processes on one file stay
 * exact; a read is one period's row, the sum over all periods, or a range of
 * periods (the daily counters' days) read by the primary key in order. An
 * organisation's breakdown (ids `org/key`) is one range of that key: the ids
 * from `org/` up to `org0` (`0` follows `/`), summed per id.
 */
import { breakdownId, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageDelta, type UsageScope, type UsageStore } from '../ports.js';
import type { SqliteDb } from './db.js';

const counts = (r: Record<string, unknown> | undefined): UsageCounts => ({
  requests: (r?.r as number) ?? 0,
  inputTokens: (r?.i as number) ?? 0,
  outputTokens: (r?.o as number) ?? 0,
  spendMicros: (r?.s as number) ?? 0,
});

export class SqliteUsage implements UsageStore {
  constructor(private readonly db: SqliteDb) {}

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    return this.db.guard(() => this.db.tx(() => {
      for (const d of deltas) {
        this.db.run(
          `INSERT INTO usage (scope, id, period, requests, input_tokens, output_tokens, spend_micros) VALUES (?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(scope, id, period) DO UPDATE SET requests = requests + excluded.requests,
             input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
             spend_micros = spend_micros + excluded.spend_micros`,
          d.scope, d.id, d.period, d.requests, d.inputTokens, d.outputTokens, d.spendMicros,
        );
      }
    }));
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.db.guard(() => counts(period === undefined
      ? this.db.one('SELECT SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o, SUM(spend_micros) AS s FROM usage WHERE scope = ? AND id = ?', scope, id)
      : this.db.one('SELECT requests AS r, input_tokens AS i, output_tokens AS o, spend_micros AS s FROM usage WHERE scope = ? AND id = ? AND period = ?', scope, id, period)));
  }

  listUsage(scope: UsageScope, id: string, from: string, to: string): Promise<PeriodUsage[]> {
    return this.db.guard(() => this.db.all(
      `SELECT period AS p, requests AS r, input_tokens AS i, output_tokens AS o, spend_micros AS s FROM usage
       WHERE scope = ? AND id = ? AND period >= ? AND period <= ? ORDER BY period`,
      scope, id, from, to,
    ).map((r) => ({ period: r.p as string, ...counts(r) })));
  }

  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    return this.db.guard(() => this.db.all(
      `SELECT id, SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o, SUM(spend_micros) AS s FROM usage
       WHERE scope = ? AND id >= ? AND id < ? AND period >= ? AND period <= ? GROUP BY id`,
      scope, breakdownId(orgId, ''), `${orgId}0`, from, to,
    ).map((r) => ({ key: splitBreakdownId(r.id as string).key, ...counts(r) })));
  }
}
