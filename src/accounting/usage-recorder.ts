/**
 * Usage counters (requests, input and output tokens per organisation,
 * credential and token) accumulate in memory and are flushed to the store in
 * one batch every second, never written per request. Reads add what this
 * instance has not flushed yet, so a caller sees its own requests at once.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { UsageCounts, UsageDelta, UsageScope, UsageStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { periodOf } from './periods.js';
import { BackgroundFlush } from './background-flush.js';

const FLUSH_MS = 1000;

export interface UsageEvent {
  orgId: string;
  credentialId: string;
  tokenId: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
}

@injectable()
export class UsageRecorder {
  private pending = new Map<string, UsageDelta>();
  private readonly flusher: BackgroundFlush<Map<string, UsageDelta>>;

  constructor(
    @inject(Symbols.UsageStore) private readonly store: UsageStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) log: Logger,
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
    }, FLUSH_MS);
  }

  record(e: UsageEvent): void {
    if (e.requests === 0 && e.inputTokens === 0 && e.outputTokens === 0) return;
    const period = periodOf(this.clock.now());
    this.add('org', e.orgId, period, e);
    this.add('cred', e.credentialId, period, e);
    this.add('tok', e.tokenId, period, e);
    this.flusher.schedule();
  }

  private add(scope: UsageScope, id: string, period: string, e: UsageCounts): void {
    const key = `${scope}\0${id}\0${period}`;
    const d = this.pending.get(key);
    if (d) {
      d.requests += e.requests;
      d.inputTokens += e.inputTokens;
      d.outputTokens += e.outputTokens;
    } else {
      this.pending.set(key, { scope, id, period, requests: e.requests, inputTokens: e.inputTokens, outputTokens: e.outputTokens });
    }
  }

  /** Writes what has accumulated; on failure the deltas are kept for the next flush. */
  flush(): Promise<void> {
    return this.flusher.flush();
  }

  async get(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    const stored = await this.store.getUsage(scope, id, period);
    const sum = (d: UsageDelta) => {
      stored.requests += d.requests;
      stored.inputTokens += d.inputTokens;
      stored.outputTokens += d.outputTokens;
    };
    for (const d of this.pending.values()) {
      if (d.scope === scope && d.id === id && (period === undefined || d.period === period)) sum(d);
    }
    return stored;
  }

  close(): Promise<void> {
    return this.flusher.close();
  }
}
