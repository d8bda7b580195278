/**
 * Usage counters (requests, input and output tokens and spend per
 * organisation, credential and token each month, and per organisation each
 * day; an organisation's days per token, credential and priced model for its
 * breakdown) accumulate in memory and are flushed to the store in one batch
 * every second, never written per request. Reads add what this instance has
 * not flushed yet, so a caller sees its own requests at once.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import type { Logger } from '../log.js';
import { addCounts, breakdownId, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageDelta, type UsageScope, type UsageStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { dayOf, periodOf } from './periods.js';
import { BackgroundFlush } from './background-flush.js';

const FLUSH_MS = 1000;

export interface UsageEvent {
  orgId: string;
  credentialId: string;
  tokenId: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** What the request spent, µ$ (the gateway's settled figure; 0 when nothing was priced). */
  spendMicros: number;
  /** The price table's name for the model (catalog/prices.ts match), or `unpriced`: never the caller's free-form string, so an organisation's models are as many as the table's rows. */
  model: string;
}

@injectable()
export class UsageRecorder {
  private pending = new Map<string, UsageDelta>();
  private readonly flusher: BackgroundFlush<Map<string, UsageDelta>>;

  constructor(
    @inject(Symbols.UsageStore) private readonly store: UsageStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) log: Logger,
    @inject(Symbols.Timers) timers: Timers,
  ) {
    this.flusher = new BackgroundFlush({
      take: () => {
        if (this.pending.size === 0) return undefined;
        const batch = this.pending;
        this.pending = new Map();
        return batch;
      },
      write: (batch) => this.store.addUsage([...batch.values()]),
      restore: (batch, err) => {
        log.warn({ err, counters: batch.size }, 'usage flush failed; will retry');
        for (const d of batch.values()) this.add(d.scope, d.id, d.period, d);
      },
    }, FLUSH_MS, timers);
  }

  record(e: UsageEvent): void {
    if (e.requests === 0 && e.inputTokens === 0 && e.outputTokens === 0 && e.spendMicros === 0) return;
    const now = this.clock.now();
    const period = periodOf(now);
    this.add('org', e.orgId, period, e);
    this.add('cred', e.credentialId, period, e);
    this.add('tok', e.tokenId, period, e);
    // The day's counter is one more key in the same batch: no write of its own.
    const day = dayOf(now);
    this.add('org-day', e.orgId, day, e);
    // So is the breakdown's: one counter per token, credential and model each day.
    this.add('tok-day', breakdownId(e.orgId, e.tokenId), day, e);
    this.add('cred-day', breakdownId(e.orgId, e.credentialId), day, e);
    this.add('model-day', breakdownId(e.orgId, e.model), day, e);
    this.flusher.schedule();
  }

  private add(scope: UsageScope, id: string, period: string, e: UsageCounts): void {
    const key = `${scope}\0${id}\0${period}`;
    const d = this.pending.get(key);
    if (d) addCounts(d, e);
    else {
      this.pending.set(key, { scope, id, period, requests: e.requests, inputTokens: e.inputTokens, outputTokens: e.outputTokens, spendMicros: e.spendMicros });
    }
  }

  /** Writes what has accumulated; on failure the deltas are kept for the next flush. */
  flush(): Promise<void> {
    return this.flusher.flush();
  }

  async get(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    const stored = await this.store.getUsage(scope, id, period);
    for (const d of this.pending.values()) {
      if (d.scope === scope && d.id === id && (period === undefined || d.period === period)) addCounts(stored, d);
    }
    return stored;
  }

  /** An organisation's days from `from` to `to` (`YYYY-MM-DD`, inclusive) that have counters, in order, unflushed ones included. */
  async daily(orgId: string, from: string, to: string): Promise<PeriodUsage[]> {
    const byDay = new Map((await this.store.listUsage('org-day', orgId, from, to)).map((d) => [d.period, d]));
    for (const d of this.pending.values()) {
      if (d.scope !== 'org-day' || d.id !== orgId || d.period < from || d.period > to) continue;
      const day = byDay.get(d.period);
      if (day) addCounts(day, d);
      else {
        byDay.set(d.period, { period: d.period, requests: d.requests, inputTokens: d.inputTokens, outputTokens: d.outputTokens, spendMicros: d.spendMicros });
      }
    }
    return [...byDay.values()].sort((a, b) => (a.period < b.period ? -1 : a.period > b.period ? 1 : 0));
  }

  /** An organisation's keys in a breakdown scope with counters on days `from` to `to` (inclusive), each summed, unflushed ones included. */
  async breakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    const byKey = new Map((await this.store.listBreakdown(scope, orgId, from, to)).map((k) => [k.key, k]));
    for (const d of this.pending.values()) {
      if (d.scope !== scope || d.period < from || d.period > to) continue;
      const { orgId: owner, key } = splitBreakdownId(d.id);
      if (owner !== orgId) continue;
      const sum = byKey.get(key);
      if (sum) addCounts(sum, d);
      else byKey.set(key, { key, requests: d.requests, inputTokens: d.inputTokens, outputTokens: d.outputTokens, spendMicros: d.spendMicros });
    }
    return [...byKey.values()];
  }

  close(): Promise<void> {
    return this.flusher.close();
  }
}
