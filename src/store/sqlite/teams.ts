/**
 * The SQLite store's teams (team-port.ts): one row each, members, groups, credentials and pools as JSON;
 * member budgets one row per (organisation, member). Its tables, and the tokens' `team_id` and `member_id`
 * columns (a file made before teams gets them added), are made here (createSchema calls
 * `createTeamTables`). Every change is one write transaction with the change that announces it; a
 * deletion removes the team's tokens in the same transaction.
 */
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, type MemberBudget, type NamedPageQuery, type Page, type TeamRecord, type TeamStore, type TeamUpdate } from '../ports.js';
import { publishChange } from './changes.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

export function createTeamTables(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS teams (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, name TEXT NOT NULL, name_key TEXT NOT NULL, members TEXT NOT NULL, groups_ TEXT NOT NULL,
  budget_micros INTEGER, tokens_per_minute INTEGER, credentials TEXT NOT NULL, pools TEXT NOT NULL, max_ttl_ms INTEGER NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS teams_org_created ON teams(org_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS member_budgets (
  org_id TEXT NOT NULL, member_id TEXT NOT NULL, budget_micros INTEGER NOT NULL, PRIMARY KEY (org_id, member_id)
) STRICT;
`);
  // Tokens bound to a team or a member (a tokens table made before teams has neither column).
  const missing = () => ['tokens', 'revoked_tokens'].some((t) => !db.all(`PRAGMA table_info(${t})`).some((c) => c.name === 'team_id'));
  if (!missing()) return;
  db.tx(() => {
    for (const table of ['tokens', 'revoked_tokens']) {
      const has = new Set(db.all(`PRAGMA table_info(${table})`).map((c) => c.name as string));
      if (!has.has('team_id')) db.run(`ALTER TABLE ${table} ADD COLUMN team_id TEXT`);
      if (!has.has('member_id')) db.run(`ALTER TABLE ${table} ADD COLUMN member_id TEXT`);
    }
    db.run('CREATE INDEX IF NOT EXISTS tokens_team ON tokens(team_id)');
  });
}

const toTeam = (r: Row): TeamRecord => ({
  id: r.id as string, orgId: r.org_id as string, name: r.name as string, members: JSON.parse(r.members as string), groups: JSON.parse(r.groups_ as string),
  budgetMicros: (r.budget_micros as number | null) ?? null, tokensPerMinute: (r.tokens_per_minute as number | null) ?? null,
  credentials: JSON.parse(r.credentials as string), pools: JSON.parse(r.pools as string), maxTtlMs: r.max_ttl_ms as number,
  createdAt: r.created_at as number, updatedAt: r.updated_at as number,
});

export class SqliteTeams implements TeamStore {
  constructor(private readonly db: SqliteDb) {}

  createTeam(t: TeamRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        `INSERT INTO teams (id, org_id, name, name_key, members, groups_, budget_micros, tokens_per_minute, credentials, pools, max_ttl_ms, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        t.id, t.orgId, t.name, nameKey(t.name), JSON.stringify(t.members), JSON.stringify(t.groups), t.budgetMicros, t.tokensPerMinute,
        JSON.stringify(t.credentials), JSON.stringify(t.pools), t.maxTtlMs, t.createdAt, t.updatedAt,
      );
    });
  }

  getTeam(orgId: string, id: string): Promise<TeamRecord | undefined> {
    return this.db.guard(() => this.read(orgId, id));
  }

  listTeams(orgId: string, q: NamedPageQuery): Promise<Page<TeamRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'teams', orgId, q, toTeam));
  }

  updateTeam(orgId: string, id: string, u: TeamUpdate): Promise<TeamRecord | undefined> {
    return this.db.guard(() => this.db.tx(() => {
      const c = this.read(orgId, id);
      if (!c) return undefined;
      const name = u.name ?? c.name;
      this.db.run(
        `UPDATE teams SET name = ?, name_key = ?, members = ?, groups_ = ?, budget_micros = ?, tokens_per_minute = ?, credentials = ?, pools = ?,
         max_ttl_ms = ?, updated_at = ? WHERE id = ?`,
        name, nameKey(name), JSON.stringify(u.members ?? c.members), JSON.stringify(u.groups ?? c.groups),
        u.budgetMicros === undefined ? c.budgetMicros : u.budgetMicros, u.tokensPerMinute === undefined ? c.tokensPerMinute : u.tokensPerMinute,
        JSON.stringify(u.credentials ?? c.credentials), JSON.stringify(u.pools ?? c.pools), u.maxTtlMs ?? c.maxTtlMs, u.updatedAt, id,
      );
      publishChange(this.db, 'team', id);
      return this.read(orgId, id);
    }));
  }

  deleteTeam(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('DELETE FROM teams WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      this.db.run('DELETE FROM tokens WHERE team_id = ? AND org_id = ?', id, orgId);
      publishChange(this.db, 'team', id);
      return true;
    }));
  }

  putMemberBudget(orgId: string, memberId: string, micros: number | null): Promise<void> {
    return this.db.guard(() => this.db.tx(() => {
      if (micros === null) this.db.run('DELETE FROM member_budgets WHERE org_id = ? AND member_id = ?', orgId, memberId);
      else {
        this.db.run(
          'INSERT INTO member_budgets (org_id, member_id, budget_micros) VALUES (?, ?, ?) ON CONFLICT (org_id, member_id) DO UPDATE SET budget_micros = excluded.budget_micros',
          orgId, memberId, micros,
        );
      }
      publishChange(this.db, 'member', memberId);
    }));
  }

  getMemberBudget(orgId: string, memberId: string): Promise<number | null> {
    return this.db.guard(() => (this.db.one('SELECT budget_micros FROM member_budgets WHERE org_id = ? AND member_id = ?', orgId, memberId)?.budget_micros as number | undefined) ?? null);
  }

  listMemberBudgets(orgId: string): Promise<MemberBudget[]> {
    return this.db.guard(() => this.db.all('SELECT member_id, budget_micros FROM member_budgets WHERE org_id = ? ORDER BY member_id', orgId)
      .map((r) => ({ memberId: r.member_id as string, budgetMicros: r.budget_micros as number })));
  }

  private read(orgId: string, id: string): TeamRecord | undefined {
    const r = this.db.one('SELECT * FROM teams WHERE org_id = ? AND id = ?', orgId, id);
    return r && toTeam(r);
  }
}
