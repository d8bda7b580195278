/**
 * GET /v1/usage/breakdown: an organisation's usage over a range of days (default: this month so far) per
 * token, credential, priced model, team or member, from the daily breakdown counters the usage recorder
 * batches (no write per request), the dearest first, each token, credential or team with its name where one
 * is found (a revoked token's is kept; a deleted credential's or team's is gone). One computation for the API
 * and `keyward usage breakdown`.
 *
 * Teams and members are the tokens' rows summed by the team or member each token is bound to (its record,
 * live or revoked, names them): a token is bound once, at mint, so its days are all its team's and member's.
 * Tokens bound to neither are left out of those two.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { BreakdownScope, CredentialStore, KeyUsage, TeamStore, TokenRecord, TokenStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { daysOf, type DayRange } from './usage-summary.js';
import { UsageRecorder } from './usage-recorder.js';

export type BreakdownBy = 'token' | 'credential' | 'model' | 'team' | 'member';

const SCOPE: Record<BreakdownBy, BreakdownScope> = { token: 'tok-day', credential: 'cred-day', model: 'model-day', team: 'tok-day', member: 'tok-day' };

/** Names are read this many at a time (point reads: a breakdown of thousands of tokens never fans out at once). */
const NAME_READS = 50;

export interface BreakdownRow extends KeyUsage {
  name?: string;
}

export interface Breakdown {
  by: BreakdownBy;
  from: string;
  to: string;
  rows: BreakdownRow[];
}

/** Dearest first, then most requests, then by key: a stable order for equal rows. */
const dearestFirst = (a: KeyUsage, b: KeyUsage): number =>
  b.spendMicros - a.spendMicros || b.requests - a.requests || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

@injectable()
export class UsageBreakdowns {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.TokenStore) private readonly tokens: TokenStore,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(Symbols.TeamStore) private readonly teams: TeamStore,
  ) {}

  async of(orgId: string, by: BreakdownBy, range: DayRange): Promise<Breakdown> {
    const days = daysOf(range, this.clock.now(), (toMs) => Date.UTC(new Date(toMs).getUTCFullYear(), new Date(toMs).getUTCMonth(), 1));
    const from = days[0]!;
    const to = days[days.length - 1]!;
    let rows: BreakdownRow[] = await this.usage.breakdown(SCOPE[by], orgId, from, to);
    if (by === 'team' || by === 'member') rows = await this.byBinding(orgId, by, rows);
    rows.sort(dearestFirst);
    if (by !== 'model' && by !== 'member') await this.name(orgId, by, rows);
    return { by, from, to, rows };
  }

  /** The tokens' rows summed by the team (or member) each is bound to. */
  private async byBinding(orgId: string, by: 'team' | 'member', rows: KeyUsage[]): Promise<KeyUsage[]> {
    const records = await this.each(rows, (r) => this.token(orgId, r.key));
    const sums = new Map<string, KeyUsage>();
    rows.forEach((r, i) => {
      const key = by === 'team' ? records[i]?.teamId : records[i]?.memberId;
      if (key === undefined) return;
      let sum = sums.get(key);
      if (!sum) sums.set(key, (sum = { key, requests: 0, inputTokens: 0, outputTokens: 0, spendMicros: 0 }));
      sum.requests += r.requests;
      sum.inputTokens += r.inputTokens;
      sum.outputTokens += r.outputTokens;
      sum.spendMicros += r.spendMicros;
    });
    return [...sums.values()];
  }

  /** A token's record, live or revoked. */
  private async token(orgId: string, id: string): Promise<Omit<TokenRecord, 'tokenHash'> | undefined> {
    return (await this.tokens.getToken(orgId, id)) ?? (await this.tokens.getRevokedToken(orgId, id));
  }

  private async name(orgId: string, by: 'token' | 'credential' | 'team', rows: BreakdownRow[]): Promise<void> {
    const nameOf = async (id: string): Promise<string | undefined> => {
      if (by === 'credential') return (await this.credentials.getCredential(orgId, id))?.name;
      if (by === 'team') return (await this.teams.getTeam(orgId, id))?.name;
      return (await this.token(orgId, id))?.name;
    };
    const names = await this.each(rows, (r) => nameOf(r.key));
    rows.forEach((r, i) => {
      if (names[i] !== undefined) r.name = names[i];
    });
  }

  /** `read` of every row, NAME_READS at a time (point reads: thousands of rows never fan out at once). */
  private async each<T>(rows: readonly KeyUsage[], read: (r: KeyUsage) => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    for (let i = 0; i < rows.length; i += NAME_READS) out.push(...(await Promise.all(rows.slice(i, i + NAME_READS).map(read))));
    return out;
  }
}
