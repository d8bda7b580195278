import test from 'ava';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/ports.js';
import { tempDir } from '../support/app.js';
import { storeContract } from './contract.js';

// No breakFor: an embedded file has no outage to simulate (a closed store throws ERR_INVALID_STATE, which is not one).

storeContract(test, {
  name: 'sqlite',
  async backend(t) {
    const dir = tempDir(t, 'keyward-store-');
    return {
      async open(): Promise<Store> {
        const store = new SqliteStore(dir);
        t.teardown(() => store.close());
        return store;
      },
    };
  },
});
