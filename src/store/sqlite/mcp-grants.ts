/**
 * The SQLite store's MCP authorization records (mcp-grant-port.ts): registered clients and grants, each a JSON
 * document in one row, with the columns a read needs beside it (a grant's principal, indexed, and its version,
 * which an update compares and sets in one statement). Its tables are created here (createSchema calls
 * `createMcpGrantTables`).
 */
import type { McpClientRecord, McpGrantRecord, McpGrantStore } from '../mcp-grant-port.js';
import type { SqliteDb } from './db.js';

export function createMcpGrantTables(db: SqliteDb): void {
  db.exec(`
CREATE TABLE IF NOT EXISTS mcp_clients (id TEXT PRIMARY KEY, data TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS mcp_grants (id TEXT PRIMARY KEY, principal TEXT NOT NULL, version INTEGER NOT NULL, data TEXT NOT NULL) STRICT;
CREATE INDEX IF NOT EXISTS mcp_grants_principal ON mcp_grants(principal);
`);
}

export class SqliteMcpGrants implements McpGrantStore {
  constructor(private readonly db: SqliteDb) {}

  createMcpClient(c: McpClientRecord): Promise<void> {
    return this.db.guard(() => { this.db.run('INSERT INTO mcp_clients (id, data) VALUES (?, ?)', c.id, JSON.stringify(c)); });
  }

  getMcpClient(id: string): Promise<McpClientRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT data FROM mcp_clients WHERE id = ?', id);
      return r && (JSON.parse(r.data as string) as McpClientRecord);
    });
  }

  createMcpGrant(g: McpGrantRecord): Promise<void> {
    return this.db.guard(() => { this.db.run('INSERT INTO mcp_grants (id, principal, version, data) VALUES (?, ?, ?, ?)', g.id, g.principal, g.version, JSON.stringify(g)); });
  }

  getMcpGrant(id: string): Promise<McpGrantRecord | undefined> {
    return this.db.guard(() => {
      const r = this.db.one('SELECT data FROM mcp_grants WHERE id = ?', id);
      return r && (JSON.parse(r.data as string) as McpGrantRecord);
    });
  }

  updateMcpGrant(next: McpGrantRecord, expectedVersion: number): Promise<boolean> {
    return this.db.guard(() => this.db.run('UPDATE mcp_grants SET version = ?, data = ? WHERE id = ? AND version = ?', next.version, JSON.stringify(next), next.id, expectedVersion) > 0);
  }

  listMcpGrantsByPrincipal(principal: string): Promise<McpGrantRecord[]> {
    return this.db.guard(() => this.db.all('SELECT data FROM mcp_grants WHERE principal = ? ORDER BY id', principal).map((r) => JSON.parse(r.data as string) as McpGrantRecord));
  }
}
