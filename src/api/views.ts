/**
 * Records → the JSON the contract shows, typed by the response schemas (src/api/schemas/): a view that
 * drifts from its documented shape does not compile. Shared by the API and the CLI. Never a secret:
 * keys and token values are not in records (a value shown once is passed in by its creator).
 */
import type { Static } from '@sinclair/typebox';
import type { TokenCapsView } from '../accounting/token-caps.js';
import type { Breakdown } from '../accounting/usage-breakdown.js';
import type { DayUsage, UsageSummary } from '../accounting/usage-summary.js';
import { formatUsd } from '../pricing/money.js';
import { subjectOf } from '../identity/issuer.js';
import { isPoolId, type AdminKeyRecord, AuditRecord, CredentialRecord, OrgRecord, Page, RevokedTokenRecord, TokenRecord, UsageCounts as UsageCountsRecord } from '../store/ports.js';
import type { AdminKey, AdminKeyCreated, Caller } from './schemas/admin-keys.js';
import type { CredentialView } from './schemas/credentials.js';
import type { ConnectionSummary } from '../vault/oauth-connections.js';
import type { Organization, OrganizationSettings, OrgSelf } from './schemas/orgs.js';
import type { Token, TokenCaps, TokenCreated } from './schemas/tokens.js';
import type { AuditEvent, Usage, UsageBreakdown, UsageCounts, UsageDay } from './schemas/usage.js';
import type { ActorInfo } from '../controls/audit-actors.js';

export const iso = (ms: number): string => new Date(ms).toISOString();

/** A page of records as the list endpoints answer it. */
export function listView<T, V>(page: Page<T>, view: (item: T) => V): { object: 'list'; data: V[]; has_more: boolean } {
  return { object: 'list', data: page.data.map(view), has_more: page.hasMore };
}

export function usageView(u: UsageCountsRecord): Static<typeof UsageCounts> {
  return { requests: u.requests, input_tokens: u.inputTokens, output_tokens: u.outputTokens, spend_usd: formatUsd(u.spendMicros) };
}

export function usageDayView(d: DayUsage): Static<typeof UsageDay> {
  return { date: d.date, requests: d.requests, input_tokens: d.inputTokens, output_tokens: d.outputTokens, spend_usd: formatUsd(d.spendMicros) };
}

export function usageBreakdownView(b: Breakdown): Static<typeof UsageBreakdown> {
  return {
    object: 'list', by: b.by, from: b.from, to: b.to,
    data: b.rows.map((r) => ({ key: r.key, ...(r.name !== undefined ? { name: r.name } : {}), ...usageView(r) })),
  };
}

export function orgView(org: OrgRecord, token: string): Static<typeof Organization> {
  return { id: org.id, object: 'organization', name: org.name, token, created_at: iso(org.createdAt) };
}

/** GET /v1/orgs/self: the organisation and who is calling (no token value). */
/** `issuer`: KEYWARD_ISSUER_URL, if this gateway is an OIDC issuer (then `federation` names the org's subject). */
export function orgSelfView(org: OrgRecord, caller: Static<typeof Caller>, issuer?: string): Static<typeof OrgSelf> {
  const limit = org.spendLimitMicros ?? null;
  return {
    id: org.id, object: 'organization', name: org.name, created_at: iso(org.createdAt), spend_limit_usd: limit === null ? null : formatUsd(limit),
    federation: issuer === undefined ? null : { issuer, subject: subjectOf(org.id) }, caller,
  };
}

export function adminKeyView(k: AdminKeyRecord, now: number): Static<typeof AdminKey> {
  return {
    id: k.id,
    object: 'admin_key',
    ...(k.name !== undefined ? { name: k.name } : {}),
    role: k.role,
    ...(k.credentialIds ? { credential_ids: k.credentialIds } : {}),
    status: k.expiresAt === null || now < k.expiresAt ? 'active' : 'expired',
    created_at: iso(k.createdAt),
    expires_at: k.expiresAt === null ? null : iso(k.expiresAt),
    created_by: k.createdBy,
  };
}

/** An admin key just created: its value, shown this once. */
export function createdAdminKeyView(k: AdminKeyRecord, token: string, now: number): Static<typeof AdminKeyCreated> {
  const { id, object, ...rest } = adminKeyView(k, now);
  return { id, object, token, ...rest };
}

/** The calling organisation and its settings (PATCH /v1/orgs/self). */
export function orgSettingsView(org: OrgRecord): Static<typeof OrganizationSettings> {
  const limit = org.spendLimitMicros ?? null;
  return { id: org.id, object: 'organization', name: org.name, created_at: iso(org.createdAt), spend_limit_usd: limit === null ? null : formatUsd(limit) };
}

export function credentialView(c: CredentialRecord, usage?: UsageCountsRecord, connection?: ConnectionSummary): CredentialView {
  return {
    id: c.id,
    object: 'credential',
    provider: c.provider,
    ...(c.name !== undefined ? { name: c.name } : {}),
    // Plain fields (OpenAI's `organization`…): stored only under names the provider declares, and a
    // provider may not declare one of this view's own keys (catalog/registry.ts). An OAuth credential's are its own.
    ...(c.fields?.kind === 'oauth' ? oauthFieldsView(c.fields, connection) : (c.fields ?? {})),
    key_hint: c.keyHint,
    created_at: iso(c.createdAt),
    updated_at: iso(c.updatedAt),
    ...(usage ? { usage: usageView(usage) } : {}),
  };
}

/** An upstream OAuth credential's plain fields (scopes as a list, per_member as a boolean) and its connection's state. */
function oauthFieldsView(fields: Readonly<Record<string, string>>, connection: ConnectionSummary | undefined): Record<string, unknown> {
  const { scopes, per_member: perMember, ...rest } = fields;
  return {
    ...rest, scopes: scopes ? scopes.split(' ') : [], per_member: perMember === 'true',
    connection: {
      state: connection?.state ?? 'not_connected',
      ...(connection?.connectedAt !== undefined ? { connected_at: iso(connection.connectedAt) } : {}),
      ...(connection?.updatedAt !== undefined ? { updated_at: iso(connection.updatedAt) } : {}),
      ...(connection?.members ? { members: connection.members } : {}),
    },
  };
}

/** A token's caps as read from their ledgers (accounting/token-caps.ts), in the API's units. */
export function tokenCapsView(c: TokenCapsView): Static<typeof TokenCaps> {
  return {
    ...(c.budget ? { budget_usd: { used: formatUsd(c.budget.used), held: formatUsd(c.budget.held), limit: formatUsd(c.budget.limit) } } : {}),
    ...(c.tokensPerMinute ? { tokens_per_minute: { used_in_window: c.tokensPerMinute.usedInWindow, held: c.tokensPerMinute.held, limit: c.tokensPerMinute.limit } } : {}),
    ...(c.maxRequests ? { max_requests: { used: c.maxRequests.used, held: c.maxRequests.held, limit: c.maxRequests.limit } } : {}),
  };
}

/** `usage` and `caps`: GET /v1/tokens/:id only. */
export function tokenView(t: Omit<TokenRecord, 'tokenHash'>, now: number, usage?: UsageCountsRecord, caps?: TokenCapsView): Static<typeof Token> {
  return {
    id: t.id,
    object: 'token',
    ...(isPoolId(t.credentialId) ? { pool_id: t.credentialId } : { credential_id: t.credentialId }),
    ...(t.name !== undefined ? { name: t.name } : {}),
    status: now < t.expiresAt ? 'active' : 'expired',
    created_at: iso(t.createdAt),
    expires_at: iso(t.expiresAt),
    ...(t.scopes.models ? { models: t.scopes.models } : {}),
    ...(t.scopes.paths ? { paths: t.scopes.paths } : {}),
    ...(t.scopes.maxRequests !== undefined ? { max_requests: t.scopes.maxRequests } : {}),
    ...(t.scopes.rateLimit !== undefined ? { rate_limit: t.scopes.rateLimit } : {}),
    ...(t.createdBy !== undefined ? { created_by: t.createdBy } : {}),
    ...(t.memberId !== undefined ? { member_id: t.memberId } : {}),
    ...(t.scopes.budgetMicros !== undefined ? { budget_usd: formatUsd(t.scopes.budgetMicros) } : {}),
    ...(t.scopes.tools !== undefined ? { tools: t.scopes.tools } : {}),
    ...(t.scopes.tokensPerMinute !== undefined ? { tokens_per_minute: t.scopes.tokensPerMinute } : {}),
    ...(t.scopes.maxConcurrent !== undefined ? { max_concurrent: t.scopes.maxConcurrent } : {}),
    ...(t.teamId !== undefined ? { team_id: t.teamId } : {}),
    ...(t.memberId !== undefined ? { member_id: t.memberId } : {}),
    ...(usage ? { usage: usageView(usage) } : {}),
    ...(caps ? { caps: tokenCapsView(caps) } : {}),
  };
}

/** What is kept of a revoked token (GET /v1/tokens?status=revoked). */
export function revokedTokenView(t: RevokedTokenRecord): Static<typeof Token> {
  return { ...tokenView(t, t.revokedAt), status: 'revoked', revoked_at: iso(t.revokedAt), revoked_by: t.revokedBy };
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
    proxy_requests: { used: s.proxyRequests.used, held: s.proxyRequests.held, limit: s.proxyRequests.limit },
    credentials: { used: s.credentials.used, limit: s.credentials.limit },
    tokens: { input: s.tokens.input, output: s.tokens.output },
    spend_usd: { used: formatUsd(s.spend.usedMicros), held: formatUsd(s.spend.heldMicros), limit: s.spend.limitMicros === null ? null : formatUsd(s.spend.limitMicros) },
  };
}

/** `actor`: the actor's name now and the member behind it, where it has them (controls/audit-actors.ts). */
export function auditView(a: AuditRecord, actor?: ActorInfo): Static<typeof AuditEvent> {
  return {
    id: a.id, object: 'audit_event', time: iso(a.time), request_id: a.requestId, org: a.org,
    actor: a.actor, ...(actor?.name !== undefined ? { actor_name: actor.name } : {}),
    ...(actor?.member !== undefined ? { member_id: actor.member.id, ...(actor.member.email !== null ? { member_email: actor.member.email } : {}) } : {}),
    action: a.action, target: a.target, ...(a.targetName !== undefined ? { target_name: a.targetName } : {}),
    outcome: a.outcome, ip: a.ip, count: a.count,
  };
}
