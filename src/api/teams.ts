/**
 * /v1/teams: create, list (by name prefix too), read (with this month's spend against its budget), change and
 * delete teams (owner or admin; viewers read); and PATCH /v1/members/:id's `budget_usd`, a member's monthly
 * budget (the team service's `setMemberBudget`, called by PATCH /v1/members/:id in members.ts). Deleting a team deletes its tokens, at once here and within
 * a second on every other instance; a change of its limits applies likewise.
 */
import type { Static } from '@sinclair/typebox';
import { inject, injectable } from 'tsyringe';
import type { Router } from '../http/router.js';
import { formatUsd } from '../pricing/money.js';
import type { TeamRecord } from '../store/ports.js';
import { TeamService } from '../vault/team-service.js';
import { READERS } from '../vault/roles.js';
import { orgOf } from './params.js';
import { NAMED_PAGE } from './schemas/query.js';
import { MEMBER_BUDGET_CHANGE, MemberBudgetView, Team, TEAM_CREATE, TEAM_UPDATE, TeamDeleted, TeamList } from './schemas/teams.js';
import { listView } from './views.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export function teamView(t: TeamRecord, spend?: { used: number; held: number }): Static<typeof Team> {
  return {
    id: t.id, object: 'team', name: t.name, members: t.members, groups: t.groups, credentials: t.credentials, pools: t.pools,
    ...(t.budgetMicros !== null ? { budget_usd: formatUsd(t.budgetMicros) } : {}),
    ...(t.tokensPerMinute !== null ? { tokens_per_minute: t.tokensPerMinute } : {}),
    max_ttl: `${Math.floor(t.maxTtlMs / 1000)}s`,
    ...(spend ? { spend: { used: formatUsd(spend.used), held: formatUsd(spend.held) } } : {}),
    created_at: iso(t.createdAt), updated_at: iso(t.updatedAt),
  };
}

@injectable()
export class TeamsApi {
  constructor(@inject(TeamService) private readonly teams: TeamService) {}

  register(router: Router): void {
    router.add('POST', '/v1/teams', {
      auth: 'org', roles: ['owner', 'admin'], action: 'team.create', idempotent: true, body: TEAM_CREATE,
      operationId: 'createTeam', tag: 'teams', summary: 'Create a team',
      description: 'People (`members`, `groups`) with a monthly `budget_usd` and a `tokens_per_minute` shared by every token minted for the team (`team_id` on POST /v1/tokens), the `credentials` and `pools` those tokens may use (404 for one that is not this organisation\'s), and `max_ttl`, their longest lifetime (at most KEYWARD_MAX_TTL). Budgets nest: a request is admitted only if its worst case fits its token\'s, member\'s and team\'s budgets and the organisation\'s spend limit.',
      response: { status: 201, schema: Team, description: 'The team.' },
      errors: ['invalid_ttl', 'invalid_scope', 'not_found'],
    }, async (r) => ({ status: 201, body: teamView(await this.teams.create(orgOf(r).id, await r.body())) }));

    router.add('GET', '/v1/teams', {
      auth: 'org', roles: READERS, query: NAMED_PAGE, operationId: 'listTeams', tag: 'teams', summary: 'List teams',
      description: '`name` keeps those whose name starts with it (case-insensitive).',
      response: { status: 200, schema: TeamList, description: 'A page of teams, newest first.' },
    }, async (r) => ({ status: 200, body: listView(await this.teams.list(orgOf(r).id, r.query), (t) => teamView(t)) }));

    router.add('GET', '/v1/teams/:id', {
      auth: 'org', roles: READERS, operationId: 'getTeam', tag: 'teams', summary: 'Get a team, with this month\'s spend',
      description: 'With a budget, `spend` shows this month\'s `used` and `held` from the ledger its refusals read.',
      response: { status: 200, schema: Team, description: 'The team.' },
      errors: ['not_found'],
    }, async (r) => {
      const team = await this.teams.get(orgOf(r).id, r.params.id!);
      return { status: 200, body: teamView(team, await this.teams.spendOf(team)) };
    });

    router.add('PATCH', '/v1/teams/:id', {
      auth: 'org', roles: ['owner', 'admin'], action: 'team.update', body: TEAM_UPDATE, operationId: 'updateTeam', tag: 'teams', summary: 'Change a team',
      description: 'Any field; `budget_usd` or `tokens_per_minute` null removes it. A new budget counts this month\'s spend of the team\'s tokens so far. Every instance applies a change within a second; tokens already minted keep their credential and lifetime.',
      response: { status: 200, schema: Team, description: 'The team after the change.' },
      errors: ['invalid_ttl', 'invalid_scope', 'not_found'],
    }, async (r) => ({ status: 200, body: teamView(await this.teams.update(orgOf(r).id, r.params.id!, await r.body())) }));

    router.add('DELETE', '/v1/teams/:id', {
      auth: 'org', roles: ['owner', 'admin'], action: 'team.delete', operationId: 'deleteTeam', tag: 'teams', summary: 'Delete a team and its tokens',
      description: 'Its tokens are refused at once on this instance, within a second on every other; a second DELETE → 404.',
      response: { status: 200, schema: TeamDeleted, description: 'Deleted.' },
      errors: ['not_found'],
    }, async (r) => {
      const gone = await this.teams.delete(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: gone.id, object: 'team' as const, deleted: true as const }, targetName: gone.name };
    });
  }
}
