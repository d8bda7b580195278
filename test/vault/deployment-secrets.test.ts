/**
 * Deployment secrets: one per deployment (every instance agrees, restarts keep
 * it), stored only wrapped under the KEK with its own AAD, unwrapped once, and
 * moved by `keys rewrap` so the previous KEK can be retired.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { LocalKeyWrapper } from '../../src/kms/local.js';
import type { KeyWrapper } from '../../src/kms/key-wrapper.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { credentialAad, Envelope } from '../../src/vault/envelope.js';
import { DeploymentSecrets, IDEMPOTENCY_HMAC_KEY } from '../../src/vault/deployment-secrets.js';
import { RewrapService } from '../../src/vault/rewrap-service.js';
import { tempDir } from '../support/app.js';

const clock = { now: () => Date.now() };

/** Counts unwraps, so "unwrapped once" is checked, not assumed. */
function counting(wrapper: KeyWrapper): KeyWrapper & { unwraps: number } {
  const out = Object.assign(Object.create(wrapper) as KeyWrapper, { unwraps: 0 });
  out.unwrap = (w, aad, kekId) => {
    out.unwraps++;
    return wrapper.unwrap(w, aad, kekId);
  };
  return out;
}

test('instances on one store agree on one secret, made by whichever came first, stored wrapped, unwrapped once per instance', async (t) => {
  const dir = tempDir(t);
  const kek = randomBytes(32);
  const stores = [new SqliteStore(dir), new SqliteStore(dir), new SqliteStore(dir)];
  t.teardown(() => Promise.all(stores.map((s) => s.close())));
  const wrappers = stores.map(() => counting(new LocalKeyWrapper(kek)));
  const instances = stores.map((s, i) => new DeploymentSecrets(s, wrappers[i]!, clock));
  const secrets = await Promise.all(instances.map((s) => s.get(IDEMPOTENCY_HMAC_KEY)));
  t.is(secrets[0]!.length, 32);
  for (const s of secrets) t.true(s.equals(secrets[0]!));
  const stored = (await stores[0]!.getSecret(IDEMPOTENCY_HMAC_KEY))!;
  t.false(stored.wrapped.includes(secrets[0]!), 'never in plaintext');
  // Later calls come from memory.
  const before = wrappers.map((w) => w.unwraps);
  for (const s of instances) await s.hmac(IDEMPOTENCY_HMAC_KEY, Buffer.from('body'));
  t.deepEqual(wrappers.map((w) => w.unwraps), before);
  t.true(before.every((n) => n <= 1));
  // A restart (a new store and service on the same file) reads the same secret.
  const again = new SqliteStore(dir);
  t.teardown(() => again.close());
  t.true((await new DeploymentSecrets(again, new LocalKeyWrapper(kek), clock).get(IDEMPOTENCY_HMAC_KEY)).equals(secrets[0]!));
  // Its own AAD: the wrapped secret does not open as a credential's data key.
  await t.throwsAsync(new LocalKeyWrapper(kek).unwrap(stored.wrapped, credentialAad({ orgId: 'org_x', id: 'cred_x', provider: 'openai' }), stored.kekId));
});

test('keys rewrap moves the secret to the new KEK; once the old one is retired the same secret still opens', async (t) => {
  const dir = tempDir(t);
  const store = new SqliteStore(dir);
  t.teardown(() => store.close());
  const oldKek = randomBytes(32);
  const newKek = randomBytes(32);
  const original = await new DeploymentSecrets(store, new LocalKeyWrapper(oldKek), clock).get(IDEMPOTENCY_HMAC_KEY);
  const rotating = new LocalKeyWrapper(newKek, oldKek);
  const report = await new RewrapService(store, new Envelope(rotating), rotating, new DeploymentSecrets(store, rotating, clock)).run();
  t.deepEqual(report.failed, []);
  t.is((await store.getSecret(IDEMPOTENCY_HMAC_KEY))!.kekId, await rotating.currentKekId());
  const retired = await new DeploymentSecrets(store, new LocalKeyWrapper(newKek), clock).get(IDEMPOTENCY_HMAC_KEY);
  t.true(retired.equals(original));
  // Without the old key configured, the rewrap reports the secret it cannot open.
  const other = new SqliteStore(tempDir(t));
  t.teardown(() => other.close());
  await new DeploymentSecrets(other, new LocalKeyWrapper(oldKek), clock).get(IDEMPOTENCY_HMAC_KEY);
  const lost = new LocalKeyWrapper(newKek);
  const failed = await new RewrapService(other, new Envelope(lost), lost, new DeploymentSecrets(other, lost, clock)).run();
  t.deepEqual(failed.failed.map((f) => f.id), [`secret:${IDEMPOTENCY_HMAC_KEY}`]);
});
