/**
 * Gateways sharing one store of either adapter, for tests that must hold on both: two SQLite connections on
 * one file, or two Firestore clients on one emulator (a project of its own per test), in front of a usage
 * upstream with the `priced` provider. `start()` starts one more gateway on the same store.
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { startApp, tempDir, type StartOptions, type TestApp } from './app.js';
import { startEmulator } from './firestore-emulator.js';
import { providersDir } from './providers-dir.js';
import { startUsageUpstream, type UsageUpstream } from './budget.js';

export const BACKENDS = ['sqlite', 'firestore'] as const;
export type BackendName = (typeof BACKENDS)[number];

async function backendEnv(t: ExecutionContext, backend: BackendName): Promise<Record<string, string>> {
  if (backend === 'sqlite') return { KEYWARD_DATA_DIR: tempDir(t) };
  const emulator = await startEmulator(t);
  return { KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: `keyward-shared-${randomBytes(4).toString('hex')}` };
}

export interface SharedStore {
  up: UsageUpstream;
  env: Record<string, string>;
  /** One more gateway on the store (`options`: its clock and timers). */
  start(options?: Pick<StartOptions, 'clock' | 'timers'>): Promise<TestApp>;
}

/** A store of `backend` and a usage upstream; `extra` adds to the gateways' environment. */
export async function sharedStore(t: ExecutionContext, backend: BackendName, extra: Record<string, string> = {}): Promise<SharedStore> {
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const env: Record<string, string> = {
    ...(await backendEnv(t, backend)),
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'),
    KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']),
    KEYWARD_UPSTREAM_PRICED: up.url,
    KEYWARD_LOG_LEVEL: 'error',
    ...extra,
  };
  const dataDir = env.KEYWARD_DATA_DIR;
  return { up, env, start: (options = {}) => startApp(t, { ...options, env, ...(dataDir ? { dataDir } : {}) }) };
}
