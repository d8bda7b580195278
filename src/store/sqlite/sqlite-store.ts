/**
 * The embedded store: one SQLite file (node:sqlite, no native addon) in WAL
 * mode with synchronous=FULL, so an acknowledged write survives kill -9 and
 * power loss alike. Every multi-step invariant runs in one BEGIN IMMEDIATE
 * transaction, which also serialises writers across processes (the CLI).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { BackendUnavailable } from '../../errors.js';
import {
  BAD_CURSOR, type Change, type CredentialRecord, type OrgRecord, type OrgTokenRecord, type Page, type PageQuery,
  type AuditRecord, type IdempotencyRecord, type SealedKey, type Store, type TokenRecord, type UsageCounts, type UsageDelta, type UsageScope,
} from '../ports.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS org_tokens (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), token_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL, expires_at INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS org_tokens_org ON org_tokens(org_id);
CREATE TABLE IF NOT EXISTS credentials (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), provider TEXT NOT NULL, key_hint TEXT NOT NULL,
  wrapped_dek BLOB NOT NULL, kek_id TEXT NOT NULL, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS credentials_org_created ON credentials(org_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, credential_id TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
  token_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS tokens_org_created ON tokens(org_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS tokens_credential ON tokens(credential_id);
CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, leased INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS usage (
  scope TEXT NOT NULL, id TEXT NOT NULL, period TEXT NOT NULL,
  requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  PRIMARY KEY (scope, id, period)
) STRICT;
CREATE TABLE IF NOT EXISTS audit (
  id TEXT PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL, org TEXT NOT NULL, actor TEXT NOT NULL,
  action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, ip TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS audit_org_time ON audit(org, time DESC, id DESC);
CREATE TABLE IF NOT EXISTS idempotency (
  scope TEXT PRIMARY KEY, request_hash TEXT NOT NULL, created_at INTEGER NOT NULL, response TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL
) STRICT;
`;

type Row = Record<string, SQLInputValue>;

const buf = (v: unknown): Buffer => Buffer.from(v as Uint8Array);

function toCredential(r: Row): CredentialRecord {
  return {
    id: r.id as string, orgId: r.org_id as string, provider: r.provider as string, keyHint: r.key_hint as string,
    wrappedDek: buf(r.wrapped_dek), kekId: r.kek_id as string, nonce: buf(r.nonce), ciphertext: buf(r.ciphertext),
    createdAt: r.created_at as number, updatedAt: r.updated_at as number,
  };
}

function toToken(r: Row): TokenRecord {
  return {
    id: r.id as string, orgId: r.org_id as string, credentialId: r.credential_id as string, tokenHash: r.token_hash as string,
    scopes: JSON.parse(r.scopes as string), createdAt: r.created_at as number, expiresAt: r.expires_at as number,
  };
}

function toOrgToken(r: Row): OrgTokenRecord {
  return { id: r.id as string, orgId: r.org_id as string, tokenHash: r.token_hash as string, createdAt: r.created_at as number, expiresAt: (r.expires_at as number | null) ?? null };
}

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
  /** When a poll last read the changes table (0: never). */
  private lastPollOk = 0;
  /** Fault injection for tests: while set, every change poll fails with it (a feed outage, the store otherwise up). */
  pollFault: Error | undefined;

  constructor(dataDir: string, fileName = 'keyward.db') {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    this.file = path.join(dataDir, fileName);
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
    this.lastSeq = (this.one('SELECT COALESCE(MAX(seq), 0) AS s FROM changes')?.s as number) ?? 0;
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

  rotateOrgToken(token: OrgTokenRecord, retireAt: number): Promise<void> {
    return this.guard(() => this.tx(() => {
      this.run('UPDATE org_tokens SET expires_at = ? WHERE org_id = ? AND (expires_at IS NULL OR expires_at > ?)', retireAt, token.orgId, retireAt);
      this.run('INSERT INTO org_tokens (id, org_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)',
        token.id, token.orgId, token.tokenHash, token.createdAt, token.expiresAt);
      this.run('DELETE FROM org_tokens WHERE org_id = ? AND expires_at IS NOT NULL AND expires_at < ?', token.orgId, token.createdAt - 86_400_000);
      this.publish('org', token.orgId);
    }));
  }

  // ---- credentials ----------------------------------------------------------

  createCredential(c: CredentialRecord, limit: number): Promise<'created' | 'limit'> {
    return this.guard(() => this.tx(() => {
      const held = this.one('SELECT COUNT(*) AS n FROM credentials WHERE org_id = ?', c.orgId)!.n as number;
      if (held >= limit) return 'limit' as const;
      this.run(
        `INSERT INTO credentials (id, org_id, provider, key_hint, wrapped_dek, kek_id, nonce, ciphertext, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        c.id, c.orgId, c.provider, c.keyHint, c.wrappedDek, c.kekId, c.nonce, c.ciphertext, c.createdAt, c.updatedAt,
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

  // ---- leases ---------------------------------------------------------------

  lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    return this.guard(() => this.tx(() => {
      const held = (this.one('SELECT leased FROM leases WHERE key = ?', key)?.leased as number | undefined) ?? 0;
      const grant = Math.max(0, Math.min(want, limit - held));
      if (grant > 0) {
        this.run('INSERT INTO leases (key, leased) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET leased = leased + excluded.leased', key, grant);
      }
      return { granted: grant, leased: held + grant };
    }));
  }

  release(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.guard(() => {
      this.run('UPDATE leases SET leased = MAX(0, leased - ?) WHERE key = ?', units, key);
    });
  }

  leased(key: string): Promise<number> {
    return this.guard(() => (this.one('SELECT leased FROM leases WHERE key = ?', key)?.leased as number | undefined) ?? 0);
  }

  // ---- usage ----------------------------------------------------------------

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    return this.guard(() => this.tx(() => {
      for (const d of deltas) {
        this.run(
          `INSERT INTO usage (scope, id, period, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT(scope, id, period) DO UPDATE SET requests = requests + excluded.requests,
             input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens`,
          d.scope, d.id, d.period, d.requests, d.inputTokens, d.outputTokens,
        );
      }
    }));
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.guard(() => {
      const r = period === undefined
        ? this.one('SELECT SUM(requests) AS r, SUM(input_tokens) AS i, SUM(output_tokens) AS o FROM usage WHERE scope = ? AND id = ?', scope, id)
        : this.one('SELECT requests AS r, input_tokens AS i, output_tokens AS o FROM usage WHERE scope = ? AND id = ? AND period = ?', scope, id, period);
      return { requests: (r?.r as number) ?? 0, inputTokens: (r?.i as number) ?? 0, outputTokens: (r?.o as number) ?? 0 };
    });
  }

  // ---- audit ----------------------------------------------------------------

  appendAudit(records: AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.guard(() => this.tx(() => {
      for (const r of records) {
        this.run('INSERT INTO audit (id, time, request_id, org, actor, action, target, outcome, ip) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          r.id, r.time, r.requestId, r.org, r.actor, r.action, r.target, r.outcome, r.ip);
      }
    }));
  }

  listAudit(orgId: string, q: PageQuery): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    return this.guard(() => {
      const map = (r: Row): AuditRecord => ({
        id: r.id as string, time: r.time as number, requestId: r.request_id as string, org: r.org as string, actor: r.actor as string,
        action: r.action as string, target: r.target as string, outcome: r.outcome as AuditRecord['outcome'], ip: r.ip as string,
      });
      let rows: Row[];
      if (q.startingAfter !== undefined) {
        const cursor = this.one('SELECT time, id FROM audit WHERE org = ? AND id = ?', orgId, q.startingAfter);
        if (!cursor) return BAD_CURSOR;
        rows = this.all('SELECT * FROM audit WHERE org = ? AND (time < ? OR (time = ? AND id < ?)) ORDER BY time DESC, id DESC LIMIT ?',
          orgId, cursor.time!, cursor.time!, cursor.id!, q.limit + 1);
      } else {
        rows = this.all('SELECT * FROM audit WHERE org = ? ORDER BY time DESC, id DESC LIMIT ?', orgId, q.limit + 1);
      }
      return { data: rows.slice(0, q.limit).map(map), hasMore: rows.length > q.limit };
    });
  }

  // ---- idempotency ----------------------------------------------------------

  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    return this.guard(() => this.tx(() => {
      const r = this.one('SELECT * FROM idempotency WHERE scope = ?', record.scope);
      if (r && (r.created_at as number) >= expireBefore) {
        const existing: IdempotencyRecord = { scope: record.scope, requestHash: r.request_hash as string, createdAt: r.created_at as number };
        if (r.response !== null) existing.response = JSON.parse(r.response as string);
        return existing;
      }
      this.run('INSERT OR REPLACE INTO idempotency (scope, request_hash, created_at, response) VALUES (?, ?, ?, NULL)', record.scope, record.requestHash, record.createdAt);
      this.run('DELETE FROM idempotency WHERE created_at < ?', expireBefore);
      return 'claimed' as const;
    }));
  }

  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void> {
    return this.guard(() => {
      this.run('UPDATE idempotency SET response = ? WHERE scope = ?', JSON.stringify(response), scope);
    });
  }

  releaseIdempotency(scope: string): Promise<void> {
    return this.guard(() => {
      this.run('DELETE FROM idempotency WHERE scope = ? AND response IS NULL', scope);
    });
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
