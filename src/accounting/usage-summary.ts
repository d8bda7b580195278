/**
 * An organisation's month against the free tier and its spend limit: proxied
 * requests, stored credentials, provider tokens and spend; and its days (GET
 * /v1/usage/daily: every day of a range of at most 92, zeros included). One
 * computation for the API and `keyward usage`.
 *
 * Requests and capped spend come as `used` and `held` (what instances hold
 * for requests not yet settled and leased blocks not yet used), from the
 * lease pool of the month's quota and of the org's spend cap, reclaiming
 * holders that died first: used + held ≤ limit, and limit − used − held is what
 * a new request can still get. `used` is the larger of the pool's (holders
 * write theirs every few seconds; a holder that died is charged what it had
 * armed) and the usage counters' (flushed every second), the difference taken
 * from `held`.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { CredentialStore, LeaseLedger, LeaseStore, OrgRecord, UsageCounts } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { DAY_MS, dayOf, dayStart, daysBetween, periodOf } from './periods.js';
import { UsageRecorder } from './usage-recorder.js';

/** The longest range GET /v1/usage/daily answers (a quarter), and its default (the last 30 days). */
export const MAX_DAYS = 92;
export const DEFAULT_DAYS = 30;

export interface UsageSummary {
  /** The calendar month (UTC), `2026-11`. */
  period: string;
  proxyRequests: { used: number; held: number; limit: number };
  credentials: { used: number; limit: number };
  tokens: { input: number; output: number };
  /** µ$ this month, against the organisation's monthly limit (null: none set; then nothing is held). */
  spend: { usedMicros: number; heldMicros: number; limitMicros: number | null };
}

export interface DayUsage extends UsageCounts {
  /** `YYYY-MM-DD` (UTC). */
  date: string;
}

/**
 * The organisation's monthly spend limit in µ$, or null when none is set. Read defensively: the record's
 * `spendLimitMicros` comes with spend budgets, and a record read before it existed has none.
 */
export function spendLimitOf(org: OrgRecord): number | null {
  const limit = (org as OrgRecord & { spendLimitMicros?: unknown }).spendLimitMicros;
  return typeof limit === 'number' && Number.isSafeInteger(limit) ? limit : null;
}

/**
 * A pool's used and held against its limit, `counted` (the usage counters) taken as used where it runs ahead of
 * what holders have written (it moves from held to used); never shown past the limit.
 */
export function usedAndHeld(pool: LeaseLedger, counted: number, limit: number): { used: number; held: number } {
  const used = Math.min(limit, Math.max(pool.used, counted));
  const held = Math.max(0, Math.min(limit - used, pool.held - Math.max(0, counted - pool.used)));
  return { used, held };
}

export interface DayRange {
  from?: string | undefined;
  to?: string | undefined;
}

/**
 * The days of a range as a caller wrote it (`YYYY-MM-DD`, UTC, inclusive): `to` defaults to today, `from` to
 * `defaultFrom(to)`. 400 `invalid_request` for a day that is not a calendar day, `from` after `to`, or more than
 * MAX_DAYS days.
 */
export function daysOf(range: DayRange, now: number, defaultFrom: (toMs: number) => number): string[] {
  const day = (name: 'from' | 'to', value: string): number => {
    const ms = dayStart(value);
    if (ms === undefined) throw Errors.invalidRequest(`\`${name}\` must be a calendar day, YYYY-MM-DD (UTC).`, name);
    return ms;
  };
  const toMs = range.to === undefined ? (dayStart(dayOf(now)) as number) : day('to', range.to);
  const fromMs = range.from === undefined ? defaultFrom(toMs) : day('from', range.from);
  if (fromMs > toMs) throw Errors.invalidRequest('`from` must not be after `to`.', 'from');
  if ((toMs - fromMs) / DAY_MS + 1 > MAX_DAYS) throw Errors.invalidRequest(`The range from \`from\` to \`to\` is at most ${MAX_DAYS} days.`, 'from');
  return daysBetween(fromMs, toMs);
}

@injectable()
export class UsageSummaries {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(Symbols.LeaseStore) private readonly leases: LeaseStore,
  ) {}

  async of(org: OrgRecord): Promise<UsageSummary> {
    const now = this.clock.now();
    const period = periodOf(now);
    const limitMicros = spendLimitOf(org);
    const [month, stored, quota, spend] = await Promise.all([
      this.usage.get('org', org.id, period),
      this.credentials.countCredentials(org.id),
      this.leases.leaseLedger(`quota:${org.id}:${period}`, now),
      limitMicros === null ? undefined : this.leases.leaseLedger(`spend:org:${org.id}:${period}`, now),
    ]);
    const { freeProxyRequests, freeCredentials } = this.config;
    const requests = usedAndHeld(quota, month.requests, freeProxyRequests);
    const money = spend ? usedAndHeld(spend, month.spendMicros, limitMicros!) : { used: month.spendMicros, held: 0 };
    return {
      period,
      proxyRequests: { ...requests, limit: freeProxyRequests },
      credentials: { used: stored, limit: freeCredentials },
      tokens: { input: month.inputTokens, output: month.outputTokens },
      spend: { usedMicros: money.used, heldMicros: money.held, limitMicros },
    };
  }

  /**
   * Every day from `from` to `to` (`YYYY-MM-DD`, UTC, inclusive; default: the 30 days ending today), days
   * without traffic as zeros. 400 `invalid_request` for a day that is not a calendar day, `from` after
   * `to`, or more than MAX_DAYS days.
   */
  async daily(orgId: string, range: DayRange): Promise<DayUsage[]> {
    const days = daysOf(range, this.clock.now(), (toMs) => toMs - (DEFAULT_DAYS - 1) * DAY_MS);
    const counted = new Map((await this.usage.daily(orgId, days[0]!, days[days.length - 1]!)).map((d) => [d.period, d]));
    return days.map((date) => {
      const c = counted.get(date);
      return { date, requests: c?.requests ?? 0, inputTokens: c?.inputTokens ?? 0, outputTokens: c?.outputTokens ?? 0, spendMicros: c?.spendMicros ?? 0 };
    });
  }
}
