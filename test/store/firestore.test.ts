import test from 'ava';
import { randomBytes } from 'node:crypto';
import { newId, newToken, sha256Hex } from '../../src/ids.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { storeContract } from './contract.js';

storeContract(test, {
  name: 'firestore',
  async backend(t) {
    const emulator = await startEmulator(t);
    return {
      open: () => emulator.store(),
      outage: {
        open: () => emulator.store({ callTimeoutMs: 1500, pingTimeoutMs: 1000 }),
        break: async () => emulator.kill(),
        mend: () => emulator.revive(),
      },
    };
  },
});

test('firestore: a delete that died between its two steps is finished by the next DELETE', async (t) => {
  const emulator = await startEmulator(t);
  const store = await emulator.store();
  const orgId = newId('org');
  await store.createOrg({ id: orgId, name: 'acme', createdAt: Date.now() }, { id: newId('otk'), orgId, tokenHash: sha256Hex(newToken('otok')), createdAt: Date.now(), expiresAt: null });
  const credId = newId('cred');
  const now = Date.now();
  await store.createCredential({ id: credId, orgId, provider: 'openai', keyHint: '…abcd', wrappedDek: randomBytes(60), kekId: 'k', nonce: randomBytes(12), ciphertext: randomBytes(40), createdAt: now, updatedAt: now }, 10);
  const tok = { id: newId('tok'), orgId, credentialId: credId, tokenHash: sha256Hex(newToken('ptok')), scopes: {}, createdAt: now, expiresAt: now + 60_000 };
  t.is(await store.createToken(tok), 'created');
  // Simulate the crash: the credential (and its slot) went, its tokens did not.
  await store.db.collection('credentials').doc(credId).delete();
  t.truthy(await store.findTokenByHash(tok.tokenHash));
  // Another org's DELETE of that id touches nothing of ours.
  t.false(await store.deleteCredential(newId('org'), credId));
  t.truthy(await store.findTokenByHash(tok.tokenHash));
  t.false(await store.deleteCredential(orgId, credId));
  t.is(await store.findTokenByHash(tok.tokenHash), undefined);
  t.deepEqual(await store.listTokens(orgId, { limit: 10 }), { data: [], hasMore: false });
});
