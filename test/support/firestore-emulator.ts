/**
 * Test support: the in-process Firestore emulator (@firestore-emulator/server)
 * on 127.0.0.1 and a free port, and FirestoreStore instances connected to it.
 * Each emulator holds its own data; each store is a separate Firestore client,
 * so several stores on one emulator behave like several Cloud Run instances.
 *
 * The emulator serialises every commit, honours create() and exists
 * preconditions and increments, and delivers listeners; it does not isolate
 * transactions (they run, but do not conflict) and ignores updateTime
 * preconditions. Its commit applies a batch's writes one by one and stops at
 * the first failed precondition, keeping the writes before it; Cloud Firestore
 * commits a batch whole or not at all, so here every commit's preconditions
 * are checked first (atomicCommits) and a batch that fails writes nothing. And
 * on every write anywhere, its query listeners each run their query again and
 * are sent their whole result; Firestore sends a listener only what changed for
 * it, so here (incrementalListeners) a listener's query runs again only for a
 * write in its collection (once per turn) and it is sent the documents added,
 * changed or removed: what lets many instances share one emulator (`npm run bench -- scale`).
 *
 * Outages: kill() stops serving at once; revive() serves again on the same
 * port (with empty data). A client whose calls were cut off by kill() only
 * settles them once something answers again, so stop() revives a killed
 * emulator before it closes the stores, and tests that kill should revive.
 */
import type { ExecutionContext } from 'ava';
import { FirestoreServer } from '@firestore-emulator/server';
import { createRequire } from 'node:module';
import { FirestoreStore, type FirestoreStoreOptions } from '../../src/store/firestore/firestore-store.js';

// The emulator's own copy of grpc-js: its Server only accepts that copy's credentials.
const emulatorRequire = createRequire(import.meta.resolve('@firestore-emulator/server'));
const grpc = emulatorRequire('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
const listenProto = emulatorRequire('@firestore-emulator/proto/dist/google/firestore/v1/firestore') as {
  ListenResponse: { fromObject(o: unknown): unknown };
  TargetChangeTargetChangeType: Record<'ADD' | 'CURRENT' | 'NO_CHANGE', number>;
};
const { TimestampFromNow } = emulatorRequire('@firestore-emulator/server') as { TimestampFromNow(): { toObject(): unknown } };

export interface Emulator {
  host: string;
  port: number;
  /** The running server (replaced by revive()). */
  readonly server: FirestoreServer;
  /** A new store (a new client: another "instance") on this emulator, with a 60 s call deadline unless given; closed by stop(). */
  store(options?: FirestoreStoreOptions): Promise<FirestoreStore>;
  /** Tracks a store made elsewhere (a whole app's) so that stop() lets it finish before the server goes. */
  adopt(store: FirestoreStore): void;
  /** Stops serving at once, leaving clients connected to nothing (a Firestore outage). */
  kill(): void;
  /** Serves again on the same port, with empty data. */
  revive(): Promise<void>;
  stop(): Promise<void>;
}

/** The emulator's service state and the gRPC server's handler table (internals: see atomicCommits). */
interface EmulatorInternals {
  state: { getDocument(path: string): { metadata: { hasExist: boolean } } };
  server: { handlers: Map<string, { func: (call: { request: CommitRequest }, callback: (err: unknown, value?: unknown) => void) => void }> };
}

interface CommitRequest {
  writes: Array<{
    has_delete: boolean; delete: string; has_update: boolean; update: { name: string };
    has_current_document: boolean; current_document: { has_exists: boolean; exists: boolean };
  }>;
}

/** Checks every write's exists precondition (in order, as the batch would leave each document) before the emulator applies any. */
function atomicCommits(server: FirestoreServer): void {
  const { state, server: grpcServer } = server as unknown as EmulatorInternals;
  const handler = grpcServer.handlers.get('/google.firestore.v1.Firestore/Commit')!;
  const commit = handler.func;
  handler.func = (call, callback) => {
    const exists = new Map<string, boolean>();
    for (const w of call.request.writes) {
      const name = w.has_delete ? w.delete : w.update.name;
      const now = exists.get(name) ?? state.getDocument(name).metadata.hasExist;
      if (w.has_current_document && w.current_document.has_exists && w.current_document.exists !== now) {
        callback({ code: now ? grpc.status.ALREADY_EXISTS : grpc.status.NOT_FOUND, message: `${now ? 'entity already exists' : 'no entity to update'}: ${name}` });
        return;
      }
      exists.set(name, !w.has_delete);
    }
    commit(call, callback);
  };
}

interface StateDoc {
  getPath(): string;
  toV1DocumentObject(): { name: string; update_time?: { seconds?: number; nanos?: number } };
}

interface ListenState {
  emitter: { on(e: string, f: (x: { document: StateDoc }) => void): void; off(e: string, f: (x: { document: StateDoc }) => void): void; setMaxListeners?(n: number): void };
  v1Query(parent: string, query: unknown): StateDoc[];
  v1Listen(listen: ListenRequest, callback: (response: unknown) => void, onEnd: (handler: () => void) => void): void;
}

interface ListenRequest {
  has_add_target: boolean;
  add_target: { target_id: number; has_query: boolean; query: { parent: string; structured_query: { from: Array<{ collection_id: string }> } } };
}

/** Query listeners that are sent only what changed for them (see the header). Document listeners are left as they are. */
function incrementalListeners(server: FirestoreServer): void {
  const state = (server as unknown as { state: ListenState }).state;
  state.emitter.setMaxListeners?.(0);
  const original = state.v1Listen.bind(state);
  const { ListenResponse, TargetChangeTargetChangeType: Type } = listenProto;
  state.v1Listen = (listen, callback, onEnd) => {
    if (!listen.has_add_target || !listen.add_target.has_query) return original(listen, callback, onEnd);
    const target = listen.add_target.target_id;
    const { parent, structured_query: query } = listen.add_target.query;
    const collection = `${parent}/${query.from[0]!.collection_id}`;
    const send = (o: unknown) => callback(ListenResponse.fromObject(o));
    const snapshot = () => send({ target_change: { read_time: TimestampFromNow().toObject(), target_change_type: Type.NO_CHANGE, target_ids: [] } });
    const versions = new Map<string, string>();
    /** Sends what is new or changed since the last time (all of it the first time) and what left; whether anything did. */
    const sync = (): boolean => {
      let changed = false;
      const present = new Set<string>();
      for (const doc of state.v1Query(parent, query)) {
        const o = doc.toV1DocumentObject();
        const version = `${o.update_time?.seconds ?? 0}.${o.update_time?.nanos ?? 0}`;
        present.add(o.name);
        if (versions.get(o.name) === version) continue;
        versions.set(o.name, version);
        changed = true;
        send({ document_change: { document: o, target_ids: [target] } });
      }
      for (const name of [...versions.keys()]) {
        if (present.has(name)) continue;
        versions.delete(name);
        changed = true;
        send({ document_remove: { document: name, removed_target_ids: [target] } });
      }
      return changed;
    };
    send({ target_change: { target_change_type: Type.ADD, target_ids: [target] } });
    sync();
    send({ target_change: { read_time: TimestampFromNow().toObject(), target_change_type: Type.CURRENT, target_ids: [target] } });
    snapshot();
    let queued = false;
    const onWrite = ({ document }: { document: StateDoc }) => {
      const path = document.getPath();
      if (queued || path.slice(0, path.lastIndexOf('/')) !== collection) return;
      queued = true;
      setImmediate(() => {
        queued = false;
        if (sync()) snapshot();
      });
    };
    for (const event of ['create-document', 'update-document', 'delete-document']) {
      state.emitter.on(event, onWrite);
      onEnd(() => state.emitter.off(event, onWrite));
    }
  };
}

async function serve(port: number): Promise<{ server: FirestoreServer; port: number }> {
  const server = new FirestoreServer();
  atomicCommits(server);
  incrementalListeners(server);
  // FirestoreServer.start(port) binds 0.0.0.0 and hides the port it got; bind its gRPC server ourselves.
  const inner = (server as unknown as { server: import('@grpc/grpc-js').Server }).server;
  const bound = await new Promise<number>((resolve, reject) => {
    inner.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  return { server, port: bound };
}

/** Starts an emulator on 127.0.0.1:0; pass `t` to stop it (and its stores) when the test ends. */
export async function startEmulator(t?: ExecutionContext): Promise<Emulator> {
  let { server, port } = await serve(0);
  const host = `127.0.0.1:${port}`;
  const stores = new Set<FirestoreStore>();
  let killed = false;
  let stopped = false;
  const emulator: Emulator = {
    host,
    port,
    get server() {
      return server;
    },
    async store(options?: FirestoreStoreOptions) {
      // A generous call deadline unless the test sets its own (an outage's): this emulator shares a busy machine.
      const s = await FirestoreStore.connect({ gcpProject: 'keyward-test', firestoreEmulatorHost: host }, { callTimeoutMs: 60_000, ...options });
      stores.add(s);
      return s;
    },
    adopt(store) {
      stores.add(store);
    },
    kill() {
      if (killed) return;
      killed = true;
      server.stop();
    },
    async revive() {
      if (!killed) return;
      ({ server } = await serve(port));
      killed = false;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await emulator.revive();
      await Promise.all([...stores].map((s) => s.close().catch(() => undefined)));
      // Let every client finish (calls cut off by an outage settle once the server answers) before it goes away.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all([...stores].map((s) => s.terminated)),
        new Promise((r) => (timer = setTimeout(r, 20_000))),
      ]);
      clearTimeout(timer);
      server.stop();
    },
  };
  t?.teardown(() => emulator.stop());
  return emulator;
}
