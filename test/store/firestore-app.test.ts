/**
 * Whole servers with KEYWARD_STORE=firestore (and a shared KEYWARD_LOCAL_KEK)
 * on the in-process emulator: the admin API end to end, two instances sharing
 * one database, and /readyz when Firestore goes away.
 */
import 'reflect-metadata';
import test from 'ava';
import { randomBytes } from 'node:crypto';
import type { FirestoreStore } from '../../src/store/firestore/firestore-store.js';
import { Symbols } from '../../src/symbols.js';
import { TokenService } from '../../src/vault/token-service.js';
import { CredentialService } from '../../src/vault/credential-service.js';
import { api, createCredential, createOrg, mintToken, startApp as startAnyApp, type StartOptions, type TestApp } from '../support/app.js';
import { startEmulator, type Emulator } from '../support/firestore-emulator.js';
import type { ExecutionContext } from 'ava';
import { ManualClock } from '../support/clocks.js';
import { eventually } from '../support/wait.js';

/** An app on the emulator whose store the emulator waits for before it stops. */
async function startApp(t: ExecutionContext, emulator: Emulator, options: StartOptions): Promise<TestApp> {
  const app = await startAnyApp(t, options);
  emulator.adopt(app.server.container.resolve<FirestoreStore>(Symbols.Store));
  return app;
}

/**
 * Ready once the store client has connected: a real event (a new client's first calls, slow on a busy machine),
 * waited for with a generous bound; each failed probe's result is aged out on the app's timers when it has them.
 */
async function ready(app: TestApp, timers?: ManualClock): Promise<number> {
  let status = 0;
  await eventually(async () => {
    status = (await api(app, 'GET', '/readyz')).status;
    if (status !== 200 && timers) await timers.tick(2000);
    return status === 200;
  }, 'the store client connected').catch(() => undefined);
  return status;
}

const firestoreEnv = (host: string, kek: string, extra: Record<string, string> = {}) => ({
  KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: host, KEYWARD_LOCAL_KEK: kek, ...extra,
});

test('KEYWARD_STORE=firestore: orgs, credentials and tokens through the admin API', async (t) => {
  const emulator = await startEmulator(t);
  const app = await startApp(t, emulator, { env: firestoreEnv(emulator.host, randomBytes(32).toString('base64'), { KEYWARD_FREE_CREDENTIALS: '2' }) });
  t.is(await ready(app), 200);

  const org = await createOrg(app, 'acme');
  const other = await createOrg(app, 'other');
  const c1 = await createCredential(app, org, 'openai', 'sk-firestore-one-0001');
  const c2 = await createCredential(app, org, 'anthropic', 'sk-ant-firestore-0002');
  const over = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-firestore-three-03' } });
  t.is(over.status, 403);
  t.is(over.body.error.code, 'limit_exceeded');

  const list = await api(app, 'GET', '/v1/credentials?limit=1', { token: org.token });
  t.is(list.status, 200);
  t.deepEqual(list.body.data.map((c: { id: string }) => c.id), [c2]);
  t.true(list.body.has_more);
  const next = await api(app, 'GET', `/v1/credentials?limit=1&starting_after=${c2}`, { token: org.token });
  t.deepEqual(next.body.data.map((c: { id: string }) => c.id), [c1]);
  t.false(next.body.has_more);
  t.is((await api(app, 'GET', `/v1/credentials?starting_after=cred_${'x'.repeat(24)}`, { token: org.token })).status, 400);
  t.is((await api(app, 'GET', `/v1/credentials/${c1}`, { token: other.token })).status, 404, "another org's id is 404");

  const tok = await mintToken(app, org, c1, '15m');
  const tok2 = await mintToken(app, org, c1, '1h');
  t.regex(tok.token, /^ptok_/);
  const tokens = await api(app, 'GET', '/v1/tokens', { token: org.token });
  t.deepEqual(tokens.body.data.map((x: { id: string }) => x.id), [tok2.id, tok.id]);
  t.is(tokens.body.data[0].status, 'active');
  t.is((await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);
  t.is((await api(app, 'POST', '/v1/tokens', { token: other.token, body: { credential_id: c1, ttl: '15m' } })).status, 404);

  t.is((await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);
  t.is((await api(app, 'GET', `/v1/tokens/${tok.id}`, { token: org.token })).status, 404);
  t.is((await api(app, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token })).status, 404);

  const rotated = await api(app, 'POST', `/v1/credentials/${c1}/rotate`, { token: org.token, body: { api_key: 'sk-firestore-rotated-9' } });
  t.is(rotated.status, 200);
  t.is(rotated.body.key_hint, '…ed-9');

  const del = await api(app, 'DELETE', `/v1/credentials/${c1}`, { token: org.token });
  t.is(del.status, 200);
  t.true(del.body.deleted);
  t.is((await api(app, 'GET', `/v1/credentials/${c1}`, { token: org.token })).status, 404);
  t.is((await api(app, 'GET', `/v1/tokens/${tok2.id}`, { token: org.token })).status, 404, 'its tokens went with it');
  t.is((await api(app, 'DELETE', `/v1/credentials/${c1}`, { token: org.token })).status, 404);
  // The freed slot takes a new credential.
  await createCredential(app, org, 'openai', 'sk-firestore-four-004');

  const usage = await api(app, 'GET', '/v1/usage', { token: org.token });
  t.is(usage.status, 200);
  t.deepEqual(usage.body.credentials, { used: 2, limit: 2 });

  const orgRotate = await api(app, 'POST', '/v1/orgs/self/token/rotate', { token: org.token, body: { grace_s: 0 } });
  t.is(orgRotate.status, 200);
  t.is((await api(app, 'GET', '/v1/credentials', { token: orgRotate.body.token })).status, 200);
  t.false(app.logText().includes('sk-firestore-one-0001'));
});

test('two instances on one Firestore: a revocation or deletion on one reaches the other within a second', async (t) => {
  const emulator = await startEmulator(t);
  const kek = randomBytes(32).toString('base64');
  const a = await startApp(t, emulator, { env: firestoreEnv(emulator.host, kek) });
  const b = await startApp(t, emulator, { env: firestoreEnv(emulator.host, kek) });
  const org = await createOrg(a);
  const cred = await createCredential(a, org, 'openai', 'sk-shared-0123456789');
  const tok = await mintToken(a, org, cred, '15m');
  const tok2 = await mintToken(a, org, cred, '15m');

  // Instance B resolves (and caches) both tokens and opens the key with the shared KEK.
  const tokensB = b.server.container.resolve(TokenService);
  t.truthy(await tokensB.resolve(tok.token));
  t.truthy(await tokensB.resolve(tok2.token));
  t.is(await b.server.container.resolve(CredentialService).keyFor({ orgId: org.id, id: cred, provider: 'openai' }), 'sk-shared-0123456789');
  // Instance B sees A's data through the API as well.
  t.is((await api(b, 'GET', `/v1/credentials/${cred}`, { token: org.token })).status, 200);

  // Firestore's listener pushes the change: a real event, waited for with a generous bound (never a race on a busy machine).
  t.is((await api(a, 'DELETE', `/v1/tokens/${tok.id}`, { token: org.token })).status, 200);
  t.true(await eventually(async () => (await tokensB.resolve(tok.token)) === undefined, 'B no longer resolves the revoked token', 20_000) <= 20_000);
  t.truthy(await tokensB.resolve(tok2.token), 'the other token still works');

  t.is((await api(a, 'DELETE', `/v1/credentials/${cred}`, { token: org.token })).status, 200);
  t.true(await eventually(async () => (await tokensB.resolve(tok2.token)) === undefined, 'B no longer resolves a token of the deleted credential', 20_000) <= 20_000);
});

test('two instances on one Firestore: an admin key made on one works on the other with its role; its deletion is refused on both at once', async (t) => {
  const emulator = await startEmulator(t);
  const kek = randomBytes(32).toString('base64');
  const a = await startApp(t, emulator, { env: firestoreEnv(emulator.host, kek) });
  const b = await startApp(t, emulator, { env: firestoreEnv(emulator.host, kek) });
  const org = await createOrg(a);
  const credA = await createCredential(a, org, 'openai', 'sk-shared-a-0123456789');
  const credB = await createCredential(a, org, 'openai', 'sk-shared-b-0123456789');
  const minter = (await api(a, 'POST', '/v1/admin-keys', { token: org.token, body: { name: 'ci', role: 'minter', credential_ids: [credA] } })).body;
  t.regex(minter.id, /^akey_/);
  const mine = await api(b, 'POST', '/v1/tokens', { token: minter.token, body: { credential_id: credA, ttl: '15m' } });
  t.is(mine.status, 201);
  t.is((await api(b, 'POST', '/v1/tokens', { token: minter.token, body: { credential_id: credB, ttl: '15m' } })).status, 403);
  const owners = await mintToken(a, org, credA, '15m');
  // A minter's list is its own (the createdBy query), on either instance.
  t.deepEqual((await api(a, 'GET', '/v1/tokens', { token: minter.token })).body.data.map((x: { id: string }) => x.id), [mine.body.id]);
  t.is((await api(b, 'GET', '/v1/tokens', { token: org.token })).body.data.length, 2);
  t.is((await api(b, 'GET', `/v1/tokens/${owners.id}`, { token: minter.token })).status, 404);
  t.deepEqual((await api(b, 'GET', '/v1/admin-keys', { token: org.token })).body.data.map((k: { id: string }) => k.id), [minter.id]);

  t.is((await api(b, 'DELETE', `/v1/admin-keys/${minter.id}`, { token: org.token })).status, 200);
  t.is((await api(a, 'GET', '/v1/tokens', { token: minter.token })).status, 401, 'refused at once on the other instance');
  t.is((await api(b, 'GET', '/v1/tokens', { token: minter.token })).status, 401);
  t.is((await api(a, 'DELETE', `/v1/admin-keys/${minter.id}`, { token: org.token })).status, 404);
});

test('KEYWARD_STORE=firestore: /readyz is 503 when Firestore is unreachable', async (t) => {
  const emulator = await startEmulator(t);
  const timers = new ManualClock();
  const app = await startApp(t, emulator, { timers, env: firestoreEnv(emulator.host, randomBytes(32).toString('base64')) });
  t.is(await ready(app, timers), 200);
  emulator.kill();
  // Readiness is answered from a result at most 2 s old (contract, Hardening): its age is on the injected timers.
  await timers.tick(2000);
  t.is((await api(app, 'GET', '/readyz')).status, 503);
  t.is((await api(app, 'GET', '/healthz')).status, 200);
  // Back (empty): ready again once the client has reconnected.
  await emulator.revive();
  let status = 0;
  // The reconnection is a real event (the client's backoff): up to 20 s of it, each probe past the 2 s age.
  await eventually(async () => {
    await timers.tick(2000);
    status = (await api(app, 'GET', '/readyz')).status;
    return status === 200;
  }, 'ready again').catch(() => undefined);
  t.is(status, 200);
});
