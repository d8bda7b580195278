/**
 * The SQLite store's MCP authorization records (mcp-grant-port.ts): registered clients and grants, each a JSON
 * document in one row, with the columns a read or the sweep needs beside it (a grant's principal, indexed; its
 * version, which an update compares and sets in one statement; its client and its end, indexed; a client's last
 * use). Its tables are created here (createSchema calls `createMcpGrantTables`); rows from before the sweep's
 * columns get them filled from their document.
 */
import { mcpGrantEnd, type McpClientRecord, type McpGrantRecord, type McpGrantStore } from '../mcp-grant-port.js';
import type { SqliteDb } from './db.js';

export function createMcpGrantTables(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS mcp_clients (id TEXT PRIMARY KEY, data TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS mcp_grants (id TEXT PRIMARY KEY, principal TEXT NOT NULL, version INTEGER NOT NULL, data TEXT NOT NULL) STRICT;
CREATE INDEX IF NOT EXISTS mcp_grants_principal ON mcp_grants(principal);
`);
  const columns = (table: string) => new Set(db.all(`PRAGMA table_info(${table})`).map((r) => r.name as string));
  // In one write transaction, checked again inside: of two processes opening an older file at once, one migrates.
  if (!columns('mcp_clients').has('last_used') || !columns('mcp_grants').has('ends_at')) {
    db.tx(() => {
      if (!columns('mcp_clients').has('last_used')) {
        db.run('ALTER TABLE mcp_clients ADD COLUMN last_used INTEGER');
        for (const r of db.all('SELECT id, data FROM mcp_clients')) {
          const c = JSON.parse(r.data as string) as McpClientRecord;
          db.run('UPDATE mcp_clients SET last_used = ? WHERE id = ?', c.lastUsedAt ?? c.createdAt, r.id as string);
        }
      }
      if (!columns('mcp_grants').has('ends_at')) {
        db.run('ALTER TABLE mcp_grants ADD COLUMN client_id TEXT');
        db.run('ALTER TABLE mcp_grants ADD COLUMN ends_at INTEGER');
        for (const r of db.all('SELECT id, data FROM mcp_grants')) {
          const g = JSON.parse(r.data as string) as McpGrantRecord;
          db.run('UPDATE mcp_grants SET client_id = ?, ends_at = ? WHERE id = ?', g.clientId, mcpGrantEnd(g), r.id as string);
        }
      }
    });
  }
  db.exec(`
CREATE INDEX IF NOT EXISTS mcp_grants_ends_at ON mcp_grants(ends_at);
CREATE INDEX IF NOT EXISTS mcp_grants_client ON mcp_grants(client_id);
CREATE INDEX IF NOT EXISTS mcp_clients_last_used ON mcp_clients(last_used);
`);
}

export class SqliteMcpGrants implements McpGrantStore {
  constructor(private readonly db: SqliteDb) {}

  createMcpClient(c: McpClientRecord): Promise<void> {
    return this.db.guard(() => { this.db.run('INSERT INTO mcp_clients (id, data, last_used) VALUES (?, ?, ?)', c.id, JSON.stringify(c), c.lastUsedAt ?? c.createdAt); });
  }

  getMcpClient(id: string): Promise<McpClientRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT data FROM mcp_clients WHERE id = ?', id);
      return r && (JSON.parse(r.data as string) as McpClientRecord);
    });
  }

  createMcpGrant(g: McpGrantRecord): Promise<void> {
    return this.db.guard(() => { this.db.run('INSERT INTO mcp_grants (id, principal, version, data, client_id, ends_at) VALUES (?, ?, ?, ?, ?, ?)', g.id, g.principal, g.version, JSON.stringify(g), g.clientId, mcpGrantEnd(g)); });
  }

  getMcpGrant(id: string): Promise<McpGrantRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT data FROM mcp_grants WHERE id = ?', id);
      return r && (JSON.parse(r.data as string) as McpGrantRecord);
    });
  }

  updateMcpGrant(next: McpGrantRecord, expectedVersion: number): Promise<boolean> {
    return this.db.guard(() => this.db.run('UPDATE mcp_grants SET version = ?, data = ?, ends_at = ? WHERE id = ? AND version = ?', next.version, JSON.stringify(next), mcpGrantEnd(next), next.id, expectedVersion) > 0);
  }

  listMcpGrantsByPrincipal(principal: string): Promise<McpGrantRecord[]> {
    return this.db.guard(() => this.db.all('SELECT data FROM mcp_grants WHERE principal = ? ORDER BY id', principal).map((r) => JSON.parse(r.data as string) as McpGrantRecord));
  }

  touchMcpClient(id: string, at: number): Promise<void> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT data FROM mcp_clients WHERE id = ?', id);
      if (!r) return;
      this.db.run('UPDATE mcp_clients SET data = ?, last_used = ? WHERE id = ?', JSON.stringify({ ...(JSON.parse(r.data as string) as McpClientRecord), lastUsedAt: at }), at, id);
    });
  }

  purgeMcpGrants(now: number, limit: number): Promise<number> {
    return this.db.guard(() => this.db.run('DELETE FROM mcp_grants WHERE id IN (SELECT id FROM mcp_grants WHERE ends_at <= ? LIMIT ?)', now, limit));
  }

  purgeMcpClients(unusedBefore: number, limit: number): Promise<number> {
    return this.db.guard(() => this.db.run(
      'DELETE FROM mcp_clients WHERE id IN (SELECT c.id FROM mcp_clients c WHERE c.last_used < ? AND NOT EXISTS (SELECT 1 FROM mcp_grants g WHERE g.client_id = c.id) LIMIT ?)',
      unusedBefore, limit,
    ));
  }
}
