/**
 * The team port (re-exported by ports.ts): a team is a named group of one organisation's people (members by
 * `usr_` id, or the identity provider's groups) with a monthly `budget_usd`, a `tokens_per_minute`, the
 * credentials and pools its tokens may use and the longest lifetime a token of it may have. A member's own
 * monthly budget is kept here too (`putMemberBudget`), keyed by the member's id within its organisation.
 * Adapters: sqlite/teams.ts, firestore/teams.ts; test/store/contract-teams.ts checks both.
 *
 * A token bound to a team carries the team's id (TokenRecord.teamId). Deleting a team deletes its tokens,
 * as deleting a pool deletes its tokens; every change (a limit, a membership, a deletion) is announced with a
 * `team` change in the same write, and a member budget's change with a `member` change, so every instance
 * applies it within a second.
 */

import type { BAD_CURSOR, NamedPageQuery, Page } from './paging.js';

export interface TeamRecord {
  id: string;
  orgId: string;
  name: string;
  /** Members by id (`usr_…`). */
  members: string[];
  /** The identity provider's group names whose members belong to the team. */
  groups: string[];
  /** The monthly spend cap (UTC calendar month) in micro-dollars; null: none. */
  budgetMicros: number | null;
  /** Input + output tokens per rolling minute over every token of the team; null: none. */
  tokensPerMinute: number | null;
  /** The credentials and pools (ids) the team's tokens may be minted for. */
  credentials: string[];
  pools: string[];
  /** The longest lifetime of a token of the team, in ms. */
  maxTtlMs: number;
  createdAt: number;
  updatedAt: number;
}

/** What a PATCH changes (absent: unchanged; a `null` limit removes it). */
export interface TeamUpdate {
  name?: string;
  members?: string[];
  groups?: string[];
  budgetMicros?: number | null;
  tokensPerMinute?: number | null;
  credentials?: string[];
  pools?: string[];
  maxTtlMs?: number;
  updatedAt: number;
}

/** One member's monthly budget. */
export interface MemberBudget {
  memberId: string;
  budgetMicros: number;
}

export interface TeamStore {
  createTeam(record: TeamRecord): Promise<void>;
  getTeam(orgId: string, id: string): Promise<TeamRecord | undefined>;
  /** Newest first; `namePrefix` as for pools. */
  listTeams(orgId: string, page: NamedPageQuery): Promise<Page<TeamRecord> | typeof BAD_CURSOR>;
  /** Applies `update` and announces the team; the record after it, or undefined (no such team of this org). */
  updateTeam(orgId: string, id: string, update: TeamUpdate): Promise<TeamRecord | undefined>;
  /** Deletes the team and every token bound to it, announcing the team; false: no such team of this org. */
  deleteTeam(orgId: string, id: string): Promise<boolean>;
  /** Sets (a number of µ$) or clears (null) a member's monthly budget and announces the member. */
  putMemberBudget(orgId: string, memberId: string, micros: number | null): Promise<void>;
  /** A member's monthly budget in µ$, or null (none). */
  getMemberBudget(orgId: string, memberId: string): Promise<number | null>;
  /** Every member of the organisation with a budget (a members page; bounded by the organisation's members). */
  listMemberBudgets(orgId: string): Promise<MemberBudget[]>;
}
