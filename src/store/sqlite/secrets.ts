/**
 * The SQLite store's `meta` table: deployment secrets (wrapped), created once
 * by whichever process comes first (INSERT OR IGNORE under the write lock) and
 * read back by every other, so all processes on one file hold the same one.
 */
import type { SecretStore, StoredSecret } from '../ports.js';
import type { Row, SqliteDb } from './db.js';

const toSecret = (r: Row): StoredSecret => ({
  name: r.name as string, wrapped: Buffer.from(r.wrapped as Uint8Array), kekId: r.kek_id as string, createdAt: r.created_at as number,
});

export class SqliteSecrets implements SecretStore {
  constructor(private readonly db: SqliteDb) {}

  createSecretIfAbsent(s: StoredSecret): Promise<StoredSecret> {
    return this.db.guard(() => this.db.tx(() => {
      this.db.run('INSERT OR IGNORE INTO meta (name, wrapped, kek_id, created_at) VALUES (?, ?, ?, ?)', s.name, s.wrapped, s.kekId, s.createdAt);
      return toSecret(this.db.one('SELECT * FROM meta WHERE name = ?', s.name)!);
    }));
  }

  getSecret(name: string): Promise<StoredSecret | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM meta WHERE name = ?', name);
      return r && toSecret(r);
    });
  }

  /** A compare-and-swap: only while the stored value is still `expected`. */
  rewrapSecret(name: string, expected: Buffer, wrapped: Buffer, kekId: string): Promise<boolean> {
    return this.db.guard(() => this.db.run('UPDATE meta SET wrapped = ?, kek_id = ? WHERE name = ? AND wrapped = ?', wrapped, kekId, name, expected) > 0);
  }
}
