/**
 * The adapters the vault's core (core.ts) chooses from the config: the store (SQLite or
 * Firestore) and the key wrapper (a local key or Cloud KMS). Cloud adapters are imported lazily, so the
 * embedded default never loads the Firestore or KMS clients.
 */
import { systemTimers, type Timers } from '../clock.js';
import type { Config } from '../settings/config.js';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import { LocalKeyWrapper, loadOrCreateKeyFile } from '../kms/local.js';
import type { Logger } from '../log.js';
import type { Store } from '../store/ports.js';

export async function createStore(config: Config, timers: Timers = systemTimers): Promise<Store> {
  if (config.store === 'firestore') {
    const { FirestoreStore } = await import('../store/firestore/firestore-store.js');
    return FirestoreStore.connect(config);
  }
  const { SqliteStore } = await import('../store/sqlite/sqlite-store.js');
  try {
    return new SqliteStore(config.dataDir, undefined, timers);
  } catch (err) {
    // Start-up's one line names the variable to fix (a file where a folder should be, no permission…).
    throw new Error(`KEYWARD_DATA_DIR: cannot open the store in ${config.dataDir} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
}

export async function createKeyWrapper(config: Config, log: Logger, timers: Timers = systemTimers): Promise<KeyWrapper> {
  if (config.kms === 'gcp') {
    const { GcpKeyWrapper } = await import('../kms/gcp.js');
    // Its ping and primary-version caches age on the injected timers (tests move them).
    return GcpKeyWrapper.connect(config, { elapsed: () => timers.elapsed() });
  }
  let kek = config.localKek;
  if (!kek) {
    try {
      kek = loadOrCreateKeyFile(config.dataDir, log);
    } catch (err) {
      throw new Error(`KEYWARD_DATA_DIR: the local key file cannot be used (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); fix it or set KEYWARD_LOCAL_KEK`, { cause: err });
    }
  }
  return new LocalKeyWrapper(kek, config.localKekPrevious);
}
