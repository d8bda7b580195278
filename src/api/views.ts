/**
 * Records → the JSON the contract shows, typed by the response schemas (src/api/schemas/): a view that
 * drifts from its documented shape does not compile. Shared by the API and the CLI. Never a secret:
 * keys and token values are not in records (a value shown once is passed in by its creator).
 */
import type { Static } from '@sinclair/typebox';
import type { UsageSummary } from '../accounting/usage-summary.js';
import type { AuditRecord, CredentialRecord, OrgRecord, Page, TokenRecord, UsageCounts as UsageCountsRecord } from '../store/ports.js';
import type { CredentialView } from './schemas/credentials.js';
import type { Organization, OrganizationSettings } from './schemas/orgs.js';
import { formatUsd } from '../catalog/money.js';
import type { Token, TokenCreated } from './schemas/tokens.js';
import type { AuditEvent, Usage, UsageCounts } from './schemas/usage.js';

export const iso = (ms: number): string => new Date(ms).toISOString();

/** A page of records as the list endpoints answer it. */
export function listView<T, V>(page: Page<T>, view: (item: T) => V): { object: 'list'; data: V[]; has_more: boolean } {
  return { object: 'list', data: page.data.map(view), has_more: page.hasMore };
}

export function usageView(u: UsageCountsRecord): Static<typeof UsageCounts> {
  return { requests: u.requests, input_tokens: u.inputTokens, output_tokens: u.outputTokens };
}

export function orgView(org: OrgRecord, token: string): Static<typeof Organization> {
  return { id: org.id, object: 'organization', name: org.name, token, created_at: iso(org.createdAt) };
}

/** The calling organisation and its settings (PATCH /v1/orgs/self). */
export function orgSettingsView(org: OrgRecord): Static<typeof OrganizationSettings> {
  const limit = org.spendLimitMicros ?? null;
  return { id: org.id, object: 'organization', name: org.name, created_at: iso(org.createdAt), spend_limit_usd: limit === null ? null : formatUsd(limit) };
}

export function credentialView(c: CredentialRecord, usage?: UsageCountsRecord): CredentialView {
  return {
    id: c.id,
    object: 'credential',
    provider: c.provider,
    // Plain fields (OpenAI's `organization`…): stored only under names the provider declares, and a
    // provider may not declare one of this view's own keys (catalog/registry.ts).
    ...(c.fields ?? {}),
    key_hint: c.keyHint,
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
    ...(usage ? { usage: usageView(usage) } : {}),
  };
}

export function tokenView(t: TokenRecord, now: number, usage?: UsageCountsRecord): Static<typeof Token> {
  return {
    id: t.id,
    object: 'token',
    credential_id: t.credentialId,
    status: now < t.expiresAt ? 'active' : 'expired',
    created_at: iso(t.createdAt),
    expires_at: iso(t.expiresAt),
    ...(t.scopes.models ? { models: t.scopes.models } : {}),
    ...(t.scopes.paths ? { paths: t.scopes.paths } : {}),
    ...(t.scopes.maxRequests !== undefined ? { max_requests: t.scopes.maxRequests } : {}),
    ...(t.scopes.rateLimit !== undefined ? { rate_limit: t.scopes.rateLimit } : {}),
    ...(t.scopes.budgetMicros !== undefined ? { budget_usd: formatUsd(t.scopes.budgetMicros) } : {}),
    ...(usage ? { usage: usageView(usage) } : {}),
  };
}

/** A token just minted: its value, shown this once. */
export function mintedTokenView(t: TokenRecord, token: string, now: number): Static<typeof TokenCreated> {
  const { id, object, ...rest } = tokenView(t, now);
  return { id, object, token, ...rest };
}

export function usageSummaryView(s: UsageSummary): Static<typeof Usage> {
  return {
    object: 'usage',
    period: s.period,
    proxy_requests: { used: s.proxyRequests.used, limit: s.proxyRequests.limit },
    credentials: { used: s.credentials.used, limit: s.credentials.limit },
    tokens: { input: s.tokens.input, output: s.tokens.output },
  };
}

export function auditView(a: AuditRecord): Static<typeof AuditEvent> {
  return {
    id: a.id, object: 'audit_event', time: iso(a.time), request_id: a.requestId, org: a.org,
    actor: a.actor, action: a.action, target: a.target, outcome: a.outcome, ip: a.ip, count: a.count,
  };
}
