/** GET /v1/usage: this month's forwarded requests and tokens, and stored credentials, against the free tier. */
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { QuotaLedger } from '../gateway/quota-ledger.js';
import { UsageRecorder } from '../gateway/usage-recorder.js';
import { sendJson } from '../http/reply.js';
import type { Router } from '../http/router.js';
import type { CredentialStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { OrgService } from '../vault/org-service.js';
import { noQuery } from './params.js';

@injectable()
export class UsageApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(QuotaLedger) private readonly quota: QuotaLedger,
  ) {}

  register(router: Router): void {
    router.add('GET', '/v1/usage', async ({ req, res, query }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const period = this.quota.currentPeriod();
      const [month, stored] = await Promise.all([this.usage.get('org', org.id, period), this.credentials.countCredentials(org.id)]);
      sendJson(res, 200, {
        object: 'usage',
        period,
        proxy_requests: { used: Math.min(month.requests, this.config.freeProxyRequests), limit: this.config.freeProxyRequests },
        credentials: { used: stored, limit: this.config.freeCredentials },
        tokens: { input: month.inputTokens, output: month.outputTokens },
      });
    });
  }
}
