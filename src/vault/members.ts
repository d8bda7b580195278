/**
 * Members: the people of an organisation, made or updated at each sign-in by single sign-on (one per
 * issuer and subject). A sign-in is admitted only at an allowed e-mail domain (when the organisation
 * lists any; an address the provider marks unverified never counts), and takes the highest role its
 * groups map to (`admin` > `minter` > `viewer` > `member`). Removing a member deletes it and its sessions
 * in one store call (refused at once everywhere: sessions are read at each use), then revokes each of its
 * personal tokens (each revocation reaches every instance's token cache through the change feed within a
 * second), and ends every MCP grant it consented to (principal-removals.ts). A personal token minted while its
 * member is removed is revoked by its minter's own re-check.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import { newId } from '../ids.js';
import type { SignedInPerson } from '../identity/sso-client.js';
import { BAD_CURSOR, type MemberRecord, type MemberRole, type Page, type PageQuery, type PeopleStore, type SsoConfigRecord, type TokenRecord } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { PrincipalRemovals } from './principal-removals.js';
import { TokenService, type MintRequest } from './token-service.js';

/** Highest first: a member in several mapped groups takes the first of these it holds. */
const RANK: readonly MemberRole[] = ['admin', 'minter', 'viewer', 'member'];

/** Bounds on the groups kept of a sign-in (a team's `groups` match them): the first 100, each at most 200 characters. */
const GROUPS_KEPT = 100;
const GROUP_LENGTH_MAX = 200;

/** The group names in `claims[claim]` (an array of strings, or one string). */
function groupsIn(claims: Record<string, unknown>, claim: string | null): string[] {
  const raw = claim === null ? undefined : claims[claim];
  return Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string') : typeof raw === 'string' ? [raw] : [];
}

/** The role the groups in `claims[groupsClaim]` map to (the highest), or `member`. */
export function roleOf(config: Pick<SsoConfigRecord, 'groupsClaim' | 'roleMap'>, claims: Record<string, unknown>): MemberRole {
  const groups = groupsIn(claims, config.groupsClaim);
  const mapped = new Set(groups.flatMap((g) => (Object.hasOwn(config.roleMap, g) ? [config.roleMap[g]!] : [])));
  return RANK.find((r) => mapped.has(r)) ?? 'member';
}

@injectable()
export class MemberService {
  constructor(
    @inject(Symbols.PeopleStore) private readonly store: PeopleStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(PrincipalRemovals) private readonly removals: PrincipalRemovals,
  ) {}

  /** A verified person of `config`'s provider signs in: the member made or updated; 400 sign_in_failed outside the allowed domains. */
  async signIn(config: SsoConfigRecord, person: SignedInPerson): Promise<MemberRecord> {
    const claims = person.claims as Record<string, unknown>;
    const email = typeof claims.email === 'string' && claims.email.length <= 320 ? claims.email : null;
    const verified = claims.email_verified !== false;
    if (config.allowedDomains.length > 0) {
      const domain = email && verified ? email.slice(email.lastIndexOf('@') + 1).toLowerCase() : undefined;
      if (!domain || !config.allowedDomains.includes(domain)) {
        throw Errors.signInFailed('Your e-mail address is not at a domain this organisation allows (`allowed_domains`).');
      }
    }
    const name = typeof claims.name === 'string' ? claims.name.slice(0, 200) : null;
    // Kept for teams by group (`groups` of POST /v1/teams): the role map's claim, else the usual `groups`.
    const groups = [...new Set(groupsIn(claims, config.groupsClaim ?? 'groups').filter((g) => g.length <= GROUP_LENGTH_MAX))].slice(0, GROUPS_KEPT);
    const now = this.clock.now();
    return this.store.signInMember({
      id: newId('usr'), orgId: config.orgId, issuer: person.issuer, subject: person.subject, email, name,
      role: roleOf(config, claims), groups, budgetMicros: null, createdAt: now, lastSignInAt: now,
    });
  }

  /** The member, or undefined when the organisation has no member of that id. */
  async find(orgId: string, id: string): Promise<MemberRecord | undefined> {
    return (await this.store.getMember(orgId, id)) ?? undefined;
  }

  async get(orgId: string, id: string): Promise<MemberRecord> {
    const m = await this.store.getMember(orgId, id);
    if (!m) throw Errors.notFound('No such member.');
    return m;
  }

  async list(orgId: string, page: PageQuery): Promise<Page<MemberRecord>> {
    const p = await this.store.listMembers(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no member of this organisation.', 'starting_after');
    return p;
  }

  async setBudget(orgId: string, id: string, micros: number | null): Promise<MemberRecord> {
    if (!(await this.store.setMemberBudget(orgId, id, micros))) throw Errors.notFound('No such member.');
    return this.get(orgId, id);
  }

  /** Removes the member, its sessions and its personal tokens; `by` revokes (the audit actor). The member as it was. */
  async remove(orgId: string, id: string, by: string): Promise<MemberRecord> {
    const member = await this.get(orgId, id);
    if (!(await this.store.deleteMember(orgId, id))) throw Errors.notFound('No such member.');
    await this.revokeTokensOf(orgId, id, by);
    // Its MCP grants and their access and refresh tokens end with it.
    await this.removals.removed(id, by);
    return member;
  }

  /** A personal token for the member: bound to it (revoked with it), minted by it. */
  async mintPersonal(member: MemberRecord, request: Omit<MintRequest, 'memberId' | 'createdBy'>): Promise<{ record: TokenRecord; token: string }> {
    const minted = await this.tokens.mintFor(member.orgId, { ...request, createdBy: member.id, memberId: member.id });
    // Removed meanwhile: its revocation may have listed its tokens before this one existed.
    if (!(await this.store.getMember(member.orgId, member.id))) {
      await this.tokens.revoke(member.orgId, minted.record.id, member.id).catch(() => {});
      throw Errors.unauthenticated();
    }
    return minted;
  }

  private async revokeTokensOf(orgId: string, memberId: string, by: string): Promise<void> {
    for (const tokenId of await this.store.memberTokenIds(orgId, memberId)) {
      await this.tokens.revoke(orgId, tokenId, by).catch((err: unknown) => {
        // Revoked by someone else meanwhile: nothing left to do.
        if ((err as { code?: string }).code !== 'not_found') throw err;
      });
    }
  }
}
