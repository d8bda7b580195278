/** The wire views of single sign-on, members and sessions (schemas/people.ts): never a secret but the one shown at creation. */
import type { Static } from '@sinclair/typebox';
import { formatUsd } from '../pricing/money.js';
import type { MemberRecord, SsoConfigRecord } from '../store/ports.js';
import type { Member, SsoConfig } from './schemas/people.js';
import { iso } from './views.js';

export function ssoConfigView(c: SsoConfigRecord, redirectUri: string): Static<typeof SsoConfig> {
  return {
    object: 'sso_config', issuer: c.issuer, client_id: c.clientId, client_secret_hint: `…${c.secretHint}`, allowed_domains: c.allowedDomains,
    groups_claim: c.groupsClaim, role_map: c.roleMap, redirect_uri: redirectUri, updated_at: iso(c.updatedAt),
  };
}

export function memberView(m: MemberRecord): Static<typeof Member> {
  return {
    id: m.id, object: 'member', email: m.email, name: m.name, role: m.role, issuer: m.issuer, subject: m.subject,
    budget_usd: m.budgetMicros === null ? null : formatUsd(m.budgetMicros), created_at: iso(m.createdAt), last_sign_in_at: iso(m.lastSignInAt),
  };
}

/** A cookie's attributes: HttpOnly always, Secure unless the gateway's public URL is plain http (loopback only). */
export function cookie(name: string, value: string, options: { path: string; maxAgeS: number; sameSite: 'Strict' | 'Lax'; secure: boolean; readable?: boolean }): string {
  return `${name}=${value}; Path=${options.path}; Max-Age=${options.maxAgeS}${options.readable ? '' : '; HttpOnly'}; SameSite=${options.sameSite}${options.secure ? '; Secure' : ''}`;
}
