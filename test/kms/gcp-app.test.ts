/**
 * A whole server with KEYWARD_KMS=gcp against our gRPC KMS: credentials are
 * sealed and opened through Cloud KMS Encrypt/Decrypt, and /readyz follows
 * the KMS's health.
 */
import 'reflect-metadata';
import test from 'ava';
import { Symbols } from '../../src/symbols.js';
import type { Store } from '../../src/store/ports.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { api, createCredential, createOrg, startApp, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startKmsServer } from '../support/kms-server.js';
import { eventually } from '../support/wait.js';

/**
 * Polls /readyz until it says `status`, moving the server's timers a second before each probe: the wrapper's
 * 5 s ping cache and readiness's own result ages pass on them. What the probe then waits for is real (a gRPC
 * server gone or back, the client's reconnection): bounded generously, a busy machine is slow.
 */
async function readyzBecomes(app: TestApp, timers: ManualClock, status: number): Promise<void> {
  await eventually(async () => {
    await timers.tick(1000);
    return (await api(app, 'GET', '/readyz')).status === status;
  }, `/readyz ${status}`, 30_000);
}

test('KEYWARD_KMS=gcp: a credential is sealed and opened through Cloud KMS; /readyz is 503 while the KMS is away', async (t) => {
  const kms = await startKmsServer(t);
  const timers = new ManualClock();
  const app = await startApp(t, { timers, env: { KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: kms.keyName, KEYWARD_KMS_ENDPOINT: kms.endpoint } });
  t.is((await api(app, 'GET', '/readyz')).status, 200);

  const org = await createOrg(app);
  const id = await createCredential(app, org, 'openai', 'sk-gcp-kms-0123456789abcdef');
  t.is(kms.calls.Encrypt, 1);
  const got = await api(app, 'GET', `/v1/credentials/${id}`, { token: org.token });
  t.is(got.status, 200);
  t.is(got.body.key_hint, '…cdef');

  // What the store holds names the key version; the proxy's lookup opens it through Decrypt.
  const store = app.server.container.resolve<Store>(Symbols.Store);
  const record = (await store.getCredential(org.id, id))!;
  t.is(record.kekId, kms.versionName(1));
  const credentials = app.server.container.resolve(CredentialService);
  t.is(await credentials.keyFor({ orgId: org.id, id, provider: 'openai' }), 'sk-gcp-kms-0123456789abcdef');
  t.is(kms.calls.Decrypt, 1);

  // After a rotation new credentials use the new primary version; old ones still open.
  kms.rotate();
  const id2 = await createCredential(app, org, 'openai', 'sk-gcp-kms-rotated-000000');
  t.is((await store.getCredential(org.id, id2))!.kekId, kms.versionName(2));
  credentials.clear();
  t.is(await credentials.keyFor({ orgId: org.id, id, provider: 'openai' }), 'sk-gcp-kms-0123456789abcdef');

  // KMS answering UNAVAILABLE: a new credential cannot be sealed → 503, nothing stored.
  kms.down = true;
  const refused = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-while-down-000000' } });
  t.is(refused.status, 503);
  t.is(refused.body.error.code, 'unavailable');
  t.is(await store.countCredentials(org.id), 2);
  kms.down = false;

  await kms.stop();
  await readyzBecomes(app, timers, 503);
  await kms.restart();
  await readyzBecomes(app, timers, 200);
  t.is((await api(app, 'GET', `/v1/credentials/${id}`, { token: org.token })).status, 200);
  t.false(app.logText().includes('sk-gcp-kms-0123456789abcdef'), 'the key is never logged');
});
