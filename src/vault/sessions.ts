/**
 * Sessions of members signed in by single sign-on. A session's value (`kses_…`, the console's cookie or
 * `keyward login`'s bearer; `kref_…`, what renews a CLI session) is shown once and stored as its SHA-256
 * only. Every use reads the session and its member from the store (nothing is cached), so a member's
 * removal refuses its sessions at once on every instance. Lifetimes run on the injected clock: a browser
 * session at most 12 h, a CLI session 12 h, its refresh value 30 days and used once (each renewal gives a
 * new one). The console's anti-CSRF value is an HMAC of the session's hash under a deployment secret:
 * nothing more to store, and it says nothing of the cookie.
 */
import { timingSafeEqual } from 'node:crypto';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import { isWellFormedToken, newToken, sha256Hex } from '../ids.js';
import type { MemberRecord, OrgRecord, OrgStore, PeopleStore, SessionKind } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { DeploymentSecrets, SESSION_CSRF_KEY } from './deployment-secrets.js';
import type { OrgPrincipal } from './org-service.js';

export const BROWSER_SESSION_MS = 12 * 3_600_000;
export const CLI_SESSION_MS = 12 * 3_600_000;
export const REFRESH_MS = 30 * 86_400_000;
export const SESSION_COOKIE = 'keyward_session';

/** A signed-in member as the admin pipeline sees it. */
export interface SessionPrincipal extends OrgPrincipal {
  member: MemberRecord;
  /** The session's hash (sign-out deletes it). */
  sessionHash: string;
}

export interface IssuedSession {
  session: string;
  expiresAt: number;
}

@injectable()
export class SessionService {
  constructor(
    @inject(Symbols.PeopleStore) private readonly store: PeopleStore,
    @inject(Symbols.OrgStore) private readonly orgs: OrgStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(DeploymentSecrets) private readonly secrets: DeploymentSecrets,
  ) {}

  /** A new session of `kind` for the member; its value is returned once. */
  async issue(member: MemberRecord, kind: SessionKind): Promise<IssuedSession> {
    const now = this.clock.now();
    const session = newToken(kind === 'refresh' ? 'kref' : 'kses');
    const expiresAt = now + (kind === 'browser' ? BROWSER_SESSION_MS : kind === 'cli' ? CLI_SESSION_MS : REFRESH_MS);
    await this.store.createSession({ hash: sha256Hex(session), orgId: member.orgId, memberId: member.id, kind, createdAt: now, expiresAt });
    return { session, expiresAt };
  }

  /** A `kses_` value of `kind` → the member and its organisation, or 401 (unknown, expired, or its member removed). */
  async authenticate(presented: string, kind: 'browser' | 'cli'): Promise<SessionPrincipal> {
    if (!isWellFormedToken('kses', presented)) throw Errors.unauthenticated();
    const hash = sha256Hex(presented);
    const found = await this.live(hash, kind);
    return { ...found, sessionHash: hash };
  }

  /** `keyward login`'s renewal: the refresh value is used once (of two racing uses one wins); a new CLI session and refresh value. */
  async refresh(presented: string): Promise<{ cli: IssuedSession; refresh: IssuedSession; member: MemberRecord }> {
    if (!isWellFormedToken('kref', presented)) throw Errors.unauthenticated();
    const hash = sha256Hex(presented);
    const { member } = await this.live(hash, 'refresh');
    if (!(await this.store.deleteSession(hash))) throw Errors.unauthenticated();
    return { cli: await this.issue(member, 'cli'), refresh: await this.issue(member, 'refresh'), member };
  }

  /** Sign-out: the session is deleted (a second sign-out is a no-op). */
  async end(hash: string): Promise<void> {
    await this.store.deleteSession(hash);
  }

  /** The anti-CSRF value of a session (by its hash): what GET /v1/session answers and X-Keyward-CSRF must carry. */
  async csrf(hash: string): Promise<string> {
    return this.secrets.hmac(SESSION_CSRF_KEY, Buffer.from(hash, 'utf8'));
  }

  /** True when `header` is the session's anti-CSRF value (compared in constant time). */
  async csrfMatches(hash: string, header: string | string[] | undefined): Promise<boolean> {
    if (typeof header !== 'string' || header.length !== 64) return false;
    return timingSafeEqual(Buffer.from(header), Buffer.from(await this.csrf(hash)));
  }

  private async live(hash: string, kind: SessionKind): Promise<Omit<SessionPrincipal, 'sessionHash'>> {
    const s = await this.store.findSession(hash);
    if (!s || s.kind !== kind || this.clock.now() >= s.expiresAt) throw Errors.unauthenticated();
    const [member, org] = await Promise.all([this.store.getMember(s.orgId, s.memberId), this.orgs.getOrg(s.orgId)]);
    if (!member || !org) throw Errors.unauthenticated();
    return { org: org as OrgRecord, member, tokenId: member.id, role: member.role, expiresAt: s.expiresAt, retiring: false };
  }
}

/** The session cookie's value in a Cookie header; undefined when absent or given twice (ambiguous: neither counts). */
export function sessionCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const values = header.split(';').map((p) => p.trim()).filter((p) => p.startsWith(`${SESSION_COOKIE}=`)).map((p) => p.slice(SESSION_COOKIE.length + 1));
  return values.length === 1 ? values[0] : undefined;
}
