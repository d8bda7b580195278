/** GET /v1/usage (this month against the free tier) and GET /v1/audit (the organisation's trail). */
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { QuotaLedger } from '../accounting/quota-ledger.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import type { Router } from '../http/router.js';
import type { CredentialStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { AuditLog } from '../controls/audit-log.js';
import { noQuery, orgOf, pageQuery } from './params.js';
import { auditView } from './views.js';

@injectable()
export class UsageApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(QuotaLedger) private readonly quota: QuotaLedger,
    @inject(AuditLog) private readonly audit: AuditLog,
  ) {}

  register(router: Router): void {
    router.add('GET', '/v1/usage', { auth: 'org' }, async (r) => {
      const org = orgOf(r);
      noQuery(r.query);
      const period = this.quota.currentPeriod();
      const [month, stored] = await Promise.all([this.usage.get('org', org.id, period), this.credentials.countCredentials(org.id)]);
      return {
        status: 200,
        body: {
          object: 'usage',
          period,
          proxy_requests: { used: Math.min(month.requests, this.config.freeProxyRequests), limit: this.config.freeProxyRequests },
          credentials: { used: stored, limit: this.config.freeCredentials },
          tokens: { input: month.inputTokens, output: month.outputTokens },
        },
      };
    });

    router.add('GET', '/v1/audit', { auth: 'org' }, async (r) => {
      const page = await this.audit.list(orgOf(r).id, pageQuery(r.query));
      return { status: 200, body: { object: 'list', data: page.data.map(auditView), has_more: page.hasMore } };
    });
  }
}
