/**
 * Keyward as its organisations' OIDC issuer: the discovery document and JWKS served without a token,
 * the JWTs it signs (RS256, kid, iss, sub org:<id>, aud, five minutes, keyward_credential) verified
 * with jose against what it serves, the signing key made once and wrapped by the KEK under its name,
 * and its rotation: `keyward keys rotate-signing` publishes the next key at once, it signs only from
 * its activation, and the previous key stays published until every token it signed has expired.
 */
import 'reflect-metadata';
import test, { type ExecutionContext } from 'ava';
import { createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import { calculateJwkThumbprint, createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { Issuer } from '../../src/identity/issuer.js';
import { decodeEntry, RETIRE_AFTER_MS } from '../../src/identity/signing-keys.js';
import { LocalKeyWrapper } from '../../src/kms/local.js';
import { UnwrapFailed } from '../../src/kms/key-wrapper.js';
import type { Store } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';
import { secretAad } from '../../src/vault/deployment-secrets.js';
import { api, createOrg, startApp, tempDir, type TestApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { startIssuerFront } from '../support/cloud/keyward-oidc.js';
import { cliInProcess } from '../support/cli.js';

const ISSUER = 'http://127.0.0.1:9'; // a front the clouds would fetch from; these tests read the documents from the gateway itself

const keyward = cliInProcess;

const jwksOf = async (app: TestApp) => (await api(app, 'GET', '/.well-known/jwks.json')).body as { keys: Array<Record<string, string>> };
const kids = async (app: TestApp) => (await jwksOf(app)).keys.map((k) => k.kid);
const issuerOf = (app: TestApp) => app.server.container.resolve(Issuer);
const sign = (app: TestApp, orgId = 'org_test', audience = 'sts.amazonaws.com') => issuerOf(app).assertion({ orgId, credentialId: 'cred_test', audience });

test('config: KEYWARD_ISSUER_URL is https (http only on a loopback host), without user, query or fragment; KEYWARD_KMS_SIGNING_KEY needs KEYWARD_KMS=gcp', (t) => {
  const base = { KEYWARD_DATA_DIR: '/tmp', KEYWARD_ADMIN_TOKEN: 'test-admin-token-0123456789abcdef' };
  t.is(loadConfig(base).issuerUrl, undefined);
  t.is(loadConfig({ ...base, KEYWARD_ISSUER_URL: 'https://keyward.example.com/' }).issuerUrl, 'https://keyward.example.com');
  t.is(loadConfig({ ...base, KEYWARD_ISSUER_URL: 'https://storage.googleapis.com/acme-keyward-oidc' }).issuerUrl, 'https://storage.googleapis.com/acme-keyward-oidc');
  t.is(loadConfig({ ...base, KEYWARD_ISSUER_URL: 'http://127.0.0.1:8080' }).issuerUrl, 'http://127.0.0.1:8080');
  for (const bad of ['http://keyward.example.com', 'https://u:p@keyward.example.com', 'https://keyward.example.com?x=1', 'https://keyward.example.com#f', 'ftp://x', 'not a url']) {
    const err = t.throws(() => loadConfig({ ...base, KEYWARD_ISSUER_URL: bad }), { instanceOf: ConfigError }, bad);
    t.false(err!.message.includes('u:p'), 'never echoes a user part');
  }
  const version = 'projects/p/locations/l/keyRings/r/cryptoKeys/k/cryptoKeyVersions/3';
  t.throws(() => loadConfig({ ...base, KEYWARD_KMS_SIGNING_KEY: version }), { message: /KEYWARD_KMS=gcp/ });
  t.throws(() => loadConfig({ ...base, KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: 'projects/p/locations/l/keyRings/r/cryptoKeys/k', KEYWARD_KMS_SIGNING_KEY: 'projects/p/locations/l/keyRings/r/cryptoKeys/k' }), { message: /cryptoKeyVersions/ });
  t.is(loadConfig({ ...base, KEYWARD_KMS: 'gcp', KEYWARD_KMS_KEY: 'projects/p/locations/l/keyRings/r/cryptoKeys/k', KEYWARD_KMS_SIGNING_KEY: version }).kmsSigningKey, version);
  const c = loadConfig(base);
  t.deepEqual([c.azureAuthorityHost, c.googleStsUri, c.googleIamCredentialsUri, c.awsStsEndpoint], ['https://login.microsoftonline.com', 'https://sts.googleapis.com/v1/token', 'https://iamcredentials.googleapis.com', undefined]);
  t.throws(() => loadConfig({ ...base, AZURE_AUTHORITY_HOST: 'https://login.example/tenant' }), { instanceOf: ConfigError });
  t.throws(() => loadConfig({ ...base, AWS_ENDPOINT_URL_STS: 'http://sts.example.com' }), { instanceOf: ConfigError }, 'a JWT never travels in clear off the host');
});

test('discovery and JWKS without a token: the issuer, its jwks_uri, RS256 public keys only; /v1/orgs/self names the issuer and org:<id>', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_ISSUER_URL: ISSUER } });
  const discovery = await api(app, 'GET', '/.well-known/openid-configuration');
  t.is(discovery.status, 200);
  t.like(discovery.body, { issuer: ISSUER, jwks_uri: `${ISSUER}/.well-known/jwks.json`, id_token_signing_alg_values_supported: ['RS256'], subject_types_supported: ['public'] });
  const jwks = await api(app, 'GET', '/.well-known/jwks.json');
  t.is(jwks.status, 200);
  t.regex(String(jwks.headers.get('cache-control')), /max-age=60/);
  t.is(jwks.body.keys.length, 1);
  const key = jwks.body.keys[0];
  t.deepEqual(Object.keys(key).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
  t.like(key, { kty: 'RSA', alg: 'RS256', use: 'sig' });
  t.is(key.kid, await calculateJwkThumbprint({ kty: key.kty, n: key.n, e: key.e }), 'the kid is the key\'s RFC 7638 thumbprint');
  t.is(Buffer.from(key.n, 'base64url').length, 256, 'RSA 2048');
  const org = await createOrg(app);
  const self = await api(app, 'GET', '/v1/orgs/self', { token: org.token });
  t.deepEqual(self.body.federation, { issuer: ISSUER, subject: `org:${org.id}` });
});

test('not an issuer (no KEYWARD_ISSUER_URL): no documents, federation null, a federated credential is refused', async (t) => {
  const app = await startApp(t);
  t.is((await api(app, 'GET', '/.well-known/jwks.json')).status, 404);
  t.is((await api(app, 'GET', '/.well-known/openid-configuration')).status, 404);
  const org = await createOrg(app);
  t.is((await api(app, 'GET', '/v1/orgs/self', { token: org.token })).body.federation, null);
  const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'bedrock', region: 'eu-west-3', role_arn: 'arn:aws:iam::123456789012:role/r', federated: true } });
  t.is(r.status, 400);
  t.like(r.body.error, { code: 'invalid_request', param: 'federated' });
  t.regex(r.body.error.message, /KEYWARD_ISSUER_URL/);
});

test('a JWT: RS256 with the published kid, iss, sub org:<id>, aud, five minutes, keyward_credential, a fresh jti; it verifies against the served JWKS', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_ISSUER_URL: ISSUER } });
  const jwt = await sign(app, 'org_abc', 'api://AzureADTokenExchange');
  const header = decodeProtectedHeader(jwt);
  t.deepEqual(header, { alg: 'RS256', typ: 'JWT', kid: (await kids(app))[0] });
  const { payload } = await jwtVerify(jwt, createLocalJWKSet(await jwksOf(app) as never), { issuer: ISSUER, audience: 'api://AzureADTokenExchange', algorithms: ['RS256'] });
  t.like(payload, { iss: ISSUER, sub: 'org:org_abc', aud: 'api://AzureADTokenExchange', keyward_credential: 'cred_test' });
  t.is(payload.exp! - payload.iat!, 300, 'five minutes (at most fifteen)');
  t.is(payload.nbf, payload.iat);
  t.not(decodeJwtId(await sign(app)), decodeJwtId(jwt), 'each JWT its own jti');
});

const decodeJwtId = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()).jti as string;

test('the signing key is made once and wrapped by the KEK under its name: two processes on one store and a restart publish the same key', async (t) => {
  const dataDir = tempDir(t);
  const kek = randomBytes(32).toString('base64');
  const env = { KEYWARD_ISSUER_URL: ISSUER, KEYWARD_LOCAL_KEK: kek };
  const [a, b] = await Promise.all([startApp(t, { dataDir, env }), startApp(t, { dataDir, env })]);
  const [ka, kb] = await Promise.all([kids(a), kids(b)]);
  t.deepEqual(ka, kb, 'the second process reads back the first one\'s key');
  t.is(ka.length, 1);
  await a.stop();
  await b.stop();
  const again = await startApp(t, { dataDir, env });
  t.deepEqual(await kids(again), ka, 'a restart keeps the key');
  const store = again.server.container.resolve<Store>(Symbols.Store);
  const stored = (await store.getSecret('oidc-signing-key:1'))!;
  t.false(stored.wrapped.includes(Buffer.from('-----BEGIN')), 'no PEM in the store');
  const wrapper = new LocalKeyWrapper(Buffer.from(kek, 'base64'));
  await t.throwsAsync(wrapper.unwrap(stored.wrapped, secretAad('oidc-signing-key:2'), stored.kekId), { instanceOf: UnwrapFailed }, 'bound to its name');
  const plain = await wrapper.unwrap(stored.wrapped, secretAad('oidc-signing-key:1'), stored.kekId);
  const { der } = decodeEntry(plain, 'oidc-signing-key:1');
  const jwk = createPublicKey(createPrivateKey({ key: der, format: 'der', type: 'pkcs8' })).export({ format: 'jwk' });
  t.is(await calculateJwkThumbprint({ kty: 'RSA', n: jwk.n!, e: jwk.e! }), ka[0]);
});

async function rotationSetup(t: ExecutionContext) {
  const clock = new ManualClock(Date.now());
  const dataDir = tempDir(t);
  // KEYWARD_STORE named: with KEYWARD_ISSUER_URL set and no store, the CLI refuses to guess (exit 2).
  const env = { KEYWARD_STORE: 'sqlite', KEYWARD_ISSUER_URL: ISSUER, KEYWARD_DATA_DIR: dataDir };
  const app = await startApp(t, { dataDir, clock, env: { KEYWARD_ISSUER_URL: ISSUER } });
  return { clock, app, env };
}

test('rotation: the next key is published at once (within the JWKS\'s 5 s re-read), signs only from its activation, and the old key stays published until every token it signed has expired', async (t) => {
  const { clock, app, env } = await rotationSetup(t);
  const [k1] = await kids(app);
  // The CLI runs on the real clock: its hour counts from between these two instants.
  const before = Date.now();
  const rotated = await keyward(['keys', 'rotate-signing', '--json'], env);
  const after = Date.now();
  t.is(rotated.code, 0, rotated.stderr);
  const k2 = JSON.parse(rotated.stdout) as { kid: string; activates_at: string; signing: boolean };
  t.false(k2.signing);
  const activatesAt = Date.parse(k2.activates_at);
  t.true(activatesAt - before >= 60 * 60_000 && activatesAt - after <= 60 * 60_000, 'published an hour before it signs, by default (Entra ID and Google publish no JWKS cache time)');
  clock.advance(5_000);
  t.deepEqual(await kids(app), [k1, k2.kid], 'in the JWKS before it signs');
  t.is(decodeProtectedHeader(await sign(app)).kid, k1, 'the old key still signs');
  clock.set(activatesAt - 1_000);
  const lastOld = await sign(app);
  t.is(decodeProtectedHeader(lastOld).kid, k1);
  clock.set(activatesAt);
  t.is(decodeProtectedHeader(await sign(app)).kid, k2.kid, 'the new key signs from its activation');
  // The last token the old key signed still verifies against the served keys until it expires.
  clock.set(activatesAt - 1_000 + 299_000);
  await t.notThrowsAsync(jwtVerify(lastOld, createLocalJWKSet(await jwksOf(app) as never), { currentDate: new Date(clock.now()) }));
  clock.set(activatesAt + RETIRE_AFTER_MS - 1_000);
  t.deepEqual(await kids(app), [k1, k2.kid]);
  clock.set(activatesAt + RETIRE_AFTER_MS);
  t.deepEqual(await kids(app), [k2.kid], 'retired once every token it signed has expired');
});

test('rotate-signing --activate-in 0s signs at once; a bad duration is a usage error', async (t) => {
  const { app, env, clock } = await rotationSetup(t);
  const [k1] = await kids(app);
  t.is((await keyward(['keys', 'rotate-signing', '--activate-in', 'soon'], env)).code, 2);
  const r = await keyward(['keys', 'rotate-signing', '--activate-in', '0s', '--json'], env);
  t.is(r.code, 0, r.stderr);
  const k2 = JSON.parse(r.stdout).kid;
  clock.advance(60_000);
  t.deepEqual(await kids(app), [k1, k2]);
  t.is(decodeProtectedHeader(await sign(app)).kid, k2);
});

test('export-discovery writes the documents the gateway serves, for a static host; it needs KEYWARD_ISSUER_URL', async (t) => {
  const { app, env } = await rotationSetup(t);
  const dir = tempDir(t);
  const r = await keyward(['keys', 'export-discovery', dir, '--json'], env);
  t.is(r.code, 0, r.stderr);
  const { readFileSync } = await import('node:fs');
  t.deepEqual(JSON.parse(readFileSync(`${dir}/.well-known/openid-configuration`, 'utf8')), (await api(app, 'GET', '/.well-known/openid-configuration')).body);
  t.deepEqual(JSON.parse(readFileSync(`${dir}/.well-known/jwks.json`, 'utf8')), await jwksOf(app));
  const without = await keyward(['keys', 'export-discovery', dir], { KEYWARD_DATA_DIR: env.KEYWARD_DATA_DIR });
  t.is(without.code, 2);
  t.regex(without.stderr, /KEYWARD_ISSUER_URL/);
});

test('keyward keys rewrap moves the signing key to the new KEK; the published key is the same', async (t) => {
  const dataDir = tempDir(t);
  const oldKek = randomBytes(32).toString('base64');
  const newKek = randomBytes(32).toString('base64');
  const first = await startApp(t, { dataDir, env: { KEYWARD_ISSUER_URL: ISSUER, KEYWARD_LOCAL_KEK: oldKek } });
  const before = await kids(first);
  await first.stop();
  const r = await keyward(['keys', 'rewrap', '--json'], { KEYWARD_DATA_DIR: dataDir, KEYWARD_LOCAL_KEK: newKek, KEYWARD_LOCAL_KEK_PREVIOUS: oldKek });
  t.is(r.code, 0, r.stderr);
  t.deepEqual(JSON.parse(r.stdout).failed, []);
  const after = await startApp(t, { dataDir, env: { KEYWARD_ISSUER_URL: ISSUER, KEYWARD_LOCAL_KEK: newKek } });
  t.deepEqual(await kids(after), before, 'opened under the new key alone');
});

test('the issuer\'s documents reach a cloud through a front (the fakes fetch them over HTTP)', async (t) => {
  const front = await startIssuerFront(t);
  const app = await startApp(t, { env: { KEYWARD_ISSUER_URL: front.url } });
  front.point(app.url);
  const discovery = await (await fetch(`${front.url}/.well-known/openid-configuration`)).json() as { issuer: string; jwks_uri: string };
  t.is(discovery.issuer, front.url);
  const jwks = await (await fetch(discovery.jwks_uri)).json() as { keys: unknown[] };
  t.is(jwks.keys.length, 1);
  t.deepEqual(front.paths, ['/.well-known/openid-configuration', '/.well-known/jwks.json']);
});
