/**
 * The SQLite store's tables, created if missing (SqliteAudit.migrate adds the
 * audit table's `count` and `expire_at`, SqliteStore.migrate the credentials' `fields`, to a file made before them), and the
 * row mappers of the records the store itself reads.
 */
import type { CredentialRecord, OrgTokenRecord, TokenRecord } from '../ports.js';
import type { Row } from './sqlite-sql.js';

export const SCHEMA = `
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
  created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, fields TEXT NOT NULL DEFAULT '{}'
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
  action TEXT NOT NULL, target TEXT NOT NULL, outcome TEXT NOT NULL, ip TEXT NOT NULL,
  count INTEGER NOT NULL DEFAULT 1, expire_at INTEGER NOT NULL
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

const buf = (v: unknown): Buffer => Buffer.from(v as Uint8Array);

export function toCredential(r: Row): CredentialRecord {
  return {
    id: r.id as string, orgId: r.org_id as string, provider: r.provider as string, keyHint: r.key_hint as string,
    wrappedDek: buf(r.wrapped_dek), kekId: r.kek_id as string, nonce: buf(r.nonce), ciphertext: buf(r.ciphertext),
    fields: JSON.parse((r.fields as string | undefined) ?? '{}'), createdAt: r.created_at as number, updatedAt: r.updated_at as number,
  };
}

export function toToken(r: Row): TokenRecord {
  return {
    id: r.id as string, orgId: r.org_id as string, credentialId: r.credential_id as string, tokenHash: r.token_hash as string,
    scopes: JSON.parse(r.scopes as string), createdAt: r.created_at as number, expiresAt: r.expires_at as number,
  };
}

export function toOrgToken(r: Row): OrgTokenRecord {
  return { id: r.id as string, orgId: r.org_id as string, tokenHash: r.token_hash as string, createdAt: r.created_at as number, expiresAt: (r.expires_at as number | null) ?? null };
}
