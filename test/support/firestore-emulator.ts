/**
 * Test support: the in-process Firestore emulator (@firestore-emulator/server)
 * on 127.0.0.1 and a free port, and FirestoreStore instances connected to it.
 * Each emulator holds its own data; each store is a separate Firestore client,
 * so several stores on one emulator behave like several Cloud Run instances.
 *
 * The emulator serialises every commit, honours create() and exists
 * preconditions and increments, and delivers listeners; it does not isolate
 * transactions (they run, but do not conflict).
 */
import type { ExecutionContext } from 'ava';
import { FirestoreServer } from '@firestore-emulator/server';
import { createRequire } from 'node:module';
import { FirestoreStore } from '../../src/store/firestore/firestore-store.js';

// The emulator's own copy of grpc-js: its Server only accepts that copy's credentials.
const emulatorRequire = createRequire(import.meta.resolve('@firestore-emulator/server'));
const grpc = emulatorRequire('@grpc/grpc-js') as typeof import('@grpc/grpc-js');

export interface Emulator {
  host: string;
  port: number;
  server: FirestoreServer;
  /** A new store (a new client: another "instance") on this emulator. Closed in teardown. */
  store(t?: ExecutionContext): Promise<FirestoreStore>;
  /** Shuts the gRPC server down at once, leaving clients connected to nothing (a Firestore outage). */
  kill(): void;
  stop(): Promise<void>;
}

/** Starts an emulator on 127.0.0.1:0; pass `t` to stop it (and its stores) when the test ends. */
export async function startEmulator(t?: ExecutionContext): Promise<Emulator> {
  const server = new FirestoreServer();
  // FirestoreServer.start(port) binds 0.0.0.0 and hides the port; bind its gRPC server ourselves.
  const inner = (server as unknown as { server: import('@grpc/grpc-js').Server }).server;
  const port = await new Promise<number>((resolve, reject) => {
    inner.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  const host = `127.0.0.1:${port}`;
  const stores = new Set<FirestoreStore>();
  let stopped = false;
  const emulator: Emulator = {
    host,
    port,
    server,
    async store(tt?: ExecutionContext) {
      const s = await FirestoreStore.connect({ gcpProject: 'keyward-test', firestoreEmulatorHost: host });
      stores.add(s);
      tt?.teardown(() => s.close());
      return s;
    },
    kill() {
      server.stop();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all([...stores].map((s) => s.close().catch(() => undefined)));
      server.stop();
    },
  };
  t?.teardown(() => emulator.stop());
  return emulator;
}
