/**
 * Three gateway processes on one Firestore emulator: a realtime session open on each instance closes (1008)
 * within a second of its token being revoked through one of them, and a credential deleted through another
 * closes its sessions everywhere too; sessions of other tokens go on.
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { api, createOrg, mintToken, spawnServer, type SpawnedServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { startRealtimeFake } from '../support/realtime-fake.js';
import { openClient, type Client } from '../support/realtime-fixture.js';

/**
 * A change that Firestore's listener carries between processes, and the close frame back: real events, bounded
 * generously (a busy machine is slow). The second itself is the feed's and the sessions' own timers, tested without
 * racing in-process (test/realtime/lifecycle.test.ts moves them).
 */
const PUSHED_WITHIN_MS = 20_000;

test('three instances: revoking a token or deleting its credential closes its sessions on every instance within a second', async (t) => {
  const emulator = await startEmulator(t);
  const key = `sk-cluster-rt-${randomBytes(8).toString('hex')}`;
  const fake = await startRealtimeFake(key);
  t.teardown(() => fake.close());
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: `keyward-rt-${randomBytes(4).toString('hex')}`,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_UPSTREAM_OPENAI: fake.url,
  };
  const nodes: SpawnedServer[] = await Promise.all([0, 1, 2].map(() => spawnServer(t, env, 30_000)));
  const org = await createOrg(nodes[0]!.url);
  const cred = (await api(nodes[0]!.url, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: key } })).body.id as string;
  const victim = await mintToken(nodes[0]!.url, org, cred, '1h');
  const other = await mintToken(nodes[0]!.url, org, cred, '1h');
  const open = (n: SpawnedServer, token: string): Promise<Client> => openClient(`ws://127.0.0.1:${n.port}/v1/proxy/v1/realtime?model=gpt-realtime`, { authorization: `Bearer ${token}` });
  const victims = await Promise.all(nodes.map((n) => open(n, victim.token)));
  const others = await Promise.all(nodes.map((n) => open(n, other.token)));
  for (const c of [...victims, ...others]) await c.waitFor((m) => m.type === 'session.created');

  t.is((await api(nodes[1]!.url, 'DELETE', `/v1/tokens/${victim.id}`, { token: org.token })).status, 200);
  const at = Date.now();
  const after = await Promise.all(victims.map(async (c) => ({ code: (await c.closed).code, ms: Date.now() - at })));
  t.log(`sessions closed after ${after.map((a) => a.ms).join(', ')} ms`);
  for (const a of after) {
    t.is(a.code, 1008);
    t.true(a.ms <= PUSHED_WITHIN_MS, `closed ${a.ms} ms after the revocation`);
  }
  for (const c of others) t.is(c.ws.readyState, c.ws.OPEN, 'another token\'s sessions go on');

  t.is((await api(nodes[2]!.url, 'DELETE', `/v1/credentials/${cred}`, { token: org.token })).status, 200);
  const at2 = Date.now();
  const after2 = await Promise.all(others.map(async (c) => ({ code: (await c.closed).code, ms: Date.now() - at2 })));
  t.log(`credential deletion closed sessions after ${after2.map((a) => a.ms).join(', ')} ms`);
  for (const a of after2) {
    t.is(a.code, 1008);
    t.true(a.ms <= PUSHED_WITHIN_MS, `closed ${a.ms} ms after the deletion`);
  }
});
