/**
 * The Cloud Run store: Firestore (native mode), shared by every instance and
 * nothing else. The data model (collections, ids, indexes) is described in
 * docs/cloud-run.md.
 *
 * Multi-instance correctness rests on what Firestore makes atomic for a single
 * write or a batch: `create()` fails with ALREADY_EXISTS when the document is
 * there, a delete with an `exists` precondition fails with NOT_FOUND when it is
 * not, a batch commits all or nothing, and `FieldValue.increment` adds
 * atomically. Transactions are used only where a compare-and-swap is the
 * operation itself (key rewrap, org token rotation); the local emulator used by
 * the tests does not isolate transactions, so those two are tested serially.
 *
 * - Credential limit: an org holds slot documents orgs/{org}/credential_slots/{k},
 *   k in [0, limit). A credential is stored in the same batch as create() of a
 *   free slot, so two creators can never both win slot k, and no more than
 *   `limit` credentials can exist. Deleting a credential deletes its slot in the
 *   same batch (guarded by an exists precondition on the credential, so only
 *   one deleter wins).
 * - Tokens live at tokens/{sha256 of the token} (O(1) lookup by hash). See
 *   createToken for how "only while its credential exists" holds without
 *   transaction isolation.
 * - Leases: see the comment above `lease`.
 * - Usage: per (scope, id, period) documents updated with FieldValue.increment.
 * - Change feed: mutations that must reach caches write a changes/{auto} document
 *   in the same batch; every process watches that collection with onSnapshot.
 */
import firestorePkg from '@google-cloud/firestore';
import type {
  CollectionReference, DocumentData, DocumentSnapshot, Firestore as FirestoreClient, Query, QueryDocumentSnapshot, Settings, WriteBatch,
} from '@google-cloud/firestore';
import { BackendUnavailable } from '../../errors.js';
import { Timeout, withTimeout } from '../../timeout.js';
import { FirestoreAudit } from './firestore-audit.js';
import { Code, errCode } from './firestore-codes.js';
import { FirestoreIdempotency } from './firestore-idempotency.js';
import { FirestoreSecrets } from './firestore-secrets.js';
import {
  BAD_CURSOR, type Change, type ChangeKind, type CredentialRecord, type OrgRecord, type OrgTokenRecord, type Page, type PageQuery,
  type AuditRecord, type IdempotencyRecord, type SealedKey, type Store, type StoredSecret, type TokenRecord, type UsageCounts, type UsageDelta, type UsageScope,
} from '../ports.js';

const { Firestore, FieldValue } = firestorePkg;


/** Change documents are needed only until every live watcher has seen them. */
const CHANGE_RETENTION_MS = 10 * 60_000;
/** How often one instance sweeps old change documents. */
const CHANGE_SWEEP_EVERY_MS = 60_000;
/** A new watcher also replays changes this old (harmless: invalidation is idempotent; covers small clock skew). */
const CHANGE_LOOKBACK_MS = 5_000;
/** A watch stream that failed for good is opened again after this delay. */
const WATCH_RETRY_MS = 1_000;
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
/** Contended create() loops (slots, lease blocks) give up after this many rounds. */
const MAX_ROUNDS = 200;
/** Firestore allows 500 writes per batch; stay well under it. */
const BATCH_WRITES = 400;

const isUnavailable = (err: unknown): boolean => {
  const code = errCode(err);
  return code === Code.UNAVAILABLE || code === Code.DEADLINE_EXCEEDED || code === Code.CANCELLED || code === Code.RESOURCE_EXHAUSTED;
};


/** Newest-first paging key: fixed-width created_at, then the id, so string order is (created_at, id) order. */
const sortKey = (createdAt: number, id: string): string => `${String(createdAt).padStart(16, '0')}|${id}`;

/** A lease key (`quota:org_…:2026-11`, `token:tok_…`) as a document id: no `/`, never `.`/`..`/`__…__`. */
const leaseDocId = (key: string): string => 'k_' + key.replace(/%/g, '%25').replace(/\//g, '%2F');

const shuffle = <T>(items: T[]): T[] => {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
};

const buf = (v: unknown): Buffer => (Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array));

function toCredential(d: DocumentSnapshot): CredentialRecord {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, provider: x.provider, keyHint: x.keyHint,
    wrappedDek: buf(x.wrappedDek), kekId: x.kekId, nonce: buf(x.nonce), ciphertext: buf(x.ciphertext),
    // Documents written before credentials had plain fields have none.
    fields: { ...(x.fields ?? {}) }, createdAt: x.createdAt, updatedAt: x.updatedAt,
  };
}

function toToken(d: DocumentSnapshot): TokenRecord {
  const x = d.data()!;
  return {
    id: x.id, orgId: x.orgId, credentialId: x.credentialId, tokenHash: x.tokenHash,
    scopes: JSON.parse(x.scopes), createdAt: x.createdAt, expiresAt: x.expiresAt,
  };
}

function toOrgToken(d: DocumentSnapshot): OrgTokenRecord {
  const x = d.data()!;
  return { id: x.id, orgId: x.orgId, tokenHash: x.tokenHash, createdAt: x.createdAt, expiresAt: x.expiresAt ?? null };
}

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

export class FirestoreStore implements Store {
  readonly kind = 'firestore';
  private readonly orgs: CollectionReference;
  private readonly orgTokens: CollectionReference;
  private readonly credentials: CollectionReference;
  private readonly tokens: CollectionReference;
  private readonly leases: CollectionReference;
  private readonly usage: CollectionReference;
  private readonly changes: CollectionReference;
  private readonly audit: FirestoreAudit;
  private readonly idempotency: FirestoreIdempotency;
  private readonly secrets: FirestoreSecrets;
  private readonly listeners = new Set<(c: Change) => void>();
  private unsubscribe: (() => void) | undefined;
  private watchRetry: NodeJS.Timeout | undefined;
  /** The current watch has delivered a snapshot and not failed since. */
  private live = false;
  /** Change documents already delivered by the current watch (snapshots can repeat them). */
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;
  private closed = false;
  private inflight = 0;
  private readonly idle: Array<() => void> = [];
  private markTerminated!: () => void;
  /** Resolves when the client has been terminated (after close(), once no call is running). */
  readonly terminated = new Promise<void>((resolve) => (this.markTerminated = resolve));

  /** Connects to Cloud Firestore (project from GOOGLE_CLOUD_PROJECT or the metadata server), or to an emulator. */
  static async connect(config: FirestoreConnectConfig, options: FirestoreStoreOptions = {}): Promise<FirestoreStore> {
    const settings: Settings = { ignoreUndefinedProperties: true };
    const projectId = config.gcpProject ?? (config.firestoreEmulatorHost ? 'keyward-local' : undefined);
    if (projectId) settings.projectId = projectId;
    if (config.firestoreEmulatorHost) {
      settings.host = config.firestoreEmulatorHost;
      settings.ssl = false;
      // A plaintext emulator takes no credentials; naming the universe keeps the client from probing
      // for Application Default Credentials (a metadata-server lookup) before its first call.
      (settings as Settings & { universeDomain: string }).universeDomain = 'googleapis.com';
    }
    return new FirestoreStore(new Firestore(settings), options);
  }

  private readonly callTimeoutMs: number;
  private readonly pingTimeoutMs: number;

  constructor(readonly db: FirestoreClient, options: FirestoreStoreOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? CALL_TIMEOUT_MS;
    this.pingTimeoutMs = options.pingTimeoutMs ?? PING_TIMEOUT_MS;
    this.orgs = db.collection('orgs');
    this.orgTokens = db.collection('org_tokens');
    this.credentials = db.collection('credentials');
    this.tokens = db.collection('tokens');
    this.leases = db.collection('leases');
    this.usage = db.collection('usage');
    this.changes = db.collection('changes');
    this.audit = new FirestoreAudit(db);
    this.idempotency = new FirestoreIdempotency(db);
    this.secrets = new FirestoreSecrets(db);
  }

  // ---- plumbing -------------------------------------------------------------

  /** Runs one store operation; an unreachable backend (or no answer in time) becomes BackendUnavailable. */
  private async guard<T>(fn: () => Promise<T>, timeoutMs = this.callTimeoutMs): Promise<T> {
    if (this.closed) throw new Error('the Firestore store is closed');
    try {
      return await withTimeout(this.track(fn()), timeoutMs);
    } catch (err) {
      if (err instanceof Timeout || isUnavailable(err)) throw new BackendUnavailable('firestore', { cause: err });
      throw err;
    }
  }

  /** Counts calls still running in the client (a timed-out call keeps running there), so close() knows. */
  private track<T>(p: Promise<T>): Promise<T> {
    this.inflight++;
    const done = () => {
      if (--this.inflight === 0) for (const f of this.idle.splice(0)) f();
    };
    p.then(done, done);
    return p;
  }

  private publish(batch: WriteBatch, kind: ChangeKind, id: string, now = Date.now()): void {
    batch.create(this.changes.doc(), { kind, id, at: now });
  }

  /** Deletes change documents older than the retention, at most once a minute per instance, in the background. */
  private sweepChanges(now = Date.now()): void {
    if (now - this.lastSweep < CHANGE_SWEEP_EVERY_MS || this.closed) return;
    this.lastSweep = now;
    void this.track((async () => {
      const old = await this.changes.where('at', '<', now - CHANGE_RETENTION_MS).orderBy('at').limit(BATCH_WRITES).get();
      if (old.empty) return;
      const batch = this.db.batch();
      for (const d of old.docs) batch.delete(d.ref);
      await batch.commit();
    })()).catch(() => { /* best effort: the next sweep retries */ });
  }

  private async commitChanges(batch: WriteBatch): Promise<void> {
    await batch.commit();
    this.sweepChanges();
  }

  private async page<T>(
    coll: CollectionReference, orgId: string, q: PageQuery, cursorOf: (id: string) => Promise<DocumentSnapshot | undefined>,
    map: (d: DocumentSnapshot) => T,
  ): Promise<Page<T> | typeof BAD_CURSOR> {
    let query: Query = coll.where('orgId', '==', orgId);
    if (q.startingAfter !== undefined) {
      const cursor = await cursorOf(q.startingAfter);
      if (!cursor?.exists || cursor.get('orgId') !== orgId) return BAD_CURSOR;
      query = query.where('sortKey', '<', cursor.get('sortKey'));
    }
    const snap = await query.orderBy('sortKey', 'desc').limit(q.limit + 1).get();
    return { data: snap.docs.slice(0, q.limit).map(map), hasMore: snap.size > q.limit };
  }

  private async tokenById(id: string): Promise<QueryDocumentSnapshot | undefined> {
    const snap = await this.tokens.where('id', '==', id).limit(1).get();
    return snap.docs[0];
  }

  // ---- lifecycle ------------------------------------------------------------

  ping(): Promise<void> {
    return this.guard(async () => {
      await this.orgs.doc('ping').get();
    }, this.pingTimeoutMs);
  }

  /**
   * Stops the feed and terminates the client. Firestore's terminate() waits
   * for every call still running (one sent while the backend is down can run
   * for a minute), and a read that retries after terminate() leaves an
   * unhandled rejection inside the client. So: calls get a short grace; if
   * some still run, close() returns and the client is terminated once they
   * have settled (`terminated` says when).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listeners.clear();
    this.stopWatching();
    const terminate = () => this.db.terminate().then(this.markTerminated, this.markTerminated);
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

  // ---- organisations --------------------------------------------------------

  createOrg(org: OrgRecord, token: OrgTokenRecord): Promise<void> {
    return this.guard(async () => {
      const batch = this.db.batch();
      batch.create(this.orgs.doc(org.id), { id: org.id, name: org.name, createdAt: org.createdAt });
      batch.create(this.orgTokens.doc(token.tokenHash), this.orgTokenDoc(token));
      await batch.commit();
    });
  }

  private orgTokenDoc(t: OrgTokenRecord): DocumentData {
    return { id: t.id, orgId: t.orgId, tokenHash: t.tokenHash, createdAt: t.createdAt, expiresAt: t.expiresAt };
  }

  getOrg(id: string): Promise<OrgRecord | undefined> {
    return this.guard(async () => {
      const d = await this.orgs.doc(id).get();
      if (!d.exists) return undefined;
      return { id: d.get('id'), name: d.get('name'), createdAt: d.get('createdAt') };
    });
  }

  findOrgToken(tokenHash: string): Promise<OrgTokenRecord | undefined> {
    return this.guard(async () => {
      const d = await this.orgTokens.doc(tokenHash).get();
      return d.exists ? toOrgToken(d) : undefined;
    });
  }

  /** A transaction: Firestore serialises it against a concurrent rotation (the emulator does not; rotations are rare and tested serially). */
  rotateOrgToken(token: OrgTokenRecord, retireAt: number, callerId: string): Promise<'rotated' | 'retiring'> {
    return this.guard(() => this.db.runTransaction(async (tx) => {
      const existing = await tx.get(this.orgTokens.where('orgId', '==', token.orgId));
      // Read in the transaction: a rotation that retired the caller meanwhile makes this one retry and refuse.
      const caller = existing.docs.find((d) => d.get('id') === callerId);
      if (!caller || caller.get('expiresAt') !== null) return 'retiring' as const;
      const dropBefore = token.createdAt - 86_400_000;
      for (const d of existing.docs) {
        const was = d.get('expiresAt') as number | null;
        const expiresAt = was === null || was > retireAt ? retireAt : was;
        if (expiresAt < dropBefore) tx.delete(d.ref);
        else if (expiresAt !== was) tx.update(d.ref, { expiresAt });
      }
      tx.create(this.orgTokens.doc(token.tokenHash), this.orgTokenDoc(token));
      tx.create(this.changes.doc(), { kind: 'org', id: token.orgId, at: Date.now() });
      return 'rotated' as const;
    })).finally(() => this.sweepChanges());
  }

  // ---- credentials ----------------------------------------------------------

  private slots(orgId: string): CollectionReference {
    return this.orgs.doc(orgId).collection('credential_slots');
  }

  /**
   * Claims a free slot k in [0, limit) with create(), in the same batch as the
   * credential: whoever creates slot k first wins it, the others re-read the
   * slots and try another. When `limit` slot documents exist the org is full.
   */
  createCredential(c: CredentialRecord, limit: number): Promise<'created' | 'limit'> {
    // The deadline applies per round: losing races is progress (someone else won), not an outage.
    return this.rounds('credential slots', (round) => this.guard(async () => {
      const slots = this.slots(c.orgId);
      const held = await slots.get();
      if (held.size >= limit) return 'limit' as const;
      const taken = new Set(held.docs.map((d) => d.id));
      const free: number[] = [];
      for (let k = 0; k < limit; k++) if (!taken.has(String(k))) free.push(k);
      if (free.length === 0) return 'limit' as const;
      const slot = free[Math.floor(Math.random() * free.length)]!;
      const batch = this.db.batch();
      // The slot first: where writes apply in order (the emulator), a lost slot writes nothing.
      batch.create(slots.doc(String(slot)), { credentialId: c.id, at: c.createdAt });
      batch.create(this.credentials.doc(c.id), {
        id: c.id, orgId: c.orgId, provider: c.provider, keyHint: c.keyHint,
        wrappedDek: c.wrappedDek, kekId: c.kekId, nonce: c.nonce, ciphertext: c.ciphertext,
        createdAt: c.createdAt, updatedAt: c.updatedAt, slot, sortKey: sortKey(c.createdAt, c.id), fields: { ...(c.fields ?? {}) },
      });
      try {
        await batch.commit();
        return 'created' as const;
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
        if ((await this.credentials.doc(c.id).get()).exists) throw err; // the id itself is taken: not a slot race
        await new Promise((r) => setTimeout(r, Math.random() * 5 * Math.min(round + 1, 10)));
        return undefined; // lost the slot: another round
      }
    }));
  }

  /** Runs `round` until it returns an outcome; gives up after MAX_ROUNDS lost races. */
  private async rounds<T>(what: string, round: (n: number) => Promise<T | undefined>): Promise<T> {
    for (let n = 0; n < MAX_ROUNDS; n++) {
      const out = await round(n);
      if (out !== undefined) return out;
    }
    throw new BackendUnavailable(`firestore (${what} contended)`);
  }

  getCredential(orgId: string, id: string): Promise<CredentialRecord | undefined> {
    return this.guard(async () => {
      const d = await this.credentials.doc(id).get();
      return d.exists && d.get('orgId') === orgId ? toCredential(d) : undefined;
    });
  }

  listCredentials(orgId: string, q: PageQuery): Promise<Page<CredentialRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.page(this.credentials, orgId, q, async (id) => this.credentials.doc(id).get(), toCredential));
  }

  countCredentials(orgId: string): Promise<number> {
    return this.guard(async () => (await this.credentials.where('orgId', '==', orgId).count().get()).data().count);
  }

  /**
   * One batch deletes the credential (exists precondition: one deleter wins),
   * frees its slot and announces it; then its tokens go, each announced. A
   * token created concurrently is either seen here or rolled back by
   * createToken's re-check.
   */
  deleteCredential(orgId: string, id: string): Promise<boolean> {
    return this.guard(async () => {
      const ref = this.credentials.doc(id);
      const d = await ref.get();
      if (!d.exists) {
        // Gone already. If a delete died between its two steps, its tokens are still here: finish the job.
        await this.deleteTokensOf(id, orgId);
        return false;
      }
      if (d.get('orgId') !== orgId) return false;
      const batch = this.db.batch();
      batch.delete(ref, { exists: true });
      const slot = d.get('slot');
      if (slot !== undefined) batch.delete(this.slots(orgId).doc(String(slot)));
      this.publish(batch, 'credential', id);
      try {
        await batch.commit();
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false; // another deleter won
        throw err;
      }
      await this.deleteTokensOf(id, orgId);
      this.sweepChanges();
      return true;
    });
  }

  private async deleteTokensOf(credentialId: string, orgId: string): Promise<void> {
    for (;;) {
      const snap = await this.tokens.where('credentialId', '==', credentialId).where('orgId', '==', orgId).limit(BATCH_WRITES / 2).get();
      if (snap.empty) return;
      // No change per token: the credential's one change (in the batch that deleted it) covers them all.
      const batch = this.db.batch();
      for (const t of snap.docs) batch.delete(t.ref);
      await batch.commit();
    }
  }

  replaceCredentialKey(orgId: string, id: string, s: SealedKey, keyHint: string, updatedAt: number): Promise<boolean> {
    return this.guard(async () => {
      const ref = this.credentials.doc(id);
      const d = await ref.get();
      if (!d.exists || d.get('orgId') !== orgId) return false;
      const batch = this.db.batch();
      // update() carries an exists precondition: a credential deleted meanwhile fails with NOT_FOUND.
      batch.update(ref, { wrappedDek: s.wrappedDek, kekId: s.kekId, nonce: s.nonce, ciphertext: s.ciphertext, keyHint, updatedAt });
      this.publish(batch, 'credential', id);
      try {
        await this.commitChanges(batch);
        return true;
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false;
        throw err;
      }
    });
  }

  async *allCredentials(): AsyncIterable<CredentialRecord> {
    let after = '';
    for (;;) {
      const snap = await this.guard(() => this.credentials.where('id', '>', after).orderBy('id').limit(100).get());
      if (snap.empty) return;
      for (const d of snap.docs) yield toCredential(d);
      after = snap.docs[snap.docs.length - 1]!.get('id');
    }
  }

  /** Compare-and-swap in a transaction (a rotation racing a rewrap must never pair an old DEK with a new ciphertext). */
  rewrapCredential(id: string, expected: Buffer, wrappedDek: Buffer, kekId: string): Promise<boolean> {
    return this.guard(() => this.db.runTransaction(async (tx) => {
      const ref = this.credentials.doc(id);
      const d = await tx.get(ref);
      if (!d.exists || !buf(d.get('wrappedDek')).equals(expected)) return false;
      tx.update(ref, { wrappedDek, kekId });
      tx.create(this.changes.doc(), { kind: 'credential', id, at: Date.now() });
      return true;
    })).finally(() => this.sweepChanges());
  }

  // ---- tokens ---------------------------------------------------------------

  /**
   * Without transaction isolation: (1) read the credential, (2) create the
   * token, (3) read the credential again and roll the token back if it is gone.
   * If (3) still sees the credential, the token's write precedes the deletion,
   * which precedes deleteCredential's token query, so that query finds and
   * deletes it. Either way no token outlives its credential. (Credential ids
   * are never reused.)
   */
  createToken(t: TokenRecord): Promise<'created' | 'no_credential'> {
    return this.guard(async () => {
      const cred = this.credentials.doc(t.credentialId);
      const before = await cred.get();
      if (!before.exists || before.get('orgId') !== t.orgId) return 'no_credential' as const;
      const ref = this.tokens.doc(t.tokenHash);
      await ref.create({
        id: t.id, orgId: t.orgId, credentialId: t.credentialId, tokenHash: t.tokenHash, scopes: JSON.stringify(t.scopes),
        createdAt: t.createdAt, expiresAt: t.expiresAt, sortKey: sortKey(t.createdAt, t.id),
      });
      if (!(await cred.get()).exists) {
        await ref.delete();
        return 'no_credential' as const;
      }
      return 'created' as const;
    });
  }

  findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined> {
    return this.guard(async () => {
      const d = await this.tokens.doc(tokenHash).get();
      return d.exists ? toToken(d) : undefined;
    });
  }

  getToken(orgId: string, id: string): Promise<TokenRecord | undefined> {
    return this.guard(async () => {
      const d = await this.tokenById(id);
      return d && d.get('orgId') === orgId ? toToken(d) : undefined;
    });
  }

  listTokens(orgId: string, q: PageQuery): Promise<Page<TokenRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.page(this.tokens, orgId, q, (id) => this.tokenById(id), toToken));
  }

  deleteToken(orgId: string, id: string): Promise<boolean> {
    return this.guard(async () => {
      const d = await this.tokenById(id);
      if (!d || d.get('orgId') !== orgId) return false;
      const batch = this.db.batch();
      batch.delete(d.ref, { exists: true });
      this.publish(batch, 'token', id);
      try {
        await this.commitChanges(batch);
        return true;
      } catch (err) {
        if (errCode(err) === Code.NOT_FOUND) return false;
        throw err;
      }
    });
  }

  // ---- leases ---------------------------------------------------------------

  /*
   * Leases without transactions. Under leases/{key}:
   *   blocks/{seq}  {seq, start, end}: created once each with create(); block
   *                 seq+1 starts where block seq ends (blocks are immutable), so
   *                 the blocks tile [0, end) without overlap, and a block is
   *                 only created with end <= limit. Two instances that read the
   *                 same last block race to create the same next seq: one wins,
   *                 the other re-reads and tries seq+2.
   *   returns/{id}  {units}: units handed back by `release`. A lease takes a
   *                 returned document by deleting it with an exists
   *                 precondition (only one deleter succeeds; ids are never
   *                 reused); a remainder beyond `want` is re-created in the same
   *                 batch.
   * Units outstanding = end of the last block - units in returns/ <= limit. A
   * crash between a grant and its use only loses units (never over-grants).
   */
  lease(key: string, limit: number, want: number): Promise<{ granted: number; leased: number }> {
    if (want <= 0) return this.guard(async () => ({ granted: 0, leased: await this.leasedNow(key) }));
    const base = this.leases.doc(leaseDocId(key));
    const blocks = base.collection('blocks');
    const returns = base.collection('returns');
    return this.rounds('lease', (round) => this.guard(async () => {
      const [lastSnap, returnedSnap] = await Promise.all([blocks.orderBy('seq', 'desc').limit(1).get(), returns.limit(100).get()]);
      const last = lastSnap.docs[0];
      const seq: number = last?.get('seq') ?? 0;
      const end: number = last?.get('end') ?? 0;
      const returned = returnedSnap.docs.reduce((n, d) => n + (d.get('units') as number), 0);
      const outstanding = end - returned;
      const room = limit - outstanding;
      if (room <= 0) return { granted: 0, leased: outstanding };

      // Returned units first (at most one returned document per round)…
      let granted = 0;
      let contended = false;
      for (const r of shuffle([...returnedSnap.docs])) {
        const units = r.get('units') as number;
        const take = Math.min(want, units, room);
        if (take <= 0) continue;
        const batch = this.db.batch();
        batch.delete(r.ref, { exists: true });
        if (units > take) batch.create(returns.doc(), { units: units - take, at: Date.now() });
        try {
          await batch.commit();
          granted = take;
          break;
        } catch (err) {
          if (errCode(err) !== Code.NOT_FOUND) throw err;
          contended = true; // someone else took it; try the next
        }
      }

      // …then a new block for the rest, never past the limit.
      const size = Math.min(want - granted, limit - end);
      if (size <= 0) {
        if (granted === 0 && contended) return undefined;
        return { granted, leased: outstanding + granted };
      }
      try {
        await blocks.doc(String(seq + 1).padStart(12, '0')).create({ seq: seq + 1, start: end, end: end + size, at: Date.now() });
        return { granted: granted + size, leased: outstanding + granted + size };
      } catch (err) {
        if (errCode(err) !== Code.ALREADY_EXISTS) throw err;
        // Another instance took block seq+1: keep what we have, or read again.
        if (granted > 0) return { granted, leased: outstanding + granted };
        await new Promise((r) => setTimeout(r, Math.random() * 3 * Math.min(round + 1, 10)));
        return undefined;
      }
    }));
  }

  /** Hands units back; never more than are out (as SQLite's MAX(0, leased - units)), so a bad release cannot mint units. */
  release(key: string, units: number): Promise<void> {
    if (units <= 0) return Promise.resolve();
    return this.guard(async () => {
      const out = Math.min(units, await this.leasedNow(key));
      if (out <= 0) return;
      await this.leases.doc(leaseDocId(key)).collection('returns').doc().create({ units: out, at: Date.now() });
    });
  }

  private async leasedNow(key: string): Promise<number> {
    const base = this.leases.doc(leaseDocId(key));
    const [last, returned] = await Promise.all([
      base.collection('blocks').orderBy('seq', 'desc').limit(1).get(),
      base.collection('returns').get(),
    ]);
    const end: number = last.docs[0]?.get('end') ?? 0;
    return end - returned.docs.reduce((n, d) => n + (d.get('units') as number), 0);
  }

  leased(key: string): Promise<number> {
    return this.guard(() => this.leasedNow(key));
  }

  // ---- usage ----------------------------------------------------------------

  private usageDoc(scope: UsageScope, id: string): CollectionReference {
    return this.usage.doc(`${scope}:${id.replace(/\//g, '%2F')}`).collection('periods');
  }

  addUsage(deltas: UsageDelta[]): Promise<void> {
    if (deltas.length === 0) return Promise.resolve();
    // One write per counter: deltas for the same counter are summed first.
    const merged = new Map<string, UsageDelta>();
    for (const d of deltas) {
      const k = `${d.scope}\0${d.id}\0${d.period}`;
      const m = merged.get(k);
      if (m) {
        m.requests += d.requests;
        m.inputTokens += d.inputTokens;
        m.outputTokens += d.outputTokens;
      } else {
        merged.set(k, { ...d });
      }
    }
    return this.guard(async () => {
      const all = [...merged.values()];
      for (let i = 0; i < all.length; i += BATCH_WRITES) {
        const batch = this.db.batch();
        for (const d of all.slice(i, i + BATCH_WRITES)) {
          batch.set(this.usageDoc(d.scope, d.id).doc(d.period), {
            period: d.period,
            requests: FieldValue.increment(d.requests),
            inputTokens: FieldValue.increment(d.inputTokens),
            outputTokens: FieldValue.increment(d.outputTokens),
          }, { merge: true });
        }
        await batch.commit();
      }
    });
  }

  getUsage(scope: UsageScope, id: string, period?: string): Promise<UsageCounts> {
    return this.guard(async () => {
      const periods = this.usageDoc(scope, id);
      const docs = period === undefined ? (await periods.get()).docs : [await periods.doc(period).get()].filter((d) => d.exists);
      const out: UsageCounts = { requests: 0, inputTokens: 0, outputTokens: 0 };
      for (const d of docs) {
        out.requests += d.get('requests') ?? 0;
        out.inputTokens += d.get('inputTokens') ?? 0;
        out.outputTokens += d.get('outputTokens') ?? 0;
      }
      return out;
    });
  }

  // ---- audit (firestore-audit.ts), idempotency, deployment secrets ---------

  appendAudit(records: AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.guard(() => this.audit.append(records));
  }

  addAuditCounts(records: AuditRecord[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    return this.guard(() => this.audit.addCounts(records));
  }

  listAudit(orgId: string, q: PageQuery, now = Date.now()): Promise<Page<AuditRecord> | typeof BAD_CURSOR> {
    return this.guard(() => this.audit.list(orgId, q, now));
  }

  /** Firestore deletes expired records itself (a TTL policy on `expire_at`). */
  async deleteExpiredAudit(): Promise<number> {
    return 0;
  }

  claimIdempotency(record: IdempotencyRecord, expireBefore: number): Promise<'claimed' | IdempotencyRecord> {
    return this.guard(() => this.idempotency.claim(record, expireBefore));
  }

  completeIdempotency(scope: string, response: { status: number; body: unknown }): Promise<void> {
    return this.guard(() => this.idempotency.complete(scope, response));
  }

  releaseIdempotency(scope: string): Promise<void> {
    return this.guard(() => this.idempotency.release(scope));
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

  // ---- change feed ----------------------------------------------------------

  watch(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    if (!this.unsubscribe && !this.watchRetry && !this.closed) this.startWatching(Date.now() - CHANGE_LOOKBACK_MS);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopWatching();
    };
  }

  /**
   * Live from the first snapshot until the stream fails for good (not while it
   * is opened again). The client's own reconnects after transient faults are
   * not visible here.
   */
  isLive(): boolean {
    return this.live;
  }

  /** Listens to changes/ documents newer than `from`; every one added is delivered once. */
  private startWatching(from: number): void {
    let newest = from;
    this.unsubscribe = this.changes.where('at', '>', from).orderBy('at').onSnapshot(
      (snap) => {
        this.live = true;
        for (const ch of snap.docChanges()) {
          if (ch.type !== 'added' || this.seen.has(ch.doc.id)) continue;
          const at = ch.doc.get('at') as number;
          this.seen.set(ch.doc.id, at);
          if (at > newest) newest = at;
          const change: Change = { kind: ch.doc.get('kind'), id: ch.doc.get('id') };
          for (const l of [...this.listeners]) {
            try {
              l(change);
            } catch { /* a listener's bug must not stop the feed */ }
          }
        }
        // Forget delivered ids once they are older than anything a snapshot can still hold.
        if (this.seen.size > 1000) {
          const cutoff = Date.now() - CHANGE_RETENTION_MS - 60_000;
          for (const [id, at] of this.seen) if (at < cutoff) this.seen.delete(id);
        }
      },
      () => {
        // The stream failed for good (the client retries transient faults itself): open it again.
        this.live = false;
        this.unsubscribe = undefined;
        if (this.closed || this.listeners.size === 0) return;
        this.watchRetry = setTimeout(() => {
          this.watchRetry = undefined;
          if (!this.closed && this.listeners.size > 0 && !this.unsubscribe) this.startWatching(newest - CHANGE_LOOKBACK_MS);
        }, WATCH_RETRY_MS);
        this.watchRetry.unref();
      },
    );
  }

  private stopWatching(): void {
    this.live = false;
    if (this.watchRetry) clearTimeout(this.watchRetry);
    this.watchRetry = undefined;
    const unsubscribe = this.unsubscribe;
    this.unsubscribe = undefined;
    unsubscribe?.();
  }
}
