/**
 * Teams (src/store/team-port.ts) and members' monthly budgets: CRUD for the admin API and the CLI, the checks a
 * token bound to a team must pass at mint, and the month's spend charged to a budget set mid-month.
 *
 * A team takes `credentials` and `pools` (ids of this organisation, else 404), `members` (`usr_` ids) and
 * `groups` (the identity provider's group names), a monthly `budget_usd`, a `tokens_per_minute` and a
 * `max_ttl`. A token minted for a team (`team_id`) must use one of its credentials or pools (else 403) and
 * live no longer than its `max_ttl` (else 400 invalid_ttl); one minted for a member (`member_id`) of a team
 * that lists members must be one of them (else 400).
 *
 * Budgets nest: a request of a team's token is reserved under its token's, member's, team's and the
 * organisation's caps, each its own lease counter (accounting/spend-ledger.ts), so each holds exactly. A
 * budget set on a team or member that spent this month already (with no budget) counts that spend at once,
 * as an organisation's new spend limit does.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { parseDuration } from '../settings/config.js';
import { Errors } from '../errors.js';
import { isId, newId } from '../ids.js';
import { parseUsd } from '../pricing/money.js';
import { SpendLedger } from '../accounting/spend-ledger.js';
import { UsageBreakdowns } from '../accounting/usage-breakdown.js';
import { usedAndHeld } from '../accounting/usage-summary.js';
import { BAD_CURSOR, type CredentialStore, type LeaseStore, type MemberBudget, type NamedPageQuery, type Page, type PoolStore, type TeamRecord, type TeamStore, type TeamUpdate } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { parseName } from './names.js';
import { TeamLimits } from './team-limits.js';

/** Bounds on a team's lists (a team's record is read whole on a token's first use: kept small). */
export const TEAM_MEMBERS_MAX = 1000;
export const TEAM_GROUPS_MAX = 100;
export const TEAM_GRANTS_MAX = 100;
/** Teams read when looking for a member's team: 100 pages of 100 (an organisation's teams are few). */
const TEAM_PAGES_MAX = 100;
/** A member's id: `usr_` and what the members' records use (letters and digits). */
export const MEMBER_ID = /^usr_[0-9A-Za-z]{1,64}$/;

/** What POST /v1/teams and PATCH take, checked by the schema already (shapes); the rest here. */
export interface TeamInput {
  name?: unknown;
  members?: string[];
  groups?: string[];
  budget_usd?: string | null;
  tokens_per_minute?: number | null;
  credentials?: string[];
  pools?: string[];
  max_ttl?: string;
}

/** Tokens' `team_id` / `member_id` as POST /v1/tokens takes them. */
export interface TeamBinding {
  teamId?: string | undefined;
  memberId?: string | undefined;
}

const distinct = (list: string[], field: string): string[] => {
  if (new Set(list).size !== list.length) throw Errors.invalidRequest(`\`${field}\` must not name anything twice.`, field);
  return list;
};

@injectable()
export class TeamService {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.TeamStore) private readonly store: TeamStore,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.PoolStore) private readonly pools: PoolStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(TeamLimits) private readonly limits: TeamLimits,
    @inject(SpendLedger) private readonly spend: SpendLedger,
    @inject(UsageBreakdowns) private readonly breakdowns: UsageBreakdowns,
    @inject(Symbols.LeaseStore) private readonly leases: LeaseStore,
  ) {}

  async create(orgId: string, input: TeamInput): Promise<TeamRecord> {
    const name = parseName(input.name);
    if (typeof name !== 'string') throw Errors.invalidRequest('`name` is required.', 'name');
    if (input.max_ttl === undefined) throw Errors.invalidTtl('`max_ttl` is required: the longest lifetime of a token of the team, such as "8h".', 'max_ttl');
    const now = this.clock.now();
    const record: TeamRecord = {
      id: newId('team'), orgId, name, members: distinct(input.members ?? [], 'members'), groups: distinct(input.groups ?? [], 'groups'),
      budgetMicros: this.budget(input.budget_usd) ?? null, tokensPerMinute: input.tokens_per_minute ?? null,
      credentials: await this.checkCredentials(orgId, input.credentials ?? []), pools: await this.checkPools(orgId, input.pools ?? []),
      maxTtlMs: this.maxTtl(input.max_ttl), createdAt: now, updatedAt: now,
    };
    await this.store.createTeam(record);
    return record;
  }

  async get(orgId: string, id: string): Promise<TeamRecord> {
    const t = await this.store.getTeam(orgId, id);
    if (!t) throw Errors.notFound('No such team.');
    return t;
  }

  async list(orgId: string, page: NamedPageQuery): Promise<Page<TeamRecord>> {
    const p = await this.store.listTeams(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no team of this organisation.', 'starting_after');
    return p;
  }

  /** A PATCH: any field; `budget_usd` or `tokens_per_minute` null removes it. This instance applies it at once, the others within a second. */
  async update(orgId: string, id: string, input: TeamInput): Promise<TeamRecord> {
    const current = await this.get(orgId, id);
    const name = parseName(input.name);
    if (name === null) throw Errors.invalidRequest('A team\'s `name` cannot be removed.', 'name');
    const budget = this.budget(input.budget_usd);
    const update: TeamUpdate = {
      updatedAt: this.clock.now(),
      ...(name !== undefined ? { name } : {}),
      ...(input.members !== undefined ? { members: distinct(input.members, 'members') } : {}),
      ...(input.groups !== undefined ? { groups: distinct(input.groups, 'groups') } : {}),
      ...(budget !== undefined ? { budgetMicros: budget } : {}),
      ...(input.tokens_per_minute !== undefined ? { tokensPerMinute: input.tokens_per_minute } : {}),
      ...(input.credentials !== undefined ? { credentials: await this.checkCredentials(orgId, input.credentials) } : {}),
      ...(input.pools !== undefined ? { pools: await this.checkPools(orgId, input.pools) } : {}),
      ...(input.max_ttl !== undefined ? { maxTtlMs: this.maxTtl(input.max_ttl) } : {}),
    };
    // A budget where there was none: the month's spend so far counts against it (it was leased under no key).
    if (budget != null && current.budgetMicros === null) await this.spend.seedMonth(this.spend.teamCap(id, budget), await this.monthSpend(orgId, 'team', id));
    const updated = await this.store.updateTeam(orgId, id, update);
    if (!updated) throw Errors.notFound('No such team.');
    this.limits.forgetTeam(id);
    return updated;
  }

  /** Deletes the team and its tokens (refused at once here, within a second everywhere); what it was. */
  async delete(orgId: string, id: string): Promise<TeamRecord> {
    const current = await this.get(orgId, id);
    if (!(await this.store.deleteTeam(orgId, id))) throw Errors.notFound('No such team.');
    this.limits.forgetTeam(id);
    return current;
  }

  /**
   * The team a member belongs to: one that lists its id, else one that lists one of its provider groups; the
   * oldest such team when several do (a person's personal tokens then go to one team, the same one each time).
   * Undefined: no team names the member.
   */
  async teamOf(orgId: string, memberId: string, groups: readonly string[]): Promise<TeamRecord | undefined> {
    let byMember: TeamRecord | undefined;
    let byGroup: TeamRecord | undefined;
    // Newest first: the last match seen is the oldest.
    for (let startingAfter: string | undefined, pages = 0; pages < TEAM_PAGES_MAX; pages++) {
      const page = await this.store.listTeams(orgId, { limit: 100, ...(startingAfter ? { startingAfter } : {}) });
      if (page === BAD_CURSOR) break;
      for (const team of page.data) {
        if (team.members.includes(memberId)) byMember = team;
        else if (team.groups.some((g) => groups.includes(g))) byGroup = team;
      }
      if (!page.hasMore || page.data.length === 0) break;
      startingAfter = page.data[page.data.length - 1]!.id;
    }
    return byMember ?? byGroup;
  }

  /**
   * Sets (µ$) or clears (null) a member's monthly budget: what `PATCH /v1/members/:id {"budget_usd"}` calls. The
   * month's spend of the member's tokens so far counts against a new budget.
   */
  async setMemberBudget(orgId: string, memberId: string, micros: number | null): Promise<void> {
    if (!MEMBER_ID.test(memberId)) throw Errors.notFound('No such member.');
    if (micros !== null && (await this.store.getMemberBudget(orgId, memberId)) === null) {
      await this.spend.seedMonth(this.spend.memberCap(orgId, memberId, micros), await this.monthSpend(orgId, 'member', memberId));
    }
    await this.store.putMemberBudget(orgId, memberId, micros);
    this.limits.forgetMember(memberId);
  }

  memberBudget(orgId: string, memberId: string): Promise<number | null> {
    return this.store.getMemberBudget(orgId, memberId);
  }

  memberBudgets(orgId: string): Promise<MemberBudget[]> {
    return this.store.listMemberBudgets(orgId);
  }

  /**
   * A token being minted for a team or member: the team exists (404), the credential or pool is one of the team's
   * (403), its lifetime within the team's `max_ttl` (400 invalid_ttl), and its member listed when the team lists
   * members (400). Nothing to check without a binding.
   */
  async checkMint(orgId: string, binding: TeamBinding, boundTo: string, ttlMs: number): Promise<void> {
    const { teamId, memberId } = binding;
    if (memberId !== undefined && !MEMBER_ID.test(memberId)) throw Errors.invalidRequest('`member_id` must be a member\'s id (`usr_…`).', 'member_id');
    if (teamId === undefined) return;
    if (!isId('team', teamId)) throw Errors.notFound('No such team.');
    const team = await this.get(orgId, teamId);
    if (!team.credentials.includes(boundTo) && !team.pools.includes(boundTo)) {
      throw Errors.forbidden('This team\'s tokens may use only the team\'s credentials and pools.');
    }
    if (ttlMs > team.maxTtlMs) throw Errors.invalidTtl(`\`ttl\` may be at most ${team.maxTtlMs / 1000} seconds (the team's max_ttl).`);
    if (memberId !== undefined && team.members.length > 0 && team.groups.length === 0 && !team.members.includes(memberId)) {
      throw Errors.invalidRequest('`member_id` is not a member of this team.', 'member_id');
    }
  }

  /**
   * A budgeted team's month from the ledger its refusals read (as a token's caps are shown: accounting/token-caps.ts):
   * `used` and `held` in µ$; undefined without a budget. One store read, on an admin read only.
   */
  async spendOf(team: TeamRecord): Promise<{ used: number; held: number } | undefined> {
    if (team.budgetMicros === null) return undefined;
    const [ledger, counted] = await Promise.all([
      this.leases.leaseLedger(this.spend.teamCap(team.id, team.budgetMicros).key, this.clock.now()),
      this.monthSpend(team.orgId, 'team', team.id),
    ]);
    return usedAndHeld(ledger, counted, team.budgetMicros);
  }

  /** This month's spend of the team's or member's tokens (µ$). */
  private async monthSpend(orgId: string, by: 'team' | 'member', id: string): Promise<number> {
    const rows = (await this.breakdowns.of(orgId, by, {})).rows;
    return rows.find((r) => r.key === id)?.spendMicros ?? 0;
  }

  /** A member's `budget_usd` → µ$ (400 unless a decimal string above 0 with at most six places). */
  parseBudget(value: string): number {
    return this.budget(value)!;
  }

  /** `budget_usd` → µ$ (undefined: absent; null: removed): a decimal string above 0 with at most six places, else 400. */
  private budget(value: string | null | undefined): number | null | undefined {
    if (value === undefined || value === null) return value;
    const micros = parseUsd(value);
    if (micros === undefined || micros <= 0) throw Errors.invalidRequest('`budget_usd` must be a decimal string of US dollars above 0 with at most six decimal places, such as "500.00", or null.', 'budget_usd');
    return micros;
  }

  private maxTtl(ttl: string): number {
    const ms = parseDuration(ttl);
    if (ms === undefined) throw Errors.invalidTtl('`max_ttl` must be a positive integer without leading zeros and one unit of s, m, h, d, such as "8h".', 'max_ttl');
    if (ms > this.config.maxTtlMs) throw Errors.invalidTtl(`\`max_ttl\` may be at most ${this.config.maxTtlMs / 1000} seconds (KEYWARD_MAX_TTL).`, 'max_ttl');
    return ms;
  }

  private async checkCredentials(orgId: string, ids: string[]): Promise<string[]> {
    distinct(ids, 'credentials');
    const found = await Promise.all(ids.map((id) => this.credentials.getCredential(orgId, id)));
    const missing = found.findIndex((c) => c === undefined);
    if (missing !== -1) throw Errors.notFound(`No such credential: ${ids[missing]}.`);
    return ids;
  }

  private async checkPools(orgId: string, ids: string[]): Promise<string[]> {
    distinct(ids, 'pools');
    const found = await Promise.all(ids.map((id) => this.pools.getPool(orgId, id)));
    const missing = found.findIndex((p) => p === undefined);
    if (missing !== -1) throw Errors.notFound(`No such pool: ${ids[missing]}.`);
    return ids;
  }
}
