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

test('sqlite: a database made before credentials had plain fields gains the column on open; its credentials read back with none', async (t) => {
  const { DatabaseSync } = await import('node:sqlite');
  const { randomBytes } = await import('node:crypto');
  const dir = tempDir(t, 'keyward-store-');
  const now = Date.now();
  const first = new SqliteStore(dir);
  await first.createOrg({ id: 'org_old', name: 'old', createdAt: now }, { id: 'otk_old', orgId: 'org_old', tokenHash: 'h'.repeat(64), createdAt: now, expiresAt: null });
  const old = { id: 'cred_old', orgId: 'org_old', provider: 'openai', keyHint: '…wxyz', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(41), createdAt: now, updatedAt: now };
  t.is(await first.createCredential(old, 10), 'created');
  await first.close();
  // Back to the schema as it was: no `fields` column.
  const raw = new DatabaseSync(`${dir}/keyward.db`);
  raw.exec('ALTER TABLE credentials DROP COLUMN fields');
  t.false((raw.prepare('PRAGMA table_info(credentials)').all() as Array<{ name: string }>).some((c) => c.name === 'fields'));
  raw.close();

  // The first store to open the old file adds the column; a second one beside it finds it there.
  const [a, b] = [new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  t.deepEqual((await a.getCredential('org_old', 'cred_old'))?.fields, {});
  const next = { ...old, id: 'cred_new', fields: { organization: 'org-new' } };
  t.is(await b.createCredential(next, 10), 'created');
  t.deepEqual((await a.getCredential('org_old', 'cred_new'))?.fields, { organization: 'org-new' });
});
