/**
 * The SQLite store's `meta` table: deployment secrets (wrapped), created once
 * by whichever process comes first (INSERT OR IGNORE under the write lock) and
 * read back by every other, so all processes on one file hold the same one.
 */
import type { StoredSecret } from '../ports.js';
import type { Row, Sql } from './sqlite-sql.js';

const toSecret = (r: Row): StoredSecret => ({
  name: r.name as string, wrapped: Buffer.from(r.wrapped as Uint8Array), kekId: r.kek_id as string, createdAt: r.created_at as number,
});

export class SqliteSecrets {
  constructor(private readonly sql: Sql) {}

  createIfAbsent(s: StoredSecret): StoredSecret {
    return this.sql.tx(() => {
      this.sql.run('INSERT OR IGNORE INTO meta (name, wrapped, kek_id, created_at) VALUES (?, ?, ?, ?)', s.name, s.wrapped, s.kekId, s.createdAt);
      return toSecret(this.sql.one('SELECT * FROM meta WHERE name = ?', s.name)!);
    });
  }

  get(name: string): StoredSecret | undefined {
    const r = this.sql.one('SELECT * FROM meta WHERE name = ?', name);
    return r && toSecret(r);
  }

  rewrap(name: string, expected: Buffer, wrapped: Buffer, kekId: string): boolean {
    return this.sql.run('UPDATE meta SET wrapped = ?, kek_id = ? WHERE name = ? AND wrapped = ?', wrapped, kekId, name, expected) > 0;
  }
}
