/**
 * The SQLite store's credentials (sealed keys; plain fields as JSON). Creation
 * counts and inserts under one write lock, so an org never holds more than its
 * limit, whichever process writes. Deletion removes the tokens in small
 * transactions first (the event loop stays free), then the credential with one
 * change event that stands for all its tokens. Key replacement and re-wrap are
 * single updates that announce the credential; a re-wrap is a compare-and-swap
 * on the wrapped DEK.
 */
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, type CredentialRecord, type CredentialStore, type NamedPageQuery, type Page, type SealedKey } from '../ports.js';
import { publishChange } from './changes.js';
import { pageByOrg, type Row, type SqliteDb } from './db.js';

/**
 * Tokens deleted per transaction when their credential goes. A token's rows sit on
 * random pages of three indexes, so a commit writes (and, with secure_delete, zeroes)
 * a few pages per token: 100 keep each commit to a few milliseconds.
 */
const DELETE_CHUNK = 100;

/** Deletes the tokens bound to `id` (a credential or a pool) of `orgId`, DELETE_CHUNK per transaction with a turn of the event loop between. */
export async function deleteTokensOf(db: SqliteDb, id: string, orgId: string): Promise<void> {
  for (;;) {
    const n = await db.guard(() => db.tx(() => db.run(
      'DELETE FROM tokens WHERE rowid IN (SELECT rowid FROM tokens WHERE credential_id = ? AND org_id = ? LIMIT ?)', id, orgId, DELETE_CHUNK,
    )));
    if (n < DELETE_CHUNK) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

const buf = (v: unknown): Buffer => Buffer.from(v as Uint8Array);

const toCredential = (r: Row): CredentialRecord => ({
  id: r.id as string, orgId: r.org_id as string, provider: r.provider as string, keyHint: r.key_hint as string,
  wrappedDek: buf(r.wrapped_dek), kekId: r.kek_id as string, nonce: buf(r.nonce), ciphertext: buf(r.ciphertext),
  fields: JSON.parse((r.fields as string | undefined) ?? '{}'), createdAt: r.created_at as number, updatedAt: r.updated_at as number,
  ...(r.name != null ? { name: r.name as string } : {}),
});

export class SqliteCredentials implements CredentialStore {
  constructor(private readonly db: SqliteDb) {}

  createCredential(c: CredentialRecord, limit: number): Promise<'created' | 'limit'> {
    return this.db.guard(() => this.db.tx(() => {
      const held = this.db.one('SELECT COUNT(*) AS n FROM credentials WHERE org_id = ?', c.orgId)!.n as number;
      if (held >= limit) return 'limit' as const;
      this.db.run(
        `INSERT INTO credentials (id, org_id, provider, key_hint, wrapped_dek, kek_id, nonce, ciphertext, created_at, updated_at, fields, name, name_key)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id, c.orgId, c.provider, c.keyHint, c.wrappedDek, c.kekId, c.nonce, c.ciphertext, c.createdAt, c.updatedAt, JSON.stringify(c.fields ?? {}),
        c.name ?? null, c.name === undefined ? null : nameKey(c.name),
      );
      return 'created' as const;
    }));
  }

  getCredential(orgId: string, id: string): Promise<CredentialRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT * FROM credentials WHERE org_id = ? AND id = ?', orgId, id);
      return r && toCredential(r);
    });
  }

  listCredentials(orgId: string, q: NamedPageQuery): Promise<Page<CredentialRecord> | typeof BAD_CURSOR> {
    return this.db.guard(() => pageByOrg(this.db, 'credentials', orgId, q, toCredential));
  }

  /** A name is not a secret nor cached anywhere: an update, no change event. */
  setCredentialName(orgId: string, id: string, name: string | null): Promise<boolean> {
    return this.db.guard(() => this.db.run(
      'UPDATE credentials SET name = ?, name_key = ? WHERE org_id = ? AND id = ?', name, name === null ? null : nameKey(name), orgId, id,
    ) > 0);
  }

  countCredentials(orgId: string): Promise<number> {
    return this.db.guard(() => this.db.one('SELECT COUNT(*) AS n FROM credentials WHERE org_id = ?', orgId)!.n as number);
  }

  /**
   * Its tokens go first, a hundred per transaction with a turn of the event
   * loop between: node:sqlite is synchronous, and one cascade over 10,000 tokens
   * would hold every request for hundreds of milliseconds. They are this org's
   * tokens of this credential (never another's), so a failure part-way leaves a
   * credential with fewer tokens, which a retry finishes. The credential's own
   * deletion is the commit point, and its one change stands for all its tokens
   * (caches drop a credential's tokens by its id): the event costs the same
   * whatever the token count.
   */
  async deleteCredential(orgId: string, id: string): Promise<boolean> {
    await deleteTokensOf(this.db, id, orgId);
    return this.db.guard(() => this.db.tx(() => {
      if (this.db.run('DELETE FROM credentials WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      // Any token minted meanwhile goes in the same lock.
      this.db.run('DELETE FROM tokens WHERE credential_id = ? AND org_id = ?', id, orgId);
      publishChange(this.db, 'credential', id);
      return true;
    }));
  }

  replaceCredentialKey(orgId: string, id: string, s: SealedKey, keyHint: string, updatedAt: number): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      const n = this.db.run(
        'UPDATE credentials SET wrapped_dek = ?, kek_id = ?, nonce = ?, ciphertext = ?, key_hint = ?, updated_at = ? WHERE org_id = ? AND id = ?',
        s.wrappedDek, s.kekId, s.nonce, s.ciphertext, keyHint, updatedAt, orgId, id,
      );
      if (n > 0) publishChange(this.db, 'credential', id);
      return n > 0;
    }));
  }

  async *allCredentials(): AsyncIterable<CredentialRecord> {
    let after = '';
    for (;;) {
      const rows = await this.db.guard(() => this.db.all('SELECT * FROM credentials WHERE id > ? ORDER BY id LIMIT 100', after));
      if (rows.length === 0) return;
      for (const r of rows) yield toCredential(r);
      after = rows[rows.length - 1]!.id as string;
    }
  }

  rewrapCredential(id: string, expected: Buffer, wrappedDek: Buffer, kekId: string): Promise<boolean> {
    return this.db.guard(() => this.db.tx(() => {
      const n = this.db.run('UPDATE credentials SET wrapped_dek = ?, kek_id = ? WHERE id = ? AND wrapped_dek = ?', wrappedDek, kekId, id, expected);
      if (n > 0) publishChange(this.db, 'credential', id);
      return n > 0;
    }));
  }
}
