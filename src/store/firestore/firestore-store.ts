/**
 * The Cloud Run store: Firestore (native mode), shared by every instance and
 * nothing else. The data model (collections, ids, indexes) is described in
 * docs/operate/cloud-run.md. One client (db.ts: collections, deadlines, the
 * BackendUnavailable mapping, close) and one object per port over it
 * (orgs.ts, admin-keys.ts, credentials.ts, tokens.ts, leases.ts, usage.ts, changes.ts,
 * audit.ts, idempotency.ts, secrets.ts), composed into the whole `Store`.
 *
 * Multi-instance correctness rests on what Firestore makes atomic for a single
 * write or a batch: `create()` fails with ALREADY_EXISTS when the document is
 * there, a delete with an `exists` precondition fails with NOT_FOUND when it is
 * not, a batch commits all or nothing, and `FieldValue.increment` adds
 * atomically. Transactions are used only where a compare-and-swap is the
 * operation itself (key rewrap, org token rotation); the local emulator used by
 * the tests does not isolate transactions, so those two are tested serially.
 * Each port's file says how its own invariant holds on these.
 */
import type { Firestore as FirestoreClient } from '@google-cloud/firestore';
import { ComposedStore, type StorePorts } from '../composed-store.js';
import { FirestoreAdminKeys } from './admin-keys.js';
import { FirestoreAudit } from './audit.js';
import { FirestoreChanges } from './changes.js';
import { FirestoreCredentials } from './credentials.js';
import { FirestoreDb, openClient, type FirestoreConnectConfig, type FirestoreStoreOptions, type WriteFaults } from './db.js';
import { FirestoreIdempotency } from './idempotency.js';
import { FirestoreLeases } from './leases.js';
import { FirestoreOrgs } from './orgs.js';
import { FirestoreSecrets } from './secrets.js';
import { FirestoreTokens } from './tokens.js';
import { FirestoreTrustPolicies } from './trust-policies.js';
import { FirestorePools } from './pools.js';
import { FirestorePeople } from './people.js';
import { FirestoreMcpGrants } from './mcp-grants.js';
import { FirestoreOAuthConnections } from './oauth-connections.js';
import { FirestoreTeams } from './teams.js';
import { FirestoreUsage } from './usage.js';

export type { FirestoreConnectConfig, FirestoreStoreOptions } from './db.js';

interface FirestorePorts extends StorePorts {
  changes: FirestoreChanges;
}

function openPorts(db: FirestoreDb): FirestorePorts {
  const changes = new FirestoreChanges(db);
  return {
    orgs: new FirestoreOrgs(db, changes),
    adminKeys: new FirestoreAdminKeys(db),
    credentials: new FirestoreCredentials(db, changes),
    tokens: new FirestoreTokens(db, changes),
    leases: new FirestoreLeases(db),
    usage: new FirestoreUsage(db),
    changes,
    audit: new FirestoreAudit(db),
    idempotency: new FirestoreIdempotency(db),
    secrets: new FirestoreSecrets(db),
    trustPolicies: new FirestoreTrustPolicies(db),
    pools: new FirestorePools(db, changes),
    people: new FirestorePeople(db),
    mcpGrants: new FirestoreMcpGrants(db),
    oauthConnections: new FirestoreOAuthConnections(db, changes),
    teams: new FirestoreTeams(db, changes),
  };
}

export class FirestoreStore extends ComposedStore<FirestorePorts> {
  readonly kind = 'firestore';
  private readonly conn: FirestoreDb;
  /** Resolves when the client has been terminated (after close(), once no call is running). */
  readonly terminated: Promise<void>;

  /** Connects to Cloud Firestore (project from GOOGLE_CLOUD_PROJECT or the metadata server), or to an emulator. */
  static async connect(config: FirestoreConnectConfig, options: FirestoreStoreOptions = {}): Promise<FirestoreStore> {
    return new FirestoreStore(openClient(config), options);
  }

  constructor(readonly db: FirestoreClient, options: FirestoreStoreOptions = {}) {
    const conn = new FirestoreDb(db, options);
    super(openPorts(conn));
    this.conn = conn;
    this.terminated = conn.terminated;
  }

  /** Fault injection for tests: called after each counting write commits (db.ts, WriteFaults); undefined: none. */
  setWriteFaults(faults: WriteFaults | undefined): void {
    this.conn.faults = faults;
  }

  ping(): Promise<void> {
    return this.conn.ping();
  }

  /**
   * Stops the feed, then terminates the client once its calls have settled (db.ts, FirestoreDb.close). The
   * feed's listener goes first: the client refuses to terminate while one is subscribed, and its open channel
   * would keep the process (the CLI) alive. With no listener left, no watch reopens.
   */
  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.ports.changes.stop();
    return this.conn.close();
  }
}
