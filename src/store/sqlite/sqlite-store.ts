/**
 * The embedded store: one SQLite file (node:sqlite, no native addon) in WAL
 * mode with synchronous=FULL, so an acknowledged write survives kill -9 and
 * power loss alike. Every multi-step invariant runs in one BEGIN IMMEDIATE
 * transaction, which also serialises writers across processes (the CLI).
 * The data dir is made 0700 and the database files 0600 (private-files.ts).
 */
import path from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { BackendUnavailable } from '../../errors.js';
import { ensurePrivateDir, preparePrivateDatabase } from '../../private-files.js';
import {
  BAD_CURSOR, type Change, type CredentialRecord, type OrgRecord, type OrgTokenRecord, type Page, type PageQuery,
  type AuditRecord, type IdempotencyRecord, type SealedKey, type Store, type StoredSecret, type TokenRecord, type UsageCounts, type UsageDelta, type UsageScope,
} from '../ports.js';
import { SqliteAudit } from './sqlite-audit.js';
import { SqliteCounters } from './sqlite-counters.js';
import { SqliteIdempotency } from './sqlite-idempotency.js';
import { SCHEMA, toCredential, toOrgToken, toToken } from './sqlite-schema.js';
import { SqliteSecrets } from './sqlite-secrets.js';
import type { Row, Sql } from './sqlite-sql.js';

/** How often other processes' changes are picked up (the contract allows one second). */
const CHANGE_POLL_MS = 200;
/** Change rows are only needed until every live process has polled them. */
const CHANGE_RETENTION_MS = 10 * 60_000;
/**
 * Tokens deleted per transaction when their credential goes. A token's rows sit on
 * random pages of three indexes, so a commit writes (and, with secure_delete, zeroes)
 * a few pages per token: 100 keep each commit to a few milliseconds.
 */
const DELETE_CHUNK = 100;
/** The feed is live while its last poll succeeded this recently (two intervals, plus timer slack). */
const LIVE_WITHIN_MS = 2 * CHANGE_POLL_MS + 100;

export class SqliteStore implements Store {
  readonly kind = 'sqlite';
  readonly file: string;
  private readonly db: DatabaseSync;
  private readonly stmts = new Map<string, StatementSync>();
  private readonly listeners = new Set<(c: Change) => void>();
  private lastSeq = 0;
  private poller: NodeJS.Timeout | undefined;
  private readonly sql: Sql = {
    one: (q, ...p) => this.one(q, ...p),
    all: (q, ...p) => this.all(q, ...p),
    run: (q, ...p) => this.run(q, ...p),
    tx: (fn) => this.tx(fn),
  };
  private readonly audit = new SqliteAudit(this.sql);
  private readonly secrets = new SqliteSecrets(this.sql);
  private readonly counters = new SqliteCounters(this.sql);
  private readonly idempotency = new SqliteIdempotency(this.sql);
  /** When a poll last read the changes table (0: never). */
  private lastPollOk = 0;
  /** Fault injection for tests: while set, every change poll fails with it (a feed outage, the store otherwise up). */
  pollFault: Error | undefined;

  constructor(dataDir: string, fileName = 'keyward.db') {
    ensurePrivateDir(dataDir);
    this.file = path.join(dataDir, fileName);
    preparePrivateDatabase(this.file);
    this.db = new DatabaseSync(this.file, { enableForeignKeyConstraints: true });
    // busy_timeout first: switching to WAL and creating the schema take locks, and a process
    // starting beside another on the same file (a second server, the CLI) must wait, not fail.
    this.db.exec(`
      PRAGMA busy_timeout = 5000;
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = FULL;
      PRAGMA secure_delete = ON;
    `);
    this.db.exec(SCHEMA);
    this.migrate();
    this.audit.migrate();
    this.lastSeq = (this.one('SELECT COALESCE(MAX(seq), 0) AS s FROM changes')?.s as number) ?? 0;
  }

  /**
   * Columns added after a database was first created. In one write transaction, re-checked
   * inside it, so two processes opening the same old file do not both add a column.
   */
  private migrate(): void {
    const hasFields = () => this.all('PRAGMA table_info(credentials)').some((c) => c.name === 'fields');
    if (hasFields()) return;
    this.tx(() => {
      if (!hasFields()) this.db.exec("ALTER TABLE credentials ADD COLUMN fields TEXT NOT NULL DEFAULT '{}'");
    });
  }

  // ---- plumbing -------------------------------------------------------------

  private stmt(sql: string): StatementSync {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  private one(sql: string, ...params: SQLInputValue[]): Row | undefined {
    return this.stmt(sql).get(...params) as Row | undefined;
  }

  private all(sql: string, ...params: SQLInputValue[]): Row[] {
    return this.stmt(sql).all(...params) as Row[];
  }

  private run(sql: string, ...params: SQLInputValue[]): number {
    return Number(this.stmt(sql).run(...params).changes);
  }

  /** Runs `fn` in one write transaction; SQLite I/O and lock errors become BackendUnavailable. */
  private tx<T>(fn: () => T): T {
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      throw new BackendUnavailable('sqlite', { cause: err });
    }
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (err) {
      try { this.db.exec('ROLLBACK'); } catch { /* already rolled back */ }
      throw err;
    }
  }

  private guard<T>(fn: () => T): Promise<T> {
    // Closed (shutdown, or a test taking the store away): cached statements would throw a plain
    // "statement has been finalized" (ERR_INVALID_STATE), a 500; it is an unavailable store, a 503.
    if (!this.db.isOpen) return Promise.reject(new BackendUnavailable('sqlite'));
    try {
      return Promise.resolve(fn());
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code === 'ERR_SQLITE_ERROR' || (err instanceof Error && /SQLITE_(BUSY|IOERR|CANTOPEN|FULL|READONLY|CORRUPT)|database is locked|not open/i.test(err.message))) {
        return Promise.reject(new BackendUnavailable('sqlite', { cause: err }));
      }
      return Promise.reject(err);
    }
  }

  private publish(kind: Change['kind'], id: string, now = Date.now()): void {
    this.run('INSERT INTO changes (kind, id, at) VALUES (?, ?, ?)', kind, id, now);
    this.run('DELETE FROM changes WHERE at < ?', now - CHANGE_RETENTION_MS);
  }

  private page<T>(table: 'credentials' | 'tokens', orgId: string, q: PageQuery, map: (r: Row) => T): Page<T> | typeof BAD_CURSOR {
    let rows: Row[];
    if (q.startingAfter !== undefined) {
      const cursor = this.one(`SELECT created_at, id FROM ${table} WHERE org_id = ? AND id = ?`, orgId, q.startingAfter);
      if (!cursor) return BAD_CURSOR;
      rows = this.all(
        `SELECT * FROM ${table} WHERE org_id = ? AND (created_at < ? OR (created_at = ? AND id < ?)) ORDER BY created_at DESC, id DESC LIMIT ?`,
        orgId, cursor.created_at!, cursor.created_at!, cursor.id!, q.limit + 1,
      );
    } else {
      rows = this.all(`SELECT * FROM ${table} WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`, orgId, q.limit + 1);
    }
    return { data: rows.slice(0, q.limit).map(map), hasMore: rows.length > q.limit };
  }

  // ---- lifecycle ------------------------------------------------------------

  ping(): Promise<void> {
    return this.guard(() => { this.one('SELECT 1 AS ok'); });
  }

  async close(): Promise<void> {
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    if (this.db.isOpen) this.db.close();
  }

  // ---- organisations --------------------------------------------------------

  createOrg(org: OrgRecord, token: OrgTokenRecord): Promise<void> {
    return this.guard(() => this.tx(() => {
      this.run('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)', org.id, org.name, org.createdAt);
      this.run('INSERT INTO org_tokens (id, org_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        token.id, token.orgId, token.tokenHash, token.createdAt, token.expiresAt);
    }));
  }

  getOrg(id: string): Promise<OrgRecord | undefined> {
    return this.guard(() => {
      const r = this.one('SELECT * FROM orgs WHERE id = ?', id);
      return r && { id: r.id as string, name: r.name as string, createdAt: r.created_at as number };
    });
  }

  findOrgToken(tokenHash: string): Promise<OrgTokenRecord | undefined> {
    return this.guard(() => {
      const r = this.one('SELECT * FROM org_tokens WHERE token_hash = ?', tokenHash);
      return r && toOrgToken(r);
    });
  }

  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string): Promise<'rotated' | 'retiring'> {
    return this.guard(() => this.tx(() => {
      const caller = this.one('SELECT expires_at FROM org_tokens WHERE id = ? AND org_id = ?', callerId, token.orgId);
      if (!caller || caller.expires_at !== null) return 'retiring' as const;
      this.run('UPDATE org_tokens SET expires_at = ? WHERE org_id = ? AND (expires_at IS NULL OR expires_at > ?)', retireAt, token.orgId, retireAt);
      this.run('INSERT INTO org_tokens (id, org_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        token.id, token.orgId, token.tokenHash, token.createdAt, token.expiresAt);
      this.run('DELETE FROM org_tokens WHERE org_id = ? AND expires_at IS NOT NULL AND expires_at < ?', token.orgId, token.createdAt - 86_400_000);
      this.publish('org', token.orgId);
      return 'rotated' as const;
    }));
  }

  // ---- credentials ----------------------------------------------------------

  createCredential(c: CredentialRecord, limit: number): Promise<'created' | 'limit'> {
    return this.guard(() => this.tx(() => {
      const held = this.one('SELECT COUNT(*) AS n FROM credentials WHERE org_id = ?', c.orgId)!.n as number;
      if (held >= limit) return 'limit' as const;
      this.run(
        `INSERT INTO credentials (id, org_id, provider, key_hint, wrapped_dek, kek_id, nonce, ciphertext, created_at, updated_at, fields)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id, c.orgId, c.provider, c.keyHint, c.wrappedDek, c.kekId, c.nonce, c.ciphertext, c.createdAt, c.updatedAt, JSON.stringify(c.fields ?? {}),
      );
      return 'created' as const;
    }));
  }

  getCredential(orgId: string, id: string): Promise<CredentialRecord | undefined> {
    return this.guard(() => {
      const r = this.one('SELECT * FROM credentials WHERE org_id = ? AND id = ?', orgId, id);
      return r && toCredential(r);
    });
  }

  listCredentials(orgId: string, q: PageQuery): Promise<Page<CredentialRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.page('credentials', orgId, q, toCredential));
  }

  countCredentials(orgId: string): Promise<number> {
    return this.guard(() => this.one('SELECT COUNT(*) AS n FROM credentials WHERE org_id = ?', orgId)!.n as number);
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
    for (;;) {
      const n = await this.guard(() => this.tx(() => this.run(
        'DELETE FROM tokens WHERE rowid IN (SELECT rowid FROM tokens WHERE credential_id = ? AND org_id = ? LIMIT ?)', id, orgId, DELETE_CHUNK,
      )));
      if (n < DELETE_CHUNK) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return this.guard(() => this.tx(() => {
      // ON DELETE CASCADE takes any token minted meanwhile.
      if (this.run('DELETE FROM credentials WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      this.publish('credential', id);
      return true;
    }));
  }

  replaceCredentialKey(orgId: string, id: string, s: SealedKey, keyHint: string, updatedAt: number): Promise<boolean> {
    return this.guard(() => this.tx(() => {
      const n = this.run(
        'UPDATE credentials SET wrapped_dek = ?, kek_id = ?, nonce = ?, ciphertext = ?, key_hint = ?, updated_at = ? WHERE org_id = ? AND id = ?',
        s.wrappedDek, s.kekId, s.nonce, s.ciphertext, keyHint, updatedAt, orgId, id,
      );
      if (n > 0) this.publish('credential', id);
      return n > 0;
    }));
  }

  async *allCredentials(): AsyncIterable<CredentialRecord> {
    let after = '';
    for (;;) {
      const rows = await this.guard(() => this.all('SELECT * FROM credentials WHERE id > ? ORDER BY id LIMIT 100', after));
      if (rows.length === 0) return;
      for (const r of rows) yield toCredential(r);
      after = rows[rows.length - 1]!.id as string;
    }
  }

  rewrapCredential(id: string, expected: Buffer, wrappedDek: Buffer, kekId: string): Promise<boolean> {
    return this.guard(() => this.tx(() => {
      const n = this.run('UPDATE credentials SET wrapped_dek = ?, kek_id = ? WHERE id = ? AND wrapped_dek = ?', wrappedDek, kekId, id, expected);
      if (n > 0) this.publish('credential', id);
      return n > 0;
    }));
  }

  // ---- tokens ---------------------------------------------------------------

  createToken(t: TokenRecord): Promise<'created' | 'no_credential'> {
    return this.guard(() => this.tx(() => {
      if (!this.one('SELECT 1 AS ok FROM credentials WHERE org_id = ? AND id = ?', t.orgId, t.credentialId)) return 'no_credential' as const;
      this.run(
        'INSERT INTO tokens (id, org_id, credential_id, token_hash, scopes, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        t.id, t.orgId, t.credentialId, t.tokenHash, JSON.stringify(t.scopes), t.createdAt, t.expiresAt,
      );
      return 'created' as const;
    }));
  }

  findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    return this.guard(() => {
      const r = this.one('SELECT * FROM tokens WHERE token_hash = ?', tokenHash);
      return r && toToken(r);
    });
  }

  getToken(orgId: string, id: string): Promise<TokenRecord | undefined> {
    return this.guard(() => {
      const r = this.one('SELECT * FROM tokens WHERE org_id = ? AND id = ?', orgId, id);
      return r && toToken(r);
    });
  }

  listTokens(orgId: string, q: PageQuery): Promise<Page<TokenRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.page('tokens', orgId, q, toToken));
  }

  deleteToken(orgId: string, id: string): Promise<boolean> {
    return this.guard(() => this.tx(() => {
      if (this.run('DELETE FROM tokens WHERE org_id = ? AND id = ?', orgId, id) === 0) return false;
      this.publish('token', id);
      return true;
    }));
  }

  // ---- leases and usage (sqlite-counters.ts) --------------------------------

  lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    return this.guard(() => this.counters.lease(key, limit, want));
  }

  release(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.guard(() => this.counters.release(key, units));
  }

  leased(key: string): Promise<number> {
    return this.guard(() => this.counters.leased(key));
  }

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    return this.guard(() => this.counters.addUsage(deltas));
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.guard(() => this.counters.getUsage(scope, id, period));
  }

  // ---- audit (sqlite-audit.ts) and deployment secrets (sqlite-secrets.ts) ---

  appendAudit(records: AuditRecord[]): Promise<void> {
    return this.guard(() => this.audit.append(records));
  }

  addAuditCounts(records: AuditRecord[]): Promise<void> {
    return this.guard(() => this.audit.addCounts(records));
  }

  listAudit(orgId: string, q: PageQuery, now = Date.now()): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.audit.list(orgId, q, now));
  }

  deleteExpiredAudit(now: number, limit: number): Promise<number> {
    return this.guard(() => this.audit.deleteExpired(now, limit));
  }

  createSecretIfAbsent(secret: StoredSecret): Promise<StoredSecret> {
    return this.guard(() => this.secrets.createIfAbsent(secret));
  }

  getSecret(name: string): Promise<StoredSecret | undefined> {
    return this.guard(() => this.secrets.get(name));
  }

  rewrapSecret(name: string, expected: Buffer, wrapped: Buffer, kekId: string): Promise<boolean> {
    return this.guard(() => this.secrets.rewrap(name, expected, wrapped, kekId));
  }

  // ---- idempotency (sqlite-idempotency.ts) ----------------------------------

  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    return this.guard(() => this.idempotency.claim(record, expireBefore));
  }

  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void> {
    return this.guard(() => this.idempotency.complete(scope, response));
  }

  releaseIdempotency(scope: string): Promise<void> {
    return this.guard(() => this.idempotency.release(scope));
  }

  // ---- change feed ----------------------------------------------------------

  watch(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    if (!this.poller) {
      this.poller = setInterval(() => this.poll(), CHANGE_POLL_MS);
      this.poller.unref();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.poller) {
        clearInterval(this.poller);
        this.poller = undefined;
      }
    };
  }

  isLive(): boolean {
    return this.poller !== undefined && Date.now() - this.lastPollOk <= LIVE_WITHIN_MS;
  }

  private poll(): void {
    let rows: Row[];
    try {
      if (this.pollFault) throw this.pollFault;
      rows = this.all('SELECT seq, kind, id FROM changes WHERE seq > ? ORDER BY seq LIMIT 1000', this.lastSeq);
    } catch {
      return; // the store is down; /readyz says so, caches stop trusting what they hold, and the next poll retries
    }
    this.lastPollOk = Date.now();
    for (const r of rows) {
      this.lastSeq = r.seq as number;
      const change = { kind: r.kind as Change['kind'], id: r.id as string };
      for (const l of this.listeners) l(change);
    }
  }
}
