/**
 * GET /v1/usage/breakdown: an organisation's usage over a range of days (default: this month so far) per
 * token, credential or priced model, from the daily breakdown counters the usage recorder batches (no
 * write per request), the dearest first, each token or credential with its name where one is found (a
 * revoked token's is kept; a deleted credential's is gone). One computation for the API and `keyward usage
 * breakdown`.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { BreakdownScope, CredentialStore, KeyUsage, TokenStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { daysOf, type DayRange } from './usage-summary.js';
import { UsageRecorder } from './usage-recorder.js';

export type BreakdownBy = 'token' | 'credential' | 'model';

const SCOPE: Record<BreakdownBy, BreakdownScope> = { token: 'tok-day', credential: 'cred-day', model: 'model-day' };

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
  ) {}

  async of(orgId: string, by: BreakdownBy, range: DayRange): Promise<Breakdown> {
    const days = daysOf(range, this.clock.now(), (toMs) => Date.UTC(new Date(toMs).getUTCFullYear(), new Date(toMs).getUTCMonth(), 1));
    const from = days[0]!;
    const to = days[days.length - 1]!;
    const rows: BreakdownRow[] = (await this.usage.breakdown(SCOPE[by], orgId, from, to)).sort(dearestFirst);
    if (by !== 'model') await this.name(orgId, by, rows);
    return { by, from, to, rows };
  }

  private async name(orgId: string, by: 'token' | 'credential', rows: BreakdownRow[]): Promise<void> {
    const nameOf = async (id: string): Promise<string | undefined> => {
      if (by === 'credential') return (await this.credentials.getCredential(orgId, id))?.name;
      const live = await this.tokens.getToken(orgId, id);
      return live ? live.name : (await this.tokens.getRevokedToken(orgId, id))?.name;
    };
    for (let i = 0; i < rows.length; i += NAME_READS) {
      const chunk = rows.slice(i, i + NAME_READS);
      const names = await Promise.all(chunk.map((r) => nameOf(r.key)));
      chunk.forEach((r, j) => {
        if (names[j] !== undefined) r.name = names[j];
      });
    }
  }
}
