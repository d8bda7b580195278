/** Records → the JSON the contract shows. Never a secret: keys and token values are not in records. */
import type { AuditRecord, CredentialRecord, TokenRecord, UsageCounts } from '../store/ports.js';

export const iso = (ms: number): string => new Date(ms).toISOString();

export function usageView(u: UsageCounts) {
  return { requests: u.requests, input_tokens: u.inputTokens, output_tokens: u.outputTokens };
}

export function credentialView(c: CredentialRecord, usage?: UsageCounts) {
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

export function tokenView(t: TokenRecord, now: number, usage?: UsageCounts) {
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
    ...(usage ? { usage: usageView(usage) } : {}),
  };
}

export function auditView(a: AuditRecord) {
  return {
    id: a.id, object: 'audit_event', time: iso(a.time), request_id: a.requestId, org: a.org,
    actor: a.actor, action: a.action, target: a.target, outcome: a.outcome, ip: a.ip, count: a.count,
  };
}
