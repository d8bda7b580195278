/**
 * Every action the audit trail records, in one list: what the console's filter offers, what the API's document
 * lists, and (through AuditEntry's type) the only actions the core may record. A plugin's own actions reach the
 * trail through the plugin host and are listed once seen. Free of imports: the console bundles it too.
 */
export const AUDIT_ACTIONS = [
  'org.create', 'org.update', 'org.token_rotate',
  'credential.create', 'credential.update', 'credential.rotate', 'credential.delete', 'credential.connect', 'credential.disconnect',
  'token.create', 'token.update', 'token.revoke', 'token.exchange',
  'admin_key.create', 'admin_key.update', 'admin_key.revoke',
  'trust_policy.create', 'trust_policy.delete',
  'pool.create', 'pool.update', 'pool.delete',
  'sso.update', 'member.sign_in', 'member.update', 'member.delete', 'session.delete',
  'team.create', 'team.update', 'team.delete',
  'mcp.tool_call',
  'mcp_client.register', 'mcp_grant.consent', 'mcp_grant.deny', 'mcp_grant.token', 'mcp_grant.refresh', 'mcp_grant.revoke', 'mcp_grant.replay',
  'auth.failed', 'quota.refused', 'budget.refused', 'admin.rate_limited',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];
