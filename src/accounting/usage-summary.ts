/**
 * An organisation's month against the free tier: proxied requests (never shown past the limit),
 * stored credentials and provider tokens. One computation for GET /v1/usage and `keyward usage`.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { CredentialStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { periodOf } from './periods.js';
import { UsageRecorder } from './usage-recorder.js';

export interface UsageSummary {
  /** The calendar month (UTC), `2026-11`. */
  period: string;
  proxyRequests: { used: number; limit: number };
  credentials: { used: number; limit: number };
  tokens: { input: number; output: number };
}

@injectable()
export class UsageSummaries {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
  ) {}

  async of(orgId: string): Promise<UsageSummary> {
    const period = periodOf(this.clock.now());
    const [month, stored] = await Promise.all([this.usage.get('org', orgId, period), this.credentials.countCredentials(orgId)]);
    const { freeProxyRequests, freeCredentials } = this.config;
    return {
      period,
      // `used` never reads past the limit (the contract shows it against the limit).
      proxyRequests: { used: Math.min(month.requests, freeProxyRequests), limit: freeProxyRequests },
      credentials: { used: stored, limit: freeCredentials },
      tokens: { input: month.inputTokens, output: month.outputTokens },
    };
  }
}
