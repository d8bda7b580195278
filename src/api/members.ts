/**
 * /v1/members: the organisation's people (made at their first sign-in by single sign-on). Listed by
 * readers; removed (its sessions and personal tokens revoked at once, on every instance) or given a monthly
 * budget by admins. POST /v1/members/self/tokens mints a personal proxy token for the signed-in member
 * (`keyward token`): 1 hour unless `ttl` says otherwise, bound to the member (`member_id`) and to its team when
 * it has one (`team_id`: the team's credentials and pools only, lifetime cut to the team's `max_ttl`), minted by it.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { MemberService } from '../vault/members.js';
import { TeamService } from '../vault/team-service.js';
import { TokenService } from '../vault/token-service.js';
import { formatUsd } from '../pricing/money.js';
import { OrgService } from '../vault/org-service.js';
import { EVERYONE } from '../vault/roles.js';
import { orgOf } from './params.js';
import { memberView } from './people-views.js';
import { MEMBER_UPDATE, Member, MemberList, MemberRemoved, PERSONAL_TOKEN_CREATE } from './schemas/people.js';
import { PAGE } from './schemas/query.js';
import { MemberBudgetView } from './schemas/teams.js';
import { Type } from '@sinclair/typebox';
import { TokenCreated } from './schemas/tokens.js';
import { listView, mintedTokenView } from './views.js';

@injectable()
export class MembersApi {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(MemberService) private readonly members: MemberService,
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(TeamService) private readonly teams: TeamService,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {}

  register(router: Router): void {
    router.add('GET', '/v1/members', {
      auth: 'org', query: PAGE, operationId: 'listMembers', tag: 'members', summary: 'List members',
      response: { status: 200, schema: MemberList, description: 'A page of members, newest first.' },
    }, async (r) => ({ status: 200, body: listView(await this.members.list(orgOf(r).id, r.query), memberView) }));

    router.add('PATCH', '/v1/members/:id', {
      auth: 'org', action: 'member.update', body: MEMBER_UPDATE, operationId: 'updateMember', tag: 'members', summary: 'Set a member\'s monthly budget',
      description: '`budget_usd`: what the member\'s requests may cost per UTC calendar month (null: none).',
      response: { status: 200, schema: Type.Union([Member, MemberBudgetView]), description: 'The member (a member id no one signed in with yet: its budget alone, for the tokens minted with that `member_id`).' },
      errors: ['not_found'],
    }, async (r) => {
      const { budget_usd: budget } = await r.body();
      const micros = budget === null ? null : this.orgs.parseSpendLimit(budget);
      const orgId = orgOf(r).id;
      // The budget the gateway enforces is the team service's (every token bound to the id counts, admin-minted ones
      // with a `member_id` included); a member signed in by single sign-on also shows it on its record.
      await this.teams.setMemberBudget(orgId, r.params.id!, micros);
      const member = await this.members.find(orgId, r.params.id!);
      if (member === undefined) return { status: 200, body: { id: r.params.id!, object: 'member' as const, budget_usd: micros === null ? null : formatUsd(micros) } };
      const updated = await this.members.setBudget(orgId, r.params.id!, micros);
      return { status: 200, body: memberView(updated), ...(updated.email ? { targetName: updated.email } : {}) };
    });

    router.add('DELETE', '/v1/members/:id', {
      auth: 'org', action: 'member.delete', operationId: 'removeMember', tag: 'members', summary: 'Remove a member',
      description: 'Its sessions are refused at once and its personal tokens revoked, on every instance within a second. (A person the provider still admits can sign in again as a new member: remove them at the provider too.)',
      response: { status: 200, schema: MemberRemoved, description: 'Removed.' },
      errors: ['not_found'],
    }, async (r) => {
      const p = r.principal;
      const gone = await this.members.remove(orgOf(r).id, r.params.id!, p.kind === 'org' ? p.actor : 'admin');
      return { status: 200, body: { id: gone.id, object: 'member' as const, deleted: true as const }, ...(gone.email ? { targetName: gone.email } : {}) };
    });

    router.add('POST', '/v1/members/self/tokens', {
      auth: 'org', roles: EVERYONE, action: 'token.create', idempotent: true, body: PERSONAL_TOKEN_CREATE, operationId: 'createPersonalToken', tag: 'members', summary: 'Mint a personal proxy token',
      description: 'For the signed-in member only (its session: cookie or `keyward login`\'s bearer): a `ptok_…` bound to the member (`member_id`) and to its team (`team_id`: a team that lists the member, else one of its provider groups), 1 hour unless `ttl` says otherwise, cut to the team\'s `max_ttl`, ending with the session at the latest. A member of a team mints only for the team\'s credentials and pools (else 403 `forbidden`). What `keyward token` prints.',
      response: { status: 201, schema: TokenCreated, description: 'The token (its value shown once).' },
      errors: ['invalid_ttl', 'not_found', 'forbidden'],
    }, async (r) => {
      const p = r.principal;
      const input = await r.body();
      if (p.kind !== 'org' || !p.session) throw Errors.invalidRequest('Personal tokens are minted by a member\'s session (`keyward login`, or the console signed in by single sign-on), not by an organisation token or admin key.');
      const member = await this.members.get(p.org.id, p.actor);
      // Bound to the member's team when it has one: the team's credentials and pools only, within its max_ttl.
      const team = await this.teams.teamOf(member.orgId, member.id, member.groups ?? []);
      const ttl = team ? this.withinTeam(input.ttl ?? '1h', team.maxTtlMs) : input.ttl ?? '1h';
      const { record, token } = await this.members.mintPersonal(member, {
        credentialId: input.credential_id, poolId: input.pool_id, ttl, scopes: {}, name: input.name, creator: p, ...(team ? { teamId: team.id } : {}),
      });
      return { status: 201, body: mintedTokenView(record, token, this.clock.now()), secretFields: ['token'], ...(member.email ? { targetName: member.email } : {}) };
    });
  }

  /** The asked lifetime (checked as every ttl is), or the team's max_ttl when that is shorter: the smaller of the two. */
  private withinTeam(ttl: unknown, maxTtlMs: number): unknown {
    const asked = this.tokens.parseTtl(ttl);
    return asked <= maxTtlMs ? ttl : `${Math.floor(maxTtlMs / 1000)}s`;
  }
}
