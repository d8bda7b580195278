/**
 * GcpKeyWrapper with the real @google-cloud/kms client against our gRPC KMS
 * (test/support/kms-server.ts): real AES-GCM per key version, AAD, CRC32C.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { BackendUnavailable } from '../../src/errors.js';
import { crc32c, GcpKeyWrapper, KmsIntegrityError, type GcpKeyWrapperOptions } from '../../src/kms/gcp.js';
import { UnwrapFailed } from '../../src/kms/key-wrapper.js';
import { credentialAad, Envelope } from '../../src/vault/envelope.js';
import { startKmsServer, type KmsServer } from '../support/kms-server.js';
import { eventually } from '../support/wait.js';
import type { ExecutionContext } from 'ava';

async function wrapperFor(t: ExecutionContext, kms: KmsServer, options: GcpKeyWrapperOptions = {}): Promise<GcpKeyWrapper> {
  // Generous deadlines where the KMS answers (a new client's first call is slow on a busy machine); outage tests set short ones.
  const w = await GcpKeyWrapper.connect({ kmsKey: kms.keyName, kmsEndpoint: kms.endpoint }, { callTimeoutMs: 30_000, pingTimeoutMs: 30_000, ...options });
  t.teardown(() => w.close());
  return w;
}

const aad = Buffer.from('keyward/v1|org_a|cred_b|openai');

test('crc32c matches the Castagnoli check values', (t) => {
  t.is(crc32c(Buffer.from('123456789')), 0xe3069283);
  t.is(crc32c(Buffer.alloc(0)), 0);
  t.is(crc32c(Buffer.alloc(32, 0)), 0x8a9136aa);
  t.is(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43);
  t.is(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i))), 0x46dd794e);
  t.is(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i))), 0x113fdb5c);
  // Incremental: the CRC of a whole is the CRC of its second part seeded with the first's.
  const data = randomBytes(1000);
  t.is(crc32c(data.subarray(300), crc32c(data.subarray(0, 300))), crc32c(data));
});

test('wrap and unwrap round-trip; kekId is the key version Encrypt used', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms);
  t.is(w.kind, 'gcp');
  const dek = randomBytes(32);
  const { wrapped, kekId } = await w.wrap(dek, aad);
  t.is(kekId, kms.versionName(1));
  t.false(wrapped.includes(dek), 'the wrapped DEK does not contain the DEK');
  t.deepEqual(await w.unwrap(wrapped, aad, kekId), dek);
  t.is(await w.currentKekId(), kms.versionName(1));
});

test('a wrong AAD or a corrupted wrapped DEK fails with UnwrapFailed', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms);
  const { wrapped, kekId } = await w.wrap(randomBytes(32), aad);
  await t.throwsAsync(w.unwrap(wrapped, Buffer.from('keyward/v1|org_a|cred_OTHER|openai'), kekId), { instanceOf: UnwrapFailed });
  for (const at of [0, 10, wrapped.length - 1]) {
    const bad = Buffer.from(wrapped);
    bad[at]! ^= 0x40;
    await t.throwsAsync(w.unwrap(bad, aad, kekId), { instanceOf: UnwrapFailed });
  }
  await t.throwsAsync(w.unwrap(wrapped.subarray(0, 10), aad, kekId), { instanceOf: UnwrapFailed });
  // A kekId that is not a version of this key is refused before any call.
  await t.throwsAsync(w.unwrap(wrapped, aad, 'local:0123456789abcdef'), { message: /not a version of the configured Cloud KMS key/ });
});

test('checksum mismatches in responses are detected (and retried once)', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms);
  const dek = randomBytes(32);
  const good = await w.wrap(dek, aad);
  for (const lie of ['ciphertext_crc', 'verified_plaintext', 'verified_aad'] as const) {
    kms.lie = lie;
    const before = kms.calls.Encrypt ?? 0;
    const err = await t.throwsAsync(w.wrap(dek, aad), { instanceOf: KmsIntegrityError });
    t.true(err instanceof BackendUnavailable, 'fails closed as unavailable (503), never as bad data');
    t.is((kms.calls.Encrypt ?? 0) - before, 2, `${lie}: one retry, then fail`);
  }
  kms.lie = 'plaintext_crc';
  await t.throwsAsync(w.unwrap(good.wrapped, aad, good.kekId), { instanceOf: KmsIntegrityError });
  kms.lie = undefined;
  t.deepEqual(await w.unwrap(good.wrapped, aad, good.kekId), dek);
});

test('a lie that happens once is absorbed by the retry', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms);
  kms.lie = 'ciphertext_crc';
  const calls = kms.calls;
  // Turn the lie off as soon as the first Encrypt has been answered.
  const timer = setInterval(() => {
    if ((calls.Encrypt ?? 0) >= 1) kms.lie = undefined;
  }, 0);
  t.teardown(() => clearInterval(timer));
  const dek = randomBytes(32);
  const out = await w.wrap(dek, aad).catch((err) => err);
  // Either the retry succeeded, or both attempts were answered before the flag flipped; never a wrong result.
  if (out instanceof Error) t.true(out instanceof KmsIntegrityError);
  else t.deepEqual(await w.unwrap(out.wrapped, aad, out.kekId), dek);
});

test('after a key rotation old DEKs still unwrap, and Envelope.rewrap moves them to the new primary without touching ciphertexts', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms, { primaryTtlMs: 0 });
  const envelope = new Envelope(w);
  const ref = { orgId: 'org_a', id: 'cred_b', provider: 'openai' };
  const sealed = await envelope.seal(ref, 'sk-live-0123456789abcdef');
  t.is(sealed.kekId, kms.versionName(1));

  t.is(kms.rotate(), 2);
  t.is(await w.currentKekId(), kms.versionName(2));
  t.is(await envelope.open(ref, sealed), 'sk-live-0123456789abcdef', 'a DEK under v1 still opens');

  const { wrappedDek, kekId } = await envelope.rewrap(ref, sealed);
  t.is(kekId, kms.versionName(2));
  t.false(wrappedDek.equals(sealed.wrappedDek));
  const moved = { ...sealed, wrappedDek, kekId };
  t.is(moved.ciphertext, sealed.ciphertext);
  t.is(moved.nonce, sealed.nonce);
  t.is(await envelope.open(ref, moved), 'sk-live-0123456789abcdef');
  // New seals use v2 at once.
  t.is((await envelope.seal(ref, 'sk-another-key-000')).kekId, kms.versionName(2));
  // The AAD still binds after the move.
  await t.throwsAsync(envelope.open({ ...ref, id: 'cred_c' }, moved), { instanceOf: UnwrapFailed });
  t.truthy(credentialAad(ref));
});

test('an unavailable or stopped KMS is BackendUnavailable; ping recovers when it is back', async (t) => {
  const kms = await startKmsServer(t);
  // Short deadlines: the client retries UNAVAILABLE until the deadline, as it should in production.
  const w = await wrapperFor(t, kms, { pingTtlMs: 0, primaryTtlMs: 0, callTimeoutMs: 1000, pingTimeoutMs: 1000 });
  // A new (or reconnecting) client's first call can be slow on a loaded machine: a real event, bounded generously.
  const answers = () => eventually(() => w.ping().then(() => true, () => false), 'the KMS answers a ping', 30_000).then(() => true, () => false);
  t.true(await answers());
  const { wrapped, kekId } = await w.wrap(randomBytes(32), aad);

  kms.down = true;
  await t.throwsAsync(w.wrap(randomBytes(32), aad), { instanceOf: BackendUnavailable });
  await t.throwsAsync(w.unwrap(wrapped, aad, kekId), { instanceOf: BackendUnavailable });
  await t.throwsAsync(w.ping(), { instanceOf: BackendUnavailable });
  await t.throwsAsync(w.currentKekId(), { instanceOf: BackendUnavailable });
  kms.down = false;

  await kms.stop();
  const started = Date.now();
  await t.throwsAsync(w.ping(), { instanceOf: BackendUnavailable });
  await t.throwsAsync(w.unwrap(wrapped, aad, kekId), { instanceOf: BackendUnavailable });
  // The speed of real deadlines against a real socket, bounded generously (a busy machine is slow): without the 1 s
  // deadlines the client would retry UNAVAILABLE for its default minute.
  t.true(Date.now() - started < 30_000, 'within the configured deadlines');

  await kms.restart();
  t.true(await answers());
  t.is((await w.unwrap(wrapped, aad, kekId)).length, 32);
});

test('ping and the primary version are cached briefly', async (t) => {
  const kms = await startKmsServer(t);
  const w = await wrapperFor(t, kms, { pingTtlMs: 60_000, primaryTtlMs: 60_000 });
  await w.ping();
  await w.ping();
  await w.currentKekId();
  await Promise.all([w.ping(), w.currentKekId()]);
  t.is(kms.calls.GetCryptoKey, 1);
  kms.rotate();
  t.is(await w.currentKekId(), kms.versionName(1), 'believed until the cache expires');
});

test('with Encrypter/Decrypter only (GetCryptoKey denied), ping and currentKekId use an Encrypt probe', async (t) => {
  const kms = await startKmsServer(t);
  kms.denyGetCryptoKey = true;
  const w = await wrapperFor(t, kms, { pingTtlMs: 0, primaryTtlMs: 0 });
  await t.notThrowsAsync(w.ping());
  t.is(await w.currentKekId(), kms.versionName(1));
  kms.rotate();
  t.is(await w.currentKekId(), kms.versionName(2));
  t.is(kms.calls.GetCryptoKey, 1, 'asked once, then remembered');
  t.is(kms.calls.Encrypt, 3);
  // Down: the probe fails closed (a wrapper with short deadlines: the client retries UNAVAILABLE until its deadline).
  const short = await wrapperFor(t, kms, { pingTtlMs: 0, primaryTtlMs: 0, callTimeoutMs: 1000, pingTimeoutMs: 1000 });
  kms.down = true;
  await t.throwsAsync(short.ping(), { instanceOf: BackendUnavailable });
});

test('connect requires a key name', async (t) => {
  await t.throwsAsync(GcpKeyWrapper.connect({ kmsKey: undefined, kmsEndpoint: undefined }), { message: /KEYWARD_KMS_KEY/ });
});
