/**
 * GET /v1/usage (this month against the free tier and the spend limit), GET /v1/usage/daily (the console's
 * charts), GET /v1/usage/breakdown (per token, credential or model) and GET /v1/audit (the organisation's trail, each actor by its name where it has one).
 */
import { inject, injectable } from 'tsyringe';
import { UsageBreakdowns } from '../accounting/usage-breakdown.js';
import { UsageSummaries } from '../accounting/usage-summary.js';
import type { Router } from '../http/router.js';
import { AuditActors } from '../controls/audit-actors.js';
import { AuditLog } from '../controls/audit-log.js';
import { orgOf } from './params.js';
import { PAGE } from './schemas/query.js';
import { AuditList, BREAKDOWN_QUERY, DAILY_QUERY, DailyUsage, Usage, UsageBreakdown } from './schemas/usage.js';
import { auditView, listView, usageBreakdownView, usageDayView, usageSummaryView } from './views.js';

@injectable()
export class UsageApi {
  constructor(
    @inject(UsageSummaries) private readonly summaries: UsageSummaries,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(UsageBreakdowns) private readonly breakdowns: UsageBreakdowns,
    @inject(AuditActors) private readonly actors: AuditActors,
  ) {}

  register(router: Router): void {
    router.add('GET', '/v1/usage', {
      auth: 'org', operationId: 'getUsage', tag: 'usage', summary: 'This month\'s usage against the free tier',
      response: { status: 200, schema: Usage, description: 'Usage.' },
    }, async (r) => ({ status: 200, body: usageSummaryView(await this.summaries.of(orgOf(r))) }));

    router.add('GET', '/v1/usage/daily', {
      auth: 'org', query: DAILY_QUERY, operationId: 'getDailyUsage', tag: 'usage', summary: 'Requests, tokens and spend per day (UTC)',
      response: { status: 200, schema: DailyUsage, description: 'Every day of the range, zeros included; at most 92 days (400 `invalid_request` otherwise).' },
    }, async (r) => ({ status: 200, body: { object: 'list' as const, data: (await this.summaries.daily(orgOf(r).id, r.query)).map(usageDayView) } }));

    router.add('GET', '/v1/usage/breakdown', {
      auth: 'org', query: BREAKDOWN_QUERY, operationId: 'getUsageBreakdown', tag: 'usage', summary: 'Requests, tokens and spend per token, credential or model',
      response: {
        status: 200, schema: UsageBreakdown,
        description: 'Each token, credential or model with usage from `from` to `to` (default: this month so far), the dearest first; at most 92 days (400 `invalid_request` otherwise).',
      },
    }, async (r) => ({ status: 200, body: usageBreakdownView(await this.breakdowns.of(orgOf(r).id, r.query.by, r.query)) }));

    router.add('GET', '/v1/audit', {
      auth: 'org', query: PAGE, operationId: 'listAuditEvents', tag: 'usage', summary: 'The organisation\'s audit trail',
      response: { status: 200, schema: AuditList, description: 'A page of audit events, newest first.' },
    }, async (r) => {
      const org = orgOf(r).id;
      const page = await this.audit.list(org, r.query);
      const actors = await this.actors.describe(org, page.data.map((e) => e.actor));
      return { status: 200, body: listView(page, (e) => auditView(e, actors.get(e.actor))) };
    });
  }
}
