/**
 * The SQLite store's one connection, shared by every port (orgs.ts, tokens.ts…):
 * one file (node:sqlite, no native addon) in WAL mode with synchronous=FULL, so
 * an acknowledged write survives kill -9 and power loss alike; one statement
 * cache; one write transaction (BEGIN IMMEDIATE, which also serialises writers
 * across processes, the CLI included); and one error policy (`guard`): SQLite
 * I/O, lock and closed-handle errors become BackendUnavailable (a 503, never a
 * 500). The data dir is made 0700 and the database files 0600 (private-files.ts).
 */
import path from 'node:path';
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';
import { BackendUnavailable } from '../../errors.js';
import { ensurePrivateDir, preparePrivateDatabase } from '../../private-files.js';
import { prefixQuery } from '../name-key.js';
import { BAD_CURSOR, type NamedPageQuery, type Page } from '../ports.js';

export type Row = Record<string, SQLInputValue>;

/**
 * Fault injection for tests (test/support/store-faults.ts): called after a counting write's transaction has
 * committed; throwing makes the caller see a write that landed and then failed.
 */
export type WriteFaults = (what: string) => void;

export class SqliteDb {
  readonly file: string;
  private readonly db: DatabaseSync;
  private readonly stmts = new Map<string, StatementSync>();
  /** Tests: see WriteFaults. */
  faults: WriteFaults | undefined;

  constructor(dataDir: string, fileName: string) {
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
  }

  get isOpen(): boolean {
    return this.db.isOpen;
  }

  /** Runs SQL text uncached (schema, migrations, pragmas). */
  exec(sql: string): void {
    this.db.exec(sql);
  }

  private stmt(sql: string): StatementSync {
    let s = this.stmts.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.stmts.set(sql, s);
    }
    return s;
  }

  one(sql: string, ...params: SQLInputValue[]): Row | undefined {
    return this.stmt(sql).get(...params) as Row | undefined;
  }

  all(sql: string, ...params: SQLInputValue[]): Row[] {
    return this.stmt(sql).all(...params) as Row[];
  }

  /** Returns the number of rows changed. */
  run(sql: string, ...params: SQLInputValue[]): number {
    return Number(this.stmt(sql).run(...params).changes);
  }

  /**
   * Runs `fn` in one write transaction; SQLite I/O and lock errors become BackendUnavailable. `what` names a
   * counting write (usage, lease, idempotency, audit counts): where tests inject a fault after the commit.
   */
  tx<T>(fn: () => T): T;
  tx<T>(what: string, fn: () => T): T;
  tx<T>(a: string | (() => T), b?: () => T): T {
    const what = typeof a === 'string' ? a : undefined;
    const fn = typeof a === 'string' ? b! : a;
    try {
      this.db.exec('BEGIN IMMEDIATE');
    } catch (err) {
      throw new BackendUnavailable('sqlite', { cause: err });
    }
    try {
      const out = fn();
      this.db.exec('COMMIT');
      if (what !== undefined) this.faults?.(what);
      return out;
    } catch (err) {
      if (this.db.isTransaction) {
        try { this.db.exec('ROLLBACK'); } catch { /* already rolled back */ }
      }
      throw err;
    }
  }

  /** Runs one port operation: its result as a promise; an unavailable database (closed, locked, failing I/O) as BackendUnavailable. */
  guard<T>(fn: () => T): Promise<T> {
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

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}

/** What narrows a page beyond its organisation: a minter's own (`created_by`), a name prefix, and the column it is ordered by. */
export interface PageFilter {
  createdBy?: string;
  /** Kept when the folded name (`name_key`) starts with it (store/name-key.ts); unnamed rows never match. */
  namePrefix?: string;
  /** Newest first by this time column, then id (default `created_at`). */
  orderBy?: 'created_at' | 'revoked_at';
}

/**
 * One newest-first page of an org's records, keyed by (time, id); an unknown cursor is BAD_CURSOR. A cursor
 * is a position: it must be one of the org's (and, with `createdBy`, that caller's) records, whatever its name.
 */
export function pageByOrg<T>(
  db: SqliteDb, table: 'credentials' | 'tokens' | 'revoked_tokens' | 'admin_keys' | 'trust_policies' | 'pools' | 'members' | 'teams', orgId: string, q: NamedPageQuery,
  map: (r: Row) => T, filter: PageFilter = {},
): Page<T> | typeof BAD_CURSOR {
  const time = filter.orderBy ?? 'created_at';
  // A minter's list is only its own tokens: the filter (and its cursor check) ride in the same query.
  const mine = filter.createdBy === undefined ? '' : ' AND created_by = ?';
  const by: SQLInputValue[] = filter.createdBy === undefined ? [] : [filter.createdBy];
  const prefix = q.namePrefix === undefined ? undefined : prefixQuery(q.namePrefix);
  const named = prefix ? ' AND substr(name_key, 1, ?) = ?' : '';
  const byName: SQLInputValue[] = prefix ? [prefix.length, prefix.key] : [];
  let rows: Row[];
  if (q.startingAfter !== undefined) {
    const cursor = db.one(`SELECT ${time} AS t, id FROM ${table} WHERE org_id = ? AND id = ?${mine}`, orgId, q.startingAfter, ...by);
    if (!cursor) return BAD_CURSOR;
    rows = db.all(
      `SELECT * FROM ${table} WHERE org_id = ?${mine}${named} AND (${time} < ? OR (${time} = ? AND id < ?)) ORDER BY ${time} DESC, id DESC LIMIT ?`,
      orgId, ...by, ...byName, cursor.t!, cursor.t!, cursor.id!, q.limit + 1,
    );
  } else {
    rows = db.all(`SELECT * FROM ${table} WHERE org_id = ?${mine}${named} ORDER BY ${time} DESC, id DESC LIMIT ?`, orgId, ...by, ...byName, q.limit + 1);
  }
  return { data: rows.slice(0, q.limit).map(map), hasMore: rows.length > q.limit };
}
