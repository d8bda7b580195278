/**
 * The SQLite store's usage counters: `usage_shards`, one row per scope, id, period and writer (an instance)
 * holding that writer's absolute totals and the sequence number of the flush that wrote them. A flush is one
 * transaction of upserts that replace a row only with a higher sequence number, so a retried or late write
 * never counts twice or goes back. A read sums the writers' rows (and the `usage` rows written before shards
 * existed, which are only read now). An organisation's breakdown (ids `org/key`, shards only: it came after
 * them) is one range of the primary key: the ids from `org/` up to `org0` (`0` follows `/`), summed per id.
 */
import { breakdownId, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageScope, type UsageShard, type UsageStore } from '../ports.js';
import type { Row, SqliteDb } from './db.js';

const counts = (r: Row | undefined): UsageCounts => ({
  requests: (r?.r as number) ?? 0,
  inputTokens: (r?.i as number) ?? 0,
  outputTokens: (r?.o as number) ?? 0,
  spendMicros: (r?.s as number) ?? 0,
});

/** Every counter row, old (`usage`) and sharded, as one relation to sum over. */
const ALL = `(SELECT scope, id, period, requests, input_tokens, output_tokens, spend_micros FROM usage_shards
  UNION ALL SELECT scope, id, period, requests, input_tokens, output_tokens, spend_micros FROM usage)`;
const SUMS = 'SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o, SUM(spend_micros) AS s';

export class SqliteUsage implements UsageStore {
  constructor(private readonly db: SqliteDb) {}

  putUsageShards(writer: string, seq: number, shards: UsageShard[]): Promise<void> {
    if (shards.length === 0) return Promise.resolve();
    return this.db.guard(() => this.db.tx('usage', () => {
      for (const d of shards) {
        this.db.run(
          `INSERT INTO usage_shards (scope, id, period, writer, seq, requests, input_tokens, output_tokens, spend_micros) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT(scope, id, period, writer) DO UPDATE SET seq = excluded.seq, requests = excluded.requests, input_tokens = excluded.input_tokens,
             output_tokens = excluded.output_tokens, spend_micros = excluded.spend_micros WHERE excluded.seq > usage_shards.seq`,
          d.scope, d.id, d.period, writer, seq, d.requests, d.inputTokens, d.outputTokens, d.spendMicros,
        );
      }
    }));
  }

  getUsageShards(writer: string, counters: Array<Pick<UsageShard, 'scope' | 'id' | 'period'>>): Promise<UsageCounts[]> {
    return this.db.guard(() => counters.map((c) => counts(this.db.one(
      'SELECT requests AS r, input_tokens AS i, output_tokens AS o, spend_micros AS s FROM usage_shards WHERE scope = ? AND id = ? AND period = ? AND writer = ?',
      c.scope, c.id, c.period, writer,
    ))));
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.db.guard(() => counts(period === undefined
      ? this.db.one(`SELECT ${SUMS} FROM ${ALL} WHERE scope = ? AND id = ?`, scope, id)
      : this.db.one(`SELECT ${SUMS} FROM ${ALL} WHERE scope = ? AND id = ? AND period = ?`, scope, id, period)));
  }

  listUsage(scope: UsageScope, id: string, from: string, to: string): Promise<PeriodUsage[]> {
    return this.db.guard(() => this.db.all(
      `SELECT period AS p, ${SUMS} FROM ${ALL} WHERE scope = ? AND id = ? AND period >= ? AND period <= ? GROUP BY period ORDER BY period`,
      scope, id, from, to,
    ).map((r) => ({ period: r.p as string, ...counts(r) })));
  }

  listBreakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    return this.db.guard(() => this.db.all(
      `SELECT id, ${SUMS} FROM usage_shards WHERE scope = ? AND id >= ? AND id < ? AND period >= ? AND period <= ? GROUP BY id`,
      scope, breakdownId(orgId, ''), `${orgId}0`, from, to,
    ).map((r) => ({ key: splitBreakdownId(r.id as string).key, ...counts(r) })));
  }
}
