/**
 * The SQLite store's people (people-port.ts): `sso_configs` (one row per organisation, the client secret
 * sealed), `members` (unique per organisation, issuer and subject), `sessions` (by the SHA-256 of the
 * session's value). Its tables are made here (createSchema calls `createPeopleTables`), with the
 * `member_id` column of tokens and revoked tokens. A member's deletion removes its sessions in the same
 * write transaction.
 */
import { BAD_CURSOR, type MemberRecord, type Page, type PageQuery, type PeopleStore, type SessionRecord, type SsoConfigRecord } from '../ports.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

export function createPeopleTables(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS sso_configs (
  org_id TEXT PRIMARY KEY, issuer TEXT NOT NULL, client_id TEXT NOT NULL, allowed_domains TEXT NOT NULL, groups_claim TEXT,
  role_map TEXT NOT NULL, secret_hint TEXT NOT NULL, wrapped_dek BLOB NOT NULL, kek_id TEXT NOT NULL, nonce BLOB NOT NULL,
  ciphertext BLOB NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS members (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, issuer TEXT NOT NULL, subject TEXT NOT NULL, email TEXT, name TEXT, role TEXT NOT NULL,
  budget_micros INTEGER, created_at INTEGER NOT NULL, last_sign_in_at INTEGER NOT NULL, UNIQUE (org_id, issuer, subject)
) STRICT;
CREATE INDEX IF NOT EXISTS members_org_created ON members(org_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS sessions (
  hash TEXT PRIMARY KEY, org_id TEXT NOT NULL, member_id TEXT NOT NULL, kind TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS sessions_member ON sessions(member_id);
`);
  const columns = (table: string) => new Set(db.all(`PRAGMA table_info(${table})`).map((c) => c.name as string));
  // The member's groups at its last sign-in (JSON), added after the members table first shipped.
  if (!columns('members').has('groups_json')) db.run('ALTER TABLE members ADD COLUMN groups_json TEXT');
  const missing = () => !columns('tokens').has('member_id') || !columns('revoked_tokens').has('member_id');
  if (!missing()) return;
  db.tx(() => {
    for (const table of ['tokens', 'revoked_tokens']) if (!columns(table).has('member_id')) db.run(`ALTER TABLE ${table} ADD COLUMN member_id TEXT`);
    db.run('CREATE INDEX IF NOT EXISTS tokens_member ON tokens(org_id, member_id)');
  });
}

const buf = (v: unknown): Buffer => Buffer.from(v as Uint8Array);

const toSso = (r: Row): SsoConfigRecord => ({
  orgId: r.org_id as string, issuer: r.issuer as string, clientId: r.client_id as string, allowedDomains: JSON.parse(r.allowed_domains as string),
  groupsClaim: (r.groups_claim as string | null) ?? null, roleMap: JSON.parse(r.role_map as string), secretHint: r.secret_hint as string,
  wrappedDek: buf(r.wrapped_dek), kekId: r.kek_id as string, nonce: buf(r.nonce), ciphertext: buf(r.ciphertext), updatedAt: r.updated_at as number,
});

const toMember = (r: Row): MemberRecord => ({
  id: r.id as string, orgId: r.org_id as string, issuer: r.issuer as string, subject: r.subject as string,
  email: (r.email as string | null) ?? null, name: (r.name as string | null) ?? null, role: r.role as MemberRecord['role'],
  budgetMicros: (r.budget_micros as number | null) ?? null, createdAt: r.created_at as number, lastSignInAt: r.last_sign_in_at as number,
  ...(typeof r.groups_json === 'string' ? { groups: JSON.parse(r.groups_json) as string[] } : {}),
});

const groupsJson = (m: MemberRecord): string | null => (m.groups ? JSON.stringify(m.groups) : null);

const toSession = (r: Row): SessionRecord => ({
  hash: r.hash as string, orgId: r.org_id as string, memberId: r.member_id as string, kind: r.kind as SessionRecord['kind'],
  createdAt: r.created_at as number, expiresAt: r.expires_at as number,
});

export class SqlitePeople implements PeopleStore {
  constructor(private readonly db: SqliteDb) {}

  putSsoConfig(s: SsoConfigRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        `INSERT OR REPLACE INTO sso_configs (org_id, issuer, client_id, allowed_domains, groups_claim, role_map, secret_hint, wrapped_dek, kek_id, nonce, ciphertext, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        s.orgId, s.issuer, s.clientId, JSON.stringify(s.allowedDomains), s.groupsClaim, JSON.stringify(s.roleMap), s.secretHint,
        s.wrappedDek, s.kekId, s.nonce, s.ciphertext, s.updatedAt,
      );
    });
  }

  getSsoConfig(orgId: string): Promise<SsoConfigRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM sso_configs WHERE org_id = ?', orgId);
      return r && toSso(r);
    });
  }

  signInMember(m: MemberRecord): Promise<MemberRecord> {
    return this.db.guard(() => this.db.tx(() => {
      const found = this.db.one('SELECT * FROM members WHERE org_id = ? AND issuer = ? AND subject = ?', m.orgId, m.issuer, m.subject);
      if (found) {
        this.db.run('UPDATE members SET email = ?, name = ?, role = ?, groups_json = ?, last_sign_in_at = ? WHERE id = ?', m.email, m.name, m.role, groupsJson(m), m.lastSignInAt, found.id!);
        return { ...toMember(found), email: m.email, name: m.name, role: m.role, lastSignInAt: m.lastSignInAt, ...(m.groups ? { groups: m.groups } : {}) };
      }
      this.db.run(
        'INSERT INTO members (id, org_id, issuer, subject, email, name, role, budget_micros, created_at, last_sign_in_at, groups_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        m.id, m.orgId, m.issuer, m.subject, m.email, m.name, m.role, m.budgetMicros, m.createdAt, m.lastSignInAt, groupsJson(m),
      );
      return m;
    }));
  }

  getMember(orgId: string, id: string): Promise<MemberRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM members WHERE org_id = ? AND id = ?', orgId, id);
      return r && toMember(r);
    });
  }

  listMembers(orgId: string, q: PageQuery): Promise<Page<MemberRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'members', orgId, q, toMember));
  }

  setMemberBudget(orgId: string, id: string, micros: number | null): Promise<boolean> {
    return this.db.guard(() => this.db.run('UPDATE members SET budget_micros = ? WHERE org_id = ? AND id = ?', micros, orgId, id) > 0);
  }

  deleteMember(orgId: string, id: string): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('DELETE FROM members WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      this.db.run('DELETE FROM sessions WHERE org_id = ? AND member_id = ?', orgId, id);
      return true;
    }));
  }

  createSession(s: SessionRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run('INSERT INTO sessions (hash, org_id, member_id, kind, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)', s.hash, s.orgId, s.memberId, s.kind, s.createdAt, s.expiresAt);
    });
  }

  findSession(hash: string): Promise<SessionRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM sessions WHERE hash = ?', hash);
      return r && toSession(r);
    });
  }

  deleteSession(hash: string): Promise<boolean> {
    return this.db.guard(() => this.db.run('DELETE FROM sessions WHERE hash = ?', hash) > 0);
  }

  memberTokenIds(orgId: string, memberId: string): Promise<string[]> {
    return this.db.guard(() => this.db.all('SELECT id FROM tokens WHERE org_id = ? AND member_id = ?', orgId, memberId).map((r) => r.id as string));
  }
}
