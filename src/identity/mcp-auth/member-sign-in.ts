/**
 * The consent page's sign-in by a member's single sign-on session: the console's cookie (`keyward_session`,
 * HttpOnly, SameSite=Strict, path /v1, so the authorization page at /v1/oauth/authorize receives it on a
 * navigation the person starts) names the member, who then consents without pasting anything. The grant and
 * every token from it carry the member's `usr_…` id, so removing the member ends them (revokePrincipal). A
 * member of a team consents only for the team's credentials. Without a live session the page falls back to the
 * form's org token or admin key (OrgKeySignIn): pasted keys keep working.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ApiError } from '../../errors.js';
import type { MemberRecord } from '../../store/ports.js';
import { sessionCookie, type SessionService } from '../../vault/sessions.js';
import type { ConsentPrincipal, ConsentSignIn } from './principals.js';

/** The credentials and pools a member's team allows (undefined: the member is in no team). */
export type TeamGrantsOf = (member: MemberRecord) => Promise<{ credentials: readonly string[]; pools: readonly string[] } | undefined>;

export class MemberSessionSignIn implements ConsentSignIn {
  constructor(
    private readonly sessions: Pick<SessionService, 'authenticate'>,
    private readonly teamGrantsOf: TeamGrantsOf,
    private readonly fallback: ConsentSignIn,
  ) {}

  async current(headers: IncomingHttpHeaders): Promise<ConsentPrincipal | undefined> {
    const value = sessionCookie(headers.cookie);
    if (value === undefined) return this.fallback.current(headers);
    let member: MemberRecord;
    try {
      member = (await this.sessions.authenticate(value, 'browser')).member;
    } catch (err) {
      // An ended session, or its member removed: the page asks for a sign-in as if there were no cookie.
      if (err instanceof ApiError && err.status === 401) return this.fallback.current(headers);
      throw err;
    }
    const team = await this.teamGrantsOf(member);
    // The member's authority lasts until it is removed (its removal revokes every grant it gave), not its session's 12 hours.
    const shownAs = member.email ?? member.name ?? undefined;
    return { id: member.id, orgId: member.orgId, expiresAt: null, ...(team ? { credentialIds: team.credentials } : {}), ...(shownAs ? { shownAs } : {}) };
  }

  fromForm(fields: Readonly<Record<string, string>>): Promise<ConsentPrincipal> {
    return this.fallback.fromForm(fields);
  }
}
