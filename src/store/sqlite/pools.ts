/**
 * The SQLite store's pools (pool-port.ts): one row each, members and cooling as JSON. Its table is made
 * here (createSchema calls `createPoolTable`). Every change (update, cooling, deletion) is one write
 * transaction with the `pool` change that announces it; a deletion removes the pool's tokens first in small
 * transactions, then the pool and any token minted meanwhile under one lock.
 */
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, type NamedPageQuery, type Page, type PoolRecord, type PoolStore, type PoolUpdate } from '../ports.js';
import { publishChange } from './changes.js';
import { deleteTokensOf } from './credentials.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

export function createPoolTable(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS pools (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, provider TEXT NOT NULL, strategy TEXT NOT NULL, members TEXT NOT NULL,
  cooling TEXT NOT NULL DEFAULT '{}', name TEXT, name_key TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS pools_org_created ON pools(org_id, created_at DESC, id DESC);
`);
}

const toPool = (r: Row): PoolRecord => ({
  id: r.id as string, orgId: r.org_id as string, provider: r.provider as string, strategy: r.strategy as PoolRecord['strategy'],
  members: JSON.parse(r.members as string), cooling: JSON.parse(r.cooling as string), createdAt: r.created_at as number, updatedAt: r.updated_at as number,
  ...(r.name != null ? { name: r.name as string } : {}),
});

export class SqlitePools implements PoolStore {
  constructor(private readonly db: SqliteDb) {}

  createPool(p: PoolRecord): Promise<void> {
    return this.db.guard(() => {
      this.db.run(
        'INSERT INTO pools (id, org_id, provider, strategy, members, cooling, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        p.id, p.orgId, p.provider, p.strategy, JSON.stringify(p.members), JSON.stringify(p.cooling), p.name ?? null,
        p.name === undefined ? null : nameKey(p.name), p.createdAt, p.updatedAt,
      );
    });
  }

  getPool(orgId: string, id: string): Promise<PoolRecord | undefined> {
    return this.db.guard(() => this.read(orgId, id));
  }

  listPools(orgId: string, q: NamedPageQuery): Promise<Page<PoolRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'pools', orgId, q, toPool));
  }

  updatePool(orgId: string, id: string, u: PoolUpdate): Promise<PoolRecord | undefined> {
    return this.db.guard(() => this.db.tx(() => {
      const current = this.read(orgId, id);
      if (!current) return undefined;
      const name = u.name === undefined ? current.name ?? null : u.name;
      this.db.run(
        'UPDATE pools SET strategy = ?, members = ?, name = ?, name_key = ?, updated_at = ? WHERE id = ?',
        u.strategy ?? current.strategy, JSON.stringify(u.members ?? current.members), name, name === null ? null : nameKey(name), u.updatedAt, id,
      );
      publishChange(this.db, 'pool', id);
      return this.read(orgId, id);
    }));
  }

  async deletePool(orgId: string, id: string): Promise<boolean> {
    await deleteTokensOf(this.db, id, orgId);
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('DELETE FROM pools WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      this.db.run('DELETE FROM tokens WHERE credential_id = ? AND org_id = ?', id, orgId);
      publishChange(this.db, 'pool', id);
      return true;
    }));
  }

  coolPoolMember(orgId: string, id: string, credentialId: string, until: number): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      const current = this.read(orgId, id);
      if (!current) return false;
      if ((current.cooling[credentialId] ?? 0) >= until) return true;
      this.db.run('UPDATE pools SET cooling = ? WHERE id = ?', JSON.stringify({ ...current.cooling, [credentialId]: until }), id);
      publishChange(this.db, 'pool', id);
      return true;
    }));
  }

  private read(orgId: string, id: string): PoolRecord | undefined {
    const r = this.db.one('SELECT * FROM pools WHERE org_id = ? AND id = ?', orgId, id);
    return r && toPool(r);
  }
}
