/**
 * Usage counters (requests, input and output tokens and spend per organisation, credential and token each
 * month, and per organisation each day) accumulate in memory and are written to the store in one batch
 * every second at most, never per request: a counter with many requests since its last write (BUSY) or
 * not written for QUIET_MS, or never written, goes in the next batch; others wait, so an instance with
 * little traffic writes each counter every few seconds, not every second (the store's cost is per
 * instance and second: docs/operate/cloud-run.md, "Operating costs and settings"). Each instance writes only its own shard of each counter, with
 * its absolute totals (UsageStore): a flush that fails, or lands and times out, is simply written again,
 * so nothing counts twice and nothing is lost, and no document is written more than once a second however
 * many instances there are. Reads add what this instance has not written yet, so a caller sees its own
 * requests at once. A counter untouched for a while (or of a past period) is let go of once written; if it
 * is counted again, its stored totals are read back before the next write.
 *
 * An organisation's days per token, credential and priced model (GET /v1/usage/breakdown) are three more
 * `add`s in `record`: shards per instance and day, summed on read like these.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import type { Logger } from '../log.js';
import { breakdownId, splitBreakdownId, type BreakdownScope, type KeyUsage, type PeriodUsage, type UsageCounts, type UsageScope, type UsageShard, type UsageStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { dayOf, periodOf } from './periods.js';
import { BackgroundFlush } from './background-flush.js';
import { Instance } from './instance.js';

const FLUSH_MS = 1000;
/** A counter with at least this many requests not written goes in the next batch… */
const BUSY = 20;
/** …and any other at most this long after its last write. */
const QUIET_MS = 5000;
/** A written counter untouched this long is let go of (a token's month, a credential's). */
const FORGET_AFTER_MS = 10 * 60_000;
/** Keys let go of that are remembered (to read their totals back if counted again); past it, every new counter is read back. */
const FORGOTTEN_MAX = 100_000;

export interface UsageEvent {
  orgId: string;
  credentialId: string;
  tokenId: string;
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** What the request spent, µ$ (the gateway's settled figure; 0 when nothing was priced). */
  spendMicros: number;
  /**
   * The price table's name for the model (pricing/prices.ts match), or `unpriced`, or an MCP tool call's
   * `tool:<provider>:<tool>` (names bounded per organisation, gateway/wire/mcp/tool-calls.ts): never the caller's free-form
   * string unbounded, so an organisation's models are as many as the table's rows and its tools.
   */
  model: string;
}

interface Counter {
  shard: UsageShard;
  /** What the store holds of this shard (undefined: unknown, read it back before writing). */
  written: UsageCounts | undefined;
  /** Totals added since the last write began. */
  dirty: boolean;
  touched: number;
  /** When its last write began (0: never written by this instance). */
  writtenAt: number;
}

const ZERO: UsageCounts = { requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 };
/** Request sets kept at most (one per token, credential and model in use); past it they are found afresh. */
const RECENT_MAX = 10_000;

interface RecentSet {
  orgId: string;
  period: string;
  day: string;
  counters: Counter[];
}

const keyOf = (scope: UsageScope, id: string, period: string) => `${scope}\0${id}\0${period}`;

function addTo(into: UsageCounts, c: UsageCounts): void {
  into.requests += c.requests;
  into.inputTokens += c.inputTokens;
  into.outputTokens += c.outputTokens;
  into.spendMicros += c.spendMicros;
}

@injectable()
export class UsageRecorder {
  private readonly counters = new Map<string, Counter>();
  /** The counters `record` adds to, by token, credential and model (see `record`); cleared whenever a counter is let go of. */
  private readonly recent = new Map<string, RecentSet>();
  private readonly forgotten = new Set<string>();
  private forgottenOverflow = false;
  private seq = 0;
  private readonly flusher: BackgroundFlush<Counter[]>;

  constructor(
    @inject(Symbols.UsageStore) private readonly store: UsageStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) log: Logger,
    @inject(Symbols.Timers) timers: Timers,
    @inject(Instance) private readonly instance: Instance,
  ) {
    this.flusher = new BackgroundFlush({
      take: () => {
        const now = this.clock.now();
        const dirty = [...this.counters.values()].filter((c) => c.dirty);
        const due = dirty.filter((c) => c.writtenAt === 0 || now - c.writtenAt >= QUIET_MS || c.shard.requests - (c.written?.requests ?? 0) >= BUSY);
        // The others wait for their turn: the flush comes round again.
        if (due.length < dirty.length) this.flusher.schedule();
        return due.length > 0 ? due : undefined;
      },
      write: (batch) => this.write(batch),
      // Nothing to put back: the totals stay, and the next flush writes them again (absolute, so at most once).
      restore: (batch, err) => log.warn({ err, counters: batch.length }, 'usage flush failed; will retry'),
    }, FLUSH_MS, timers);
  }

  record(e: UsageEvent): void {
    if (e.requests === 0 && e.inputTokens === 0 && e.outputTokens === 0 && e.spendMicros === 0) return;
    const now = this.clock.now();
    const period = periodOf(now);
    const day = dayOf(now);
    // The seven counters one request adds to, found once per token, credential, model and day: seven keys built
    // and looked up per request were ~1.5 kB of garbage and ~3 µs each time.
    const sig = `${e.tokenId}\0${e.credentialId}\0${e.model}`;
    let set = this.recent.get(sig);
    if (set === undefined || set.period !== period || set.day !== day || set.orgId !== e.orgId) {
      if (this.recent.size >= RECENT_MAX) this.recent.clear();
      set = {
        orgId: e.orgId, period, day,
        counters: [
          this.counter('org', e.orgId, period, now),
          this.counter('cred', e.credentialId, period, now),
          this.counter('tok', e.tokenId, period, now),
          // The day's counter is one more key in the same batch: no write of its own.
          this.counter('org-day', e.orgId, day, now),
          // So are the breakdown's: one per token, credential and model each day.
          this.counter('tok-day', breakdownId(e.orgId, e.tokenId), day, now),
          this.counter('cred-day', breakdownId(e.orgId, e.credentialId), day, now),
          this.counter('model-day', breakdownId(e.orgId, e.model), day, now),
        ],
      };
      this.recent.set(sig, set);
    }
    for (const c of set.counters) {
      addTo(c.shard, e);
      c.dirty = true;
      c.touched = now;
    }
    this.flusher.schedule();
  }

  /** The counter for this key, made (and its stored totals marked unknown if it was let go of) when new. */
  private counter(scope: UsageScope, id: string, period: string, now: number): Counter {
    const key = keyOf(scope, id, period);
    let c = this.counters.get(key);
    if (!c) {
      const known = !this.forgottenOverflow && !this.forgotten.delete(key);
      c = { shard: { scope, id, period, ...ZERO }, written: known ? { ...ZERO } : undefined, dirty: false, touched: now, writtenAt: 0 };
      this.counters.set(key, c);
    }
    return c;
  }

  /** Writes the given counters' totals (reading back any this instance had let go of first). */
  private async write(batch: Counter[]): Promise<void> {
    const unknown = batch.filter((c) => c.written === undefined);
    if (unknown.length > 0) {
      const stored = await this.store.getUsageShards(this.instance.id, unknown.map((c) => c.shard));
      unknown.forEach((c, i) => {
        addTo(c.shard, stored[i]!);
        c.written = stored[i]!;
      });
    }
    const sent = batch.map((c) => ({ c, totals: { ...c.shard }, writtenAt: c.writtenAt }));
    const startedAt = this.clock.now();
    for (const { c } of sent) {
      c.dirty = false;
      c.writtenAt = startedAt;
    }
    try {
      await this.store.putUsageShards(this.instance.id, ++this.seq, sent.map((s) => s.totals));
    } catch (err) {
      // Written again at the next flush (its turn as before the failed attempt).
      for (const { c, writtenAt } of sent) {
        c.dirty = true;
        c.writtenAt = writtenAt;
      }
      throw err;
    }
    for (const { c, totals } of sent) c.written = totals;
    this.forget(this.clock.now());
  }

  /** Lets go of written counters untouched for a while or of a past period (a day, a month). */
  private forget(now: number): void {
    const month = periodOf(now);
    const day = dayOf(now);
    for (const [key, c] of this.counters) {
      if (c.dirty) continue;
      const past = c.shard.period !== month && c.shard.period !== day;
      if (!past && now - c.touched < FORGET_AFTER_MS) continue;
      this.counters.delete(key);
      // A request's set may hold it: the sets are found afresh (a counter let go of must never be added to).
      this.recent.clear();
      if (past) continue;
      if (this.forgotten.size >= FORGOTTEN_MAX) this.forgottenOverflow = true;
      else this.forgotten.add(key);
    }
  }

  /** Writes everything not written yet (what waits for its turn too); on failure the totals are kept for the next flush. */
  flush(): Promise<void> {
    for (const c of this.counters.values()) if (c.dirty) c.writtenAt = 0;
    return this.flusher.flush();
  }

  /** What the store has for this counter plus what this instance counted and has not written. */
  async get(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    const stored = await this.store.getUsage(scope, id, period);
    for (const c of this.counters.values()) {
      const s = c.shard;
      if (s.scope === scope && s.id === id && (period === undefined || s.period === period)) addTo(stored, this.unwritten(c));
    }
    return stored;
  }

  private unwritten(c: Counter): UsageCounts {
    const w = c.written ?? ZERO;
    const s = c.shard;
    return { requests: s.requests - w.requests, inputTokens: s.inputTokens - w.inputTokens, outputTokens: s.outputTokens - w.outputTokens, spendMicros: s.spendMicros - w.spendMicros };
  }

  /** An organisation's days from `from` to `to` (`YYYY-MM-DD`, inclusive) that have counters, in order, unwritten ones included. */
  async daily(orgId: string, from: string, to: string): Promise<PeriodUsage[]> {
    const byDay = new Map((await this.store.listUsage('org-day', orgId, from, to)).map((d) => [d.period, d]));
    for (const c of this.counters.values()) {
      const s = c.shard;
      if (s.scope !== 'org-day' || s.id !== orgId || s.period < from || s.period > to) continue;
      let day = byDay.get(s.period);
      if (!day) byDay.set(s.period, (day = { period: s.period, ...ZERO }));
      addTo(day, this.unwritten(c));
    }
    return [...byDay.values()].sort((a, b) => (a.period < b.period ? -1 : a.period > b.period ? 1 : 0));
  }

  /** An organisation's keys in a breakdown scope with counters on days `from` to `to` (inclusive), each summed, unwritten ones included. */
  async breakdown(scope: BreakdownScope, orgId: string, from: string, to: string): Promise<KeyUsage[]> {
    const byKey = new Map((await this.store.listBreakdown(scope, orgId, from, to)).map((k) => [k.key, k]));
    for (const c of this.counters.values()) {
      const s = c.shard;
      if (s.scope !== scope || s.period < from || s.period > to) continue;
      const { orgId: owner, key } = splitBreakdownId(s.id);
      if (owner !== orgId) continue;
      let sum = byKey.get(key);
      if (!sum) byKey.set(key, (sum = { key, ...ZERO }));
      addTo(sum, this.unwritten(c));
    }
    return [...byKey.values()].filter((k) => k.requests > 0 || k.inputTokens > 0 || k.outputTokens > 0 || k.spendMicros > 0);
  }

  close(): Promise<void> {
    for (const c of this.counters.values()) if (c.dirty) c.writtenAt = 0;
    return this.flusher.close();
  }
}
