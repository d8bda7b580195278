/**
 * The embedded store: one SQLite file, one connection (db.ts: WAL,
 * synchronous=FULL, BEGIN IMMEDIATE transactions, private file modes), and
 * one object per port over it (orgs.ts, admin-keys.ts, credentials.ts, tokens.ts, leases.ts,
 * usage.ts, changes.ts, audit.ts, idempotency.ts, secrets.ts), composed into
 * the whole `Store`. Opening creates or migrates the schema (schema.ts) before
 * any port reads it.
 */
import { ComposedStore, type StorePorts } from '../composed-store.js';
import { SqliteAdminKeys } from './admin-keys.js';
import { SqliteAudit } from './audit.js';
import { systemTimers, type Timers } from '../../clock.js';
import { SqliteChanges } from './changes.js';
import { SqliteCredentials } from './credentials.js';
import { SqliteDb, type WriteFaults } from './db.js';
import { SqliteIdempotency } from './idempotency.js';
import { SqliteLeases } from './leases.js';
import { SqliteOrgs } from './orgs.js';
import { createSchema } from './schema.js';
import { SqliteSecrets } from './secrets.js';
import { SqliteTokens } from './tokens.js';
import { SqliteTrustPolicies } from './trust-policies.js';
import { SqlitePools } from './pools.js';
import { SqlitePeople } from './people.js';
import { SqliteMcpGrants } from './mcp-grants.js';
import { SqliteOAuthConnections } from './oauth-connections.js';
import { SqliteTeams } from './teams.js';
import { SqliteUsage } from './usage.js';

interface SqlitePorts extends StorePorts {
  changes: SqliteChanges;
}

function openPorts(db: SqliteDb, timers: Timers): SqlitePorts {
  createSchema(db);
  return {
    orgs: new SqliteOrgs(db),
    adminKeys: new SqliteAdminKeys(db),
    credentials: new SqliteCredentials(db),
    tokens: new SqliteTokens(db),
    leases: new SqliteLeases(db),
    usage: new SqliteUsage(db),
    changes: new SqliteChanges(db, timers),
    audit: new SqliteAudit(db),
    idempotency: new SqliteIdempotency(db),
    secrets: new SqliteSecrets(db),
    trustPolicies: new SqliteTrustPolicies(db),
    pools: new SqlitePools(db),
    people: new SqlitePeople(db),
    mcpGrants: new SqliteMcpGrants(db),
    oauthConnections: new SqliteOAuthConnections(db),
    teams: new SqliteTeams(db),
  };
}

export class SqliteStore extends ComposedStore<SqlitePorts> {
  readonly kind = 'sqlite';
  readonly file: string;
  private readonly db: SqliteDb;

  /** `timers`: what the change feed polls on (tests pass their own; clock.ts). */
  constructor(dataDir: string, fileName = 'keyward.db', timers: Timers = systemTimers) {
    const db = new SqliteDb(dataDir, fileName);
    super(openPorts(db, timers));
    this.db = db;
    this.file = db.file;
  }

  /** Fault injection for tests: while set, every change poll fails with it (a feed outage, the store otherwise up). */
  get pollFault(): Error | undefined {
    return this.ports.changes.pollFault;
  }

  set pollFault(fault: Error | undefined) {
    this.ports.changes.pollFault = fault;
  }

  /** Fault injection for tests: called after each counting write commits (db.ts, WriteFaults); undefined: none. */
  setWriteFaults(faults: WriteFaults | undefined): void {
    this.db.faults = faults;
  }

  ping(): Promise<void> {
    return this.db.guard(() => { this.db.one('SELECT 1 AS ok'); });
  }

  async close(): Promise<void> {
    this.ports.changes.stop();
    this.db.close();
  }
}
