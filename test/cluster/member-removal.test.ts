/**
 * Removing a member across three gateway processes on one Firestore emulator: its console session is refused
 * at once by every instance (sessions are read at each use, never cached) and its personal token, warm in every
 * instance's cache, is refused by the other two as soon as Firestore's listener carries the revocation.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { api, createOrg, spawnServer, type SpawnedServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { startFrontDoor, startProvider } from '../support/openid-provider.js';
import { sessionCall, signIn } from '../support/sign-in.js';
import { eventually } from '../support/wait.js';

/** As test/cluster/three-instances.test.ts: a real listener event between processes, bounded generously; the time is logged. */
const PUSHED_WITHIN_MS = 20_000;

test('a member removed through one instance: its session refused at once everywhere, its personal token within the feed\'s push', async (t) => {
  const emulator = await startEmulator(t);
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const front = await startFrontDoor();
  t.teardown(() => front.close());
  const provider = await startProvider({ redirectUri: `${front.url}/v1/sso/callback` });
  t.teardown(() => provider.close());
  const shared = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: `keyward-people-${randomBytes(4).toString('hex')}`,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_UPSTREAM_OPENAI: fake.url,
    KEYWARD_PUBLIC_URL: front.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1',
  };
  const nodes: SpawnedServer[] = await Promise.all([0, 1, 2].map(() => spawnServer(t, shared, 30_000)));
  front.target(nodes[0]!.port);
  const org = await createOrg(nodes[0]!.url);
  const cred = (await api(nodes[0]!.url, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: 'sk-people-cluster-0123456789' } })).body.id as string;
  const put = await api(nodes[2]!.url, 'PUT', '/v1/orgs/self/sso', { token: org.token, body: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret } });
  t.is(put.status, 200, put.text);

  const { browser, session } = await signIn(front.url, org.id);
  const me = await sessionCall(browser, front.url, 'GET', '/v1/session');
  t.is(me.status, 200);
  const minted = await sessionCall(browser, front.url, 'POST', '/v1/members/self/tokens', { csrf: me.body.csrf, body: { credential_id: cred } });
  t.is(minted.status, 201);
  const token = minted.body.token as string;

  const sessionStatus = async (n: SpawnedServer) => (await fetch(`${n.url}/v1/orgs/self`, { headers: { cookie: `keyward_session=${session}`, 'x-keyward-csrf': me.body.csrf } })).status;
  const proxyStatus = async (n: SpawnedServer) => {
    const r = await fetch(`${n.url}/v1/proxy/v1/models`, { headers: { 'x-proxy-token': token } });
    await r.arrayBuffer();
    return r.status;
  };
  for (const n of nodes) {
    t.is(await sessionStatus(n), 200, 'the session works on every instance');
    t.is(await proxyStatus(n), 200, 'the personal token is warm in every instance\'s cache');
  }

  const removed = await api(nodes[1]!.url, 'DELETE', `/v1/members/${me.body.member.id}`, { token: org.token });
  t.is(removed.status, 200);
  const at = Date.now();
  for (const n of nodes) t.is(await sessionStatus(n), 401, 'the session is refused at once on every instance');
  t.is(await proxyStatus(nodes[1]!), 401, 'at once on the instance that removed it');
  const before = Date.now() - at;
  const seen = await Promise.all([nodes[0]!, nodes[2]!].map(async (n) =>
    before + await eventually(async () => (await proxyStatus(n)) === 401, 'the removal heard', PUSHED_WITHIN_MS).catch(() => Infinity)));
  t.log(`the personal token was refused by the other instances after ${seen.join(' ms, ')} ms`);
  for (const ms of seen) t.true(ms <= PUSHED_WITHIN_MS, `seen after ${ms} ms`);
  const listed = await api(nodes[2]!.url, 'GET', '/v1/tokens?status=revoked', { token: org.token });
  t.is(listed.body.data[0].member_id, me.body.member.id);
});
