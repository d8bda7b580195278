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
 * are checked first (atomicCommits) and a batch that fails writes nothing.
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

export interface Emulator {
  host: string;
  port: number;
  /** The running server (replaced by revive()). */
  readonly server: FirestoreServer;
  /** A new store (a new client: another "instance") on this emulator; closed by stop(). */
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

async function serve(port: number): Promise<{ server: FirestoreServer; port: number }> {
  const server = new FirestoreServer();
  atomicCommits(server);
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
      const s = await FirestoreStore.connect({ gcpProject: 'keyward-test', firestoreEmulatorHost: host }, options);
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
