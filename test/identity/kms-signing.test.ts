/**
 * Cloud KMS as the issuer's signer (KEYWARD_KMS_SIGNING_KEY), with the real @google-cloud/kms client
 * against our gRPC KMS (test/support/kms-signing.ts): GetPublicKey for the JWKS, AsymmetricSign over
 * the digest with CRC32C both ways, only RS256 versions; a federated request end to end with the fake
 * STS verifying a KMS-signed JWT; rotation to a new KMS version; and the private key never in the
 * gateway's memory (its process read through /proc/<pid>/mem, where a local key IS found).
 */
import 'reflect-metadata';
import test from 'ava';
import { createHash, createPrivateKey, createPublicKey, verify } from 'node:crypto';
import { openSync, readFileSync, readSync, closeSync } from 'node:fs';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { BackendUnavailable } from '../../src/errors.js';
import { Issuer } from '../../src/identity/issuer.js';
import { decodeEntry } from '../../src/identity/signing-keys.js';
import { GcpAsymmetricSigner, KmsSigningKeyError } from '../../src/kms/gcp-signer.js';
import { LocalKeyWrapper } from '../../src/kms/local.js';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.js';
import { secretAad } from '../../src/vault/deployment-secrets.js';
import { api, createOrg, mintToken, spawnServer, startApp, tempDir } from '../support/app.js';
import { startKmsServer } from '../support/kms-server.js';
import { startFakeBedrock } from '../support/cloud/bedrock-fake.js';
import { startFakeSts } from '../support/cloud/aws-sts-fake.js';
import { startIssuerFront } from '../support/cloud/keyward-oidc.js';
import { ManualClock } from '../support/clocks.js';
import { cliInProcess } from '../support/cli.js';

const ROLE = 'arn:aws:iam::123456789012:role/keyward';

test('GcpAsymmetricSigner with the real client: GetPublicKey, AsymmetricSign over the digest with its CRC32C; EC, disabled or unknown versions refused; KMS down is unavailable', async (t) => {
  const kms = await startKmsServer(t);
  const v1 = kms.signing.addVersion();
  const ec = kms.signing.addVersion('EC_SIGN_P256_SHA256');
  const signer = GcpAsymmetricSigner.connect(kms.endpoint);
  t.teardown(() => signer.close());
  const publicKey = await signer.publicKey(v1);
  const data = Buffer.from('header.payload');
  const signature = await signer.sign(v1, data);
  t.true(verify('sha256', data, publicKey, signature), 'PKCS#1 v1.5 over SHA-256: RS256');
  t.is(kms.signing.signed.get(v1), 1);
  await t.throwsAsync(signer.publicKey(ec), { instanceOf: KmsSigningKeyError, message: /EC_SIGN_P256_SHA256 key: KEYWARD_KMS_SIGNING_KEY must be an RSA_SIGN_PKCS1_2048_SHA256/ });
  await t.throwsAsync(signer.sign(`${v1.slice(0, -1)}9`, data), { instanceOf: KmsSigningKeyError, message: /not found/ });
  kms.signing.disable(v1);
  await t.throwsAsync(signer.sign(v1, data), { instanceOf: KmsSigningKeyError, message: /not enabled/ });
  kms.down = true;
  await t.throwsAsync(signer.publicKey(v1), { instanceOf: BackendUnavailable });
});

test('a gateway whose signing key is a KMS version: the JWKS publishes its public key, KMS signs each JWT, a cloud verifies it; rotation to a new version', async (t) => {
  const kms = await startKmsServer(t);
  const v1 = kms.signing.addVersion();
  const clock = new ManualClock(Date.now());
  const dataDir = tempDir(t);
  const env = { KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: kms.keyName, KEYWARD_KMS_ENDPOINT: kms.endpoint, KEYWARD_KMS_SIGNING_KEY: v1, KEYWARD_ISSUER_URL: 'http://127.0.0.1:9' };
  const app = await startApp(t, { dataDir, clock, env });
  const jwks = (await api(app, 'GET', '/.well-known/jwks.json')).body;
  t.is(jwks.keys.length, 1);
  const kmsPublic = (await GcpAsymmetricSigner.connect(kms.endpoint).publicKey(v1)).export({ format: 'jwk' });
  t.is(jwks.keys[0].n, kmsPublic.n, 'the KMS version\'s public key');
  const issuer = app.server.container.resolve(Issuer);
  const jwt = await issuer.assertion({ orgId: 'org_a', credentialId: 'cred_a', audience: 'sts.amazonaws.com' });
  t.is(kms.signing.signed.get(v1), 1, 'KMS signed it');
  const { payload } = await jwtVerify(jwt, createLocalJWKSet(jwks), { issuer: 'http://127.0.0.1:9', audience: 'sts.amazonaws.com', algorithms: ['RS256'], currentDate: new Date(clock.now()) });
  t.is(payload.sub, 'org:org_a');
  // The stored ring entry names the version; it holds no private key.
  const store = new SqliteStore(dataDir);
  t.teardown(() => store.close());
  const stored = (await store.getSecret('oidc-signing-key:1'))!;
  t.true(stored.kekId.startsWith(kms.keyName), 'wrapped by Cloud KMS like a DEK');
  // A new version, added with the CLI's rotation on the same store: published at once, signing after its lead.
  const v2 = kms.signing.addVersion();
  // KEYWARD_STORE named: with KEYWARD_KMS_* set and no store, the CLI refuses to guess (exit 2).
  const cli = await cliInProcess(['keys', 'rotate-signing', '--json'], { ...env, KEYWARD_STORE: 'sqlite', KEYWARD_DATA_DIR: dataDir, KEYWARD_KMS_SIGNING_KEY: v2 });
  t.is(cli.code, 0, cli.stderr);
  const rotated = JSON.parse(cli.stdout) as { kid: string; kms_key_version: string; activates_at: string };
  t.is(rotated.kms_key_version, v2);
  clock.advance(5_000);
  t.deepEqual((await api(app, 'GET', '/.well-known/jwks.json')).body.keys.map((k: { kid: string }) => k.kid), [jwks.keys[0].kid, rotated.kid]);
  clock.set(Date.parse(rotated.activates_at));
  const next = await issuer.assertion({ orgId: 'org_a', credentialId: 'cred_a', audience: 'sts.amazonaws.com' });
  t.is(decodeProtectedHeader(next).kid, rotated.kid);
  t.is(kms.signing.signed.get(v2), 1);
});

/** Searches a process's readable memory for any of `needles`; how many regions held each. */
function searchMemory(pid: number, needles: Record<string, Buffer>): Record<string, number> {
  const found: Record<string, number> = Object.fromEntries(Object.keys(needles).map((k) => [k, 0]));
  const fd = openSync(`/proc/${pid}/mem`, 'r');
  let scanned = 0;
  try {
    for (const line of readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n')) {
      const m = /^([0-9a-f]+)-([0-9a-f]+) r/.exec(line);
      if (!m || line.includes('[vvar]')) continue;
      const start = BigInt(`0x${m[1]}`);
      const length = Number(BigInt(`0x${m[2]}`) - start);
      const chunk = Buffer.alloc(length);
      try {
        readSync(fd, chunk, 0, length, start);
      } catch {
        continue; // a region that cannot be read (guard pages)
      }
      scanned += length;
      for (const [name, needle] of Object.entries(needles)) if (chunk.indexOf(needle) >= 0) found[name]!++;
    }
  } finally {
    closeSync(fd);
  }
  if (scanned < 10_000_000) throw new Error(`only ${scanned} bytes of the process could be read`);
  return found;
}

/** The private key's material as it could sit in memory: its PKCS#8 DER, and d, p, q in both byte orders (OpenSSL's limbs are little-endian). */
function privateForms(der: Buffer): Record<string, Buffer> {
  const jwk = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
  const forms: Record<string, Buffer> = { pkcs8: der.subarray(32, 96) };
  for (const part of ['d', 'p', 'q'] as const) {
    const be = Buffer.from(jwk[part]!, 'base64url');
    forms[`${part} (big-endian)`] = be.subarray(0, 48);
    forms[`${part} (little-endian)`] = Buffer.from(be).reverse().subarray(0, 48);
  }
  return forms;
}

test('with KMS the private key is never in the gateway\'s memory; a local key is (the search works)', async (t) => {
  t.timeout(300_000); // two built servers spawned, and their memory read, on a machine that may be busy
  const kms = await startKmsServer(t);
  const version = kms.signing.addVersion();
  const bedrock = await startFakeBedrock();
  t.teardown(() => bedrock.close());
  const sts = await startFakeSts(t, bedrock);
  const kek = createHash('sha256').update('memory-test-kek').digest().toString('base64');
  for (const mode of ['kms', 'local'] as const) {
    const front = await startIssuerFront(t);
    const dataDir = tempDir(t);
    const server = await spawnServer(t, {
      KEYWARD_DATA_DIR: dataDir, KEYWARD_ISSUER_URL: front.url, AWS_ENDPOINT_URL_STS: sts.url, KEYWARD_UPSTREAM_BEDROCK: bedrock.url,
      ...(mode === 'kms'
        ? { KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: kms.keyName, KEYWARD_KMS_ENDPOINT: kms.endpoint, KEYWARD_KMS_SIGNING_KEY: version }
        : { KEYWARD_LOCAL_KEK: kek }),
    });
    front.point(server.url);
    const org = await createOrg(server.url);
    sts.providers.add(front.url);
    sts.roles.set(ROLE, { issuer: front.url, subject: `org:${org.id}` });
    const made = await api(server.url, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'bedrock', region: 'eu-west-3', role_arn: ROLE, federated: true } });
    t.is(made.status, 201, made.text);
    const tok = await mintToken(server.url, org, made.body.id);
    const r = await fetch(`${server.url}/v1/proxy/model/anthropic.claude-3-5-sonnet-20240620-v1:0/converse`, {
      method: 'POST', headers: { authorization: `Bearer ${tok.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }] }),
    });
    t.is(r.status, 200, `${mode}: a federated request, its JWT signed and verified`);
    let der: Buffer;
    if (mode === 'kms') {
      t.is(kms.signing.signed.get(version), 1, 'KMS signed the JWT');
      der = kms.signing.privateDer(version);
    } else {
      const store = new SqliteStore(dataDir);
      const stored = (await store.getSecret('oidc-signing-key:1'))!;
      await store.close();
      der = Buffer.from(decodeEntry(await new LocalKeyWrapper(Buffer.from(kek, 'base64')).unwrap(stored.wrapped, secretAad(stored.name), stored.kekId), stored.name).der);
    }
    t.truthy(createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })));
    const found = searchMemory(server.proc.pid!, privateForms(der));
    if (mode === 'kms') t.deepEqual(Object.values(found).filter((n) => n > 0), [], `no form of the KMS private key in the gateway: ${JSON.stringify(found)}`);
    else t.true(Object.values(found).some((n) => n > 0), `the local key's material is found: ${JSON.stringify(found)}`);
    await server.kill();
  }
});
