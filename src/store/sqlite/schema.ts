/**
 * The SQLite store's tables and their migrations: `createSchema` creates what is
 * missing (lease holders, usage shards and audit count shards came in one go: new tables, nothing to
 * alter; the older `usage` rows are still summed in) and adds the columns that came later (credentials' `fields`, audit's
 * `count` and `expire_at`, usage's `spend_micros`, tokens' `created_by`, orgs' `spend_limit_micros`,
 * names and their folded `name_key`, audit's `target_name`, idempotency's `claimant`, tokens' `team_id` and `member_id`: teams.ts) to a file made before them, each in one write
 * transaction re-checked inside it, so two processes opening the same old file
 * do not both alter a table.
 */
import { nameKey } from '../name-key.js';
import type { SqliteDb } from './db.js';
import { createTrustPolicyTable } from './trust-policies.js';
import { createPoolTable } from './pools.js';
import { createPeopleTables } from './people.js';
import { createMcpGrantTables } from './mcp-grants.js';
import { createOAuthConnectionTable } from './oauth-connections.js';
import { createTeamTables } from './teams.js';

/** Records written before retention existed are kept this long (the default KEYWARD_AUDIT_RETENTION_DAYS). */
const LEGACY_RETENTION_MS = 400 * 86_400_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS orgs (
  id TEXT PRIMARY KEY, name TEXT NOT NULL, created_at INTEGER NOT NULL, spend_limit_micros INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS org_tokens (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), token_hash TEXT NOT NULL UNIQUE,
  created_at INTEGER NOT NULL, expires_at INTEGER
) STRICT;
CREATE INDEX IF NOT EXISTS org_tokens_org ON org_tokens(org_id);
CREATE TABLE IF NOT EXISTS admin_keys (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), name TEXT NOT NULL, role TEXT NOT NULL, credential_ids TEXT,
  token_hash TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, expires_at INTEGER, created_by TEXT NOT NULL, name_key TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS admin_keys_org_created ON admin_keys(org_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS credentials (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL REFERENCES orgs(id), provider TEXT NOT NULL, key_hint TEXT NOT NULL,
  wrapped_dek BLOB NOT NULL, kek_id TEXT NOT NULL, nonce BLOB NOT NULL, ciphertext BLOB NOT NULL,
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, fields TEXT NOT NULL DEFAULT '{}', name TEXT, name_key TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS credentials_org_created ON credentials(org_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS tokens (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, credential_id TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, created_by TEXT,
  name TEXT, name_key TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS tokens_org_created ON tokens(org_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS tokens_credential ON tokens(credential_id);
CREATE TABLE IF NOT EXISTS revoked_tokens (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, credential_id TEXT NOT NULL, scopes TEXT NOT NULL, created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL, created_by TEXT, name TEXT, name_key TEXT, revoked_at INTEGER NOT NULL, revoked_by TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS revoked_tokens_org ON revoked_tokens(org_id, revoked_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS revoked_tokens_org_creator ON revoked_tokens(org_id, created_by, revoked_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS leases (key TEXT PRIMARY KEY, leased INTEGER NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS lease_holders (
  key TEXT NOT NULL, holder TEXT NOT NULL, seq INTEGER NOT NULL, nonce TEXT NOT NULL, granted INTEGER NOT NULL,
  returned INTEGER NOT NULL, used INTEGER NOT NULL, armed INTEGER NOT NULL, expires_at INTEGER NOT NULL,
  PRIMARY KEY (key, holder)
) STRICT;
CREATE TABLE IF NOT EXISTS usage_shards (
  scope TEXT NOT NULL, id TEXT NOT NULL, period TEXT NOT NULL, writer TEXT NOT NULL, seq INTEGER NOT NULL,
  requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, spend_micros INTEGER NOT NULL,
  PRIMARY KEY (scope, id, period, writer)
) STRICT;
CREATE TABLE IF NOT EXISTS audit_counts (
  id TEXT NOT NULL, batch TEXT NOT NULL, count INTEGER NOT NULL, PRIMARY KEY (id, batch)
) STRICT;
CREATE TABLE IF NOT EXISTS usage (
  scope TEXT NOT NULL, id TEXT NOT NULL, period TEXT NOT NULL,
  requests INTEGER NOT NULL, input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
  spend_micros INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (scope, id, period)
) STRICT;
CREATE TABLE IF NOT EXISTS audit (
  id TEXT PRIMARY KEY, time INTEGER NOT NULL, request_id TEXT NOT NULL, org TEXT NOT NULL, actor TEXT NOT NULL,
  action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, ip TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 1, expire_at INTEGER NOT NULL, target_name TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS audit_org_time ON audit(org, time DESC, id DESC);
CREATE TABLE IF NOT EXISTS idempotency (
  scope TEXT PRIMARY KEY, request_hash TEXT NOT NULL, created_at INTEGER NOT NULL, response TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, id TEXT NOT NULL, at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS meta (
  name TEXT PRIMARY KEY, wrapped BLOB NOT NULL, kek_id TEXT NOT NULL, created_at INTEGER NOT NULL
) STRICT;
`;

/** Creates the tables if missing, then migrates an older file (see the header). */
export function createSchema(db: SqliteDb): void {
  db.exec(SCHEMA);
  addCredentialFields(db);
  addAuditRetention(db);
  addUsageSpend(db);
  createTrustPolicyTable(db);
  addTokenCreator(db);
  addOrgSpendLimit(db);
  addNames(db);
  addIdempotencyClaimant(db);
  unbindTokens(db);
  createPoolTable(db);
  createPeopleTables(db);
  createMcpGrantTables(db);
  createOAuthConnectionTable(db);
  createTeamTables(db);
}

/**
 * Pooled tokens (pools.ts) hold a pool's id where a credential's would be: a tokens table made with a foreign
 * key to credentials is rebuilt without it (SQLite cannot drop a constraint), in one write transaction. The
 * token service checks its credential or pool under the write lock instead (tokens.ts), as Firestore does.
 */
function unbindTokens(db: SqliteDb): void {
  const bound = () => db.all('PRAGMA foreign_key_list(tokens)').length > 0;
  if (!bound()) return;
  db.tx(() => {
    if (!bound()) return;
    const columns = 'id, org_id, credential_id, token_hash, scopes, created_at, expires_at, created_by, name, name_key';
    db.exec(`
CREATE TABLE tokens_unbound (
  id TEXT PRIMARY KEY, org_id TEXT NOT NULL, credential_id TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE, scopes TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, created_by TEXT,
  name TEXT, name_key TEXT
) STRICT;
INSERT INTO tokens_unbound (${columns}) SELECT ${columns} FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_unbound RENAME TO tokens;
CREATE INDEX IF NOT EXISTS tokens_org_created ON tokens(org_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS tokens_credential ON tokens(credential_id);
CREATE INDEX IF NOT EXISTS tokens_org_creator ON tokens(org_id, created_by, created_at DESC, id DESC);
`);
  });
}

/**
 * Adds `name` and `name_key` to credentials and tokens, `name_key` to admin keys (their `name` was
 * required, NOT NULL: '' now stands for none) filled from the names they have, and `target_name` to audit.
 */
function addNames(db: SqliteDb): void {
  const columns = (table: string) => new Set(db.all(`PRAGMA table_info(${table})`).map((c) => c.name as string));
  const missing = () => !columns('credentials').has('name_key') || !columns('tokens').has('name_key') || !columns('admin_keys').has('name_key') || !columns('audit').has('target_name');
  if (!missing()) return;
  db.tx(() => {
    for (const table of ['credentials', 'tokens']) {
      const has = columns(table);
      if (!has.has('name')) db.run(`ALTER TABLE ${table} ADD COLUMN name TEXT`);
      if (!has.has('name_key')) db.run(`ALTER TABLE ${table} ADD COLUMN name_key TEXT`);
    }
    if (!columns('admin_keys').has('name_key')) {
      db.run('ALTER TABLE admin_keys ADD COLUMN name_key TEXT');
      for (const r of db.all("SELECT id, name FROM admin_keys WHERE name != ''")) db.run('UPDATE admin_keys SET name_key = ? WHERE id = ?', nameKey(r.name as string), r.id!);
    }
    if (!columns('audit').has('target_name')) db.run('ALTER TABLE audit ADD COLUMN target_name TEXT');
  });
}

/** Adds `claimant` (who holds a claim: a claim read back after an unacknowledged commit is recognised) to an older table. */
function addIdempotencyClaimant(db: SqliteDb): void {
  const has = () => db.all('PRAGMA table_info(idempotency)').some((c) => c.name === 'claimant');
  if (has()) return;
  db.tx(() => {
    if (!has()) db.exec('ALTER TABLE idempotency ADD COLUMN claimant TEXT');
  });
}

/** Adds `spend_limit_micros` (the monthly spend cap; NULL: none) to an orgs table made before it. */
function addOrgSpendLimit(db: SqliteDb): void {
  const has = () => db.all('PRAGMA table_info(orgs)').some((c) => c.name === 'spend_limit_micros');
  if (has()) return;
  db.tx(() => {
    if (!has()) db.exec('ALTER TABLE orgs ADD COLUMN spend_limit_micros INTEGER');
  });
}

function addCredentialFields(db: SqliteDb): void {
  const hasFields = () => db.all('PRAGMA table_info(credentials)').some((c) => c.name === 'fields');
  if (hasFields()) return;
  db.tx(() => {
    if (!hasFields()) db.exec("ALTER TABLE credentials ADD COLUMN fields TEXT NOT NULL DEFAULT '{}'");
  });
}

/** Adds `count` and `expire_at` to an audit table made before they existed (old records: count 1, kept the legacy retention). */
function addAuditRetention(db: SqliteDb): void {
  db.tx(() => {
    const columns = new Set(db.all('PRAGMA table_info(audit)').map((c) => c.name as string));
    if (!columns.has('count')) db.run('ALTER TABLE audit ADD COLUMN count INTEGER NOT NULL DEFAULT 1');
    if (!columns.has('expire_at')) {
      db.run('ALTER TABLE audit ADD COLUMN expire_at INTEGER NOT NULL DEFAULT 0');
      db.run('UPDATE audit SET expire_at = time + ?', LEGACY_RETENTION_MS);
    }
    db.run('CREATE INDEX IF NOT EXISTS audit_expire ON audit(expire_at)');
  });
}

/** Adds `spend_micros` to a usage table made before spend was counted (what was counted before spent 0). */
function addUsageSpend(db: SqliteDb): void {
  const hasSpend = () => db.all('PRAGMA table_info(usage)').some((c) => c.name === 'spend_micros');
  if (hasSpend()) return;
  db.tx(() => {
    if (!hasSpend()) db.exec('ALTER TABLE usage ADD COLUMN spend_micros INTEGER NOT NULL DEFAULT 0');
  });
}

/** Adds `created_by` to a tokens table made before admin keys (old tokens: NULL, listed to no minter). */
function addTokenCreator(db: SqliteDb): void {
  db.tx(() => {
    if (!db.all('PRAGMA table_info(tokens)').some((c) => c.name === 'created_by')) db.run('ALTER TABLE tokens ADD COLUMN created_by TEXT');
    db.run('CREATE INDEX IF NOT EXISTS tokens_org_creator ON tokens(org_id, created_by, created_at DESC, id DESC)');
  });
}
