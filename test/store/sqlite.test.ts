import test from 'ava';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import type { Store } from '../../src/store/ports.js';
import { newId, newToken, sha256Hex } from '../../src/vault/secrets.js';
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

// Serial: the contract tests above block this process's event loop (in-process lock waits), which would stall the poller.
test.serial('sqlite: the feed is not live while its polls fail, and live again (with what it missed) once they succeed', async (t) => {
  const dir = tempDir(t, 'keyward-store-');
  const [writer, reader] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all([writer.close(), reader.close()]));
  const heard: string[] = [];
  reader.watch((c) => heard.push(c.id));
  const until = async (ok: () => boolean, ms: number) => {
    const start = Date.now();
    while (!ok() && Date.now() - start < ms) await new Promise((r) => setTimeout(r, 20));
    return ok();
  };
  t.true(await until(() => reader.isLive(), 3000));
  reader.pollFault = new Error('disk unreadable');
  t.true(await until(() => !reader.isLive(), 1000), 'not live within about two poll intervals of failing');
  const orgId = newId('org');
  await writer.createOrg({ id: orgId, name: 'acme', createdAt: Date.now() }, { id: newId('otk'), orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null });
  await writer.rotateOrgToken({ id: newId('otk'), orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null }, Date.now());
  await new Promise((r) => setTimeout(r, 400));
  t.deepEqual(heard, [], 'nothing delivered while down');
  reader.pollFault = undefined;
  t.true(await until(() => reader.isLive() && heard.length > 0, 3000));
  t.deepEqual(heard, [orgId]);
});
