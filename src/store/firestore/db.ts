/**
 * The Firestore store's one client, shared by every port (orgs.ts, tokens.ts…):
 * the collections of the data model (docs/operate/cloud-run.md), and the one error and
 * lifetime policy. `guard` gives every call a deadline and turns an unreachable
 * backend (or no answer in time) into BackendUnavailable, a 503; `track` counts
 * calls still running in the client so `close` can let them settle before it
 * terminates the client; `rounds` bounds the create()-race loops. Also the
 * small shared encodings: gRPC codes, the newest-first sort key, Buffers.
 */
import firestorePkg from '@google-cloud/firestore';
import type { CollectionReference, DocumentData, DocumentReference, DocumentSnapshot, Firestore as FirestoreClient, Query, Settings, WriteBatch } from '@google-cloud/firestore';
import { BackendUnavailable } from '../../errors.js';
import { Timeout, withTimeout } from '../../timeout.js';
import { nameKey } from '../name-key.js';
import { BAD_CURSOR, type NamedPageQuery, type Page } from '../ports.js';

const { Firestore } = firestorePkg;

/** gRPC status codes (google.rpc.Code) the Firestore store acts on. */
export const Code = { CANCELLED: 1, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, FAILED_PRECONDITION: 9, RESOURCE_EXHAUSTED: 8, ABORTED: 10, UNAVAILABLE: 14 } as const;

export const errCode = (err: unknown): number | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
};

/** Contended create() loops (slots, lease blocks, idempotency claims) give up after this many rounds. */
export const MAX_ROUNDS = 200;
/** Firestore allows 500 writes per batch; stay well under it. */
export const BATCH_WRITES = 400;
/** ping() answers within this time or reports the backend unavailable. */
const PING_TIMEOUT_MS = 2_000;
/**
 * Any other call: an unreachable backend must not hold a request forever. (The
 * client waits for a connection and retries UNAVAILABLE on its own: a read
 * against a dead endpoint fails only after about 45 s.)
 */
const CALL_TIMEOUT_MS = 10_000;
/** close() waits this long for calls still running before it gives up on a clean terminate(). */
const CLOSE_GRACE_MS = 1_000;

const isUnavailable = (err: unknown): boolean => {
  const code = errCode(err);
  return code === Code.UNAVAILABLE || code === Code.DEADLINE_EXCEEDED || code === Code.CANCELLED || code === Code.RESOURCE_EXHAUSTED;
};

/** Newest-first paging key: fixed-width time, then the id, so string order is (time, id) order. */
export const sortKey = (createdAt: number, id: string): string => `${String(createdAt).padStart(16, '0')}|${id}`;

export const buf = (v: unknown): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array));

export interface FirestoreConnectConfig {
  gcpProject: string | undefined;
  firestoreEmulatorHost: string | undefined;
}

export interface FirestoreStoreOptions {
  /** A call gives up (BackendUnavailable) after this long. */
  callTimeoutMs?: number;
  /** ping()'s deadline. */
  pingTimeoutMs?: number;
}

/**
 * Fault injection for tests (test/support/store-faults.ts): called after a counting write has landed;
 * throwing makes the caller see a write that landed and then timed out.
 */
export type WriteFaults = (what: string) => void;

/** A client for Cloud Firestore (project from GOOGLE_CLOUD_PROJECT or the metadata server), or for an emulator. */
export function openClient(config: FirestoreConnectConfig): FirestoreClient {
  const settings: Settings = {
    ignoreUndefinedProperties: true,
    // gRPC's reconnect backoff grows to 2 minutes by default: after an outage the store would be back long before
    // the client tried again (readiness took 8 s after a 12 s outage). Retry at most half a second apart.
    grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 500 },
  };
  const projectId = config.gcpProject ?? (config.firestoreEmulatorHost ? 'keyward-local' : undefined);
  if (projectId) settings.projectId = projectId;
  if (config.firestoreEmulatorHost) {
    settings.host = config.firestoreEmulatorHost;
    settings.ssl = false;
    // A plaintext emulator takes no credentials; naming the universe keeps the client from probing
    // for Application Default Credentials (a metadata-server lookup) before its first call.
    (settings as Settings & { universeDomain: string }).universeDomain = 'googleapis.com';
  }
  return new Firestore(settings);
}

export class FirestoreDb {
  readonly orgs: CollectionReference;
  readonly orgTokens: CollectionReference;
  readonly adminKeys: CollectionReference;
  readonly credentials: CollectionReference;
  readonly tokens: CollectionReference;
  readonly pools: CollectionReference;
  readonly leases: CollectionReference;
  readonly usage: CollectionReference;
  readonly changes: CollectionReference;
  readonly audit: CollectionReference;
  readonly auditCounts: CollectionReference;
  readonly idempotency: CollectionReference;
  readonly meta: CollectionReference;
  private isClosed = false;
  private inflight = 0;
  private readonly idle: Array<() => void> = [];
  private markTerminated!: () => void;
  /** Resolves when the client has been terminated (after close(), once no call is running). */
  readonly terminated = new Promise<void>((resolve) => (this.markTerminated = resolve));
  private readonly callTimeoutMs: number;
  private readonly pingTimeoutMs: number;
  /** Tests: see WriteFaults. */
  faults: WriteFaults | undefined;

  constructor(readonly client: FirestoreClient, options: FirestoreStoreOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? CALL_TIMEOUT_MS;
    this.pingTimeoutMs = options.pingTimeoutMs ?? PING_TIMEOUT_MS;
    this.orgs = client.collection('orgs');
    this.orgTokens = client.collection('org_tokens');
    this.adminKeys = client.collection('admin_keys');
    this.credentials = client.collection('credentials');
    this.tokens = client.collection('tokens');
    this.pools = client.collection('pools');
    this.leases = client.collection('leases');
    this.usage = client.collection('usage');
    this.changes = client.collection('changes');
    this.audit = client.collection('audit');
    this.auditCounts = client.collection('audit_counts');
    this.idempotency = client.collection('idempotency');
    this.meta = client.collection('meta');
  }

  /** close() has begun: no new call starts. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Runs one store operation; an unreachable backend (or no answer in time) becomes BackendUnavailable. */
  async guard<T>(fn: () => Promise<T>, timeoutMs = this.callTimeoutMs): Promise<T> {
    if (this.isClosed) throw new Error('the Firestore store is closed');
    try {
      return await withTimeout(this.track(fn()), timeoutMs);
    } catch (err) {
      if (err instanceof Timeout || isUnavailable(err)) throw new BackendUnavailable('firestore', { cause: err });
      throw err;
    }
  }

  /** Counts calls still running in the client (a timed-out call keeps running there), so close() knows. */
  track<T>(p: Promise<T>): Promise<T> {
    this.inflight++;
    const done = () => {
      if (--this.inflight === 0) for (const f of this.idle.splice(0)) f();
    };
    p.then(done, done);
    return p;
  }

  /** Commits a counting write (usage, leases, idempotency claims, audit counts): where tests inject faults. */
  async commit(batch: WriteBatch, what: string): Promise<void> {
    await batch.commit();
    this.faults?.(what);
  }

  /** create() of a counting write (see commit). */
  async create(ref: DocumentReference, data: DocumentData, what: string): Promise<void> {
    await ref.create(data);
    this.faults?.(what);
  }

  /** Runs `round` until it returns an outcome; gives up after MAX_ROUNDS lost races. */
  async rounds<T>(what: string, round: (n: number) => Promise<T | undefined>): Promise<T> {
    for (let n = 0; n < MAX_ROUNDS; n++) {
      const out = await round(n);
      if (out !== undefined) return out;
    }
    throw new BackendUnavailable(`firestore (${what} contended)`);
  }

  ping(): Promise<void> {
    return this.guard(async () => {
      await this.orgs.doc('ping').get();
    }, this.pingTimeoutMs);
  }

  /**
   * Marks the store closed at once (synchronously), then terminates the client.
   * Firestore's terminate() waits for every call still running (one sent while
   * the backend is down can run for a minute), and a read that retries after
   * terminate() leaves an unhandled rejection inside the client. So: calls get
   * a short grace; if some still run, close() returns and the client is
   * terminated once they have settled (`terminated` says when).
   */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    const terminate = () => this.client.terminate().then(this.markTerminated, this.markTerminated);
    if (this.inflight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CLOSE_GRACE_MS);
        timer.unref();
        this.idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (this.inflight === 0) return terminate();
    this.idle.push(() => void terminate());
  }
}

/**
 * One newest-first page of an org's credentials, tokens or admin keys, by `sortKey`; a cursor not of this org
 * (or, with `createdBy`, not that caller's) is BAD_CURSOR. `createdBy` needs the (orgId, createdBy, sortKey) index.
 */
/** Deletes an organisation's document (`d`, read before): false when it belongs to another or is already gone. */
export async function deleteOwned(d: DocumentSnapshot | undefined, orgId: string): Promise<boolean> {
  if (!d || d.get('orgId') !== orgId) return false;
  try {
    await d.ref.delete({ exists: true });
    return true;
  } catch (err) {
    if (errCode(err) === Code.NOT_FOUND) return false;
    throw err;
  }
}

export async function pageByOrg<T>(
  coll: CollectionReference, orgId: string, q: NamedPageQuery, cursorOf: (id: string) => Promise<DocumentSnapshot | undefined>,
  map: (d: DocumentSnapshot) => T, createdBy?: string,
): Promise<Page<T> | typeof BAD_CURSOR> {
  let query: Query = coll.where('orgId', '==', orgId);
  if (createdBy !== undefined) query = query.where('createdBy', '==', createdBy);
  // Every prefix of the folded name is stored (store/name-key.ts): needs the (orgId, namePrefixes, sortKey) index.
  if (q.namePrefix !== undefined) query = query.where('namePrefixes', 'array-contains', nameKey(q.namePrefix));
  if (q.startingAfter !== undefined) {
    const cursor = await cursorOf(q.startingAfter);
    if (!cursor?.exists || cursor.get('orgId') !== orgId || (createdBy !== undefined && cursor.get('createdBy') !== createdBy)) return BAD_CURSOR;
    query = query.where('sortKey', '<', cursor.get('sortKey'));
  }
  const snap = await query.orderBy('sortKey', 'desc').limit(q.limit + 1).get();
  return { data: snap.docs.slice(0, q.limit).map(map), hasMore: snap.size > q.limit };
}
