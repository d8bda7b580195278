/**
 * A gateway process stopped (SIGSTOP, as a frozen VM or a starved container is) past its lease, then
 * continued (SIGCONT), never forwards on what it held: meanwhile another instance reclaimed its expired
 * holder and used the organisation's quota to the end; back, the stopped one renews before it takes a
 * unit, finds itself reclaimed, and refuses (429) instead of forwarding. The provider receives at most
 * the quota. (The in-process form, with a paused clock, is test/leases/held-lease.test.ts.)
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { createCredential, createOrg, mintToken, spawnServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { startFakeProvider } from '../support/fake-provider.js';
import { sleep } from '../support/wait.js';

const QUOTA = 320;
const TTL_MS = 2000;

test('SIGSTOP past the lease, SIGCONT: the stopped instance never forwards on units that expired meanwhile', async (t) => {
  t.timeout(120_000);
  const emulator = await startEmulator(t);
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: `keyward-pause-${randomBytes(3).toString('hex')}`,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_FREE_PROXY_REQUESTS: String(QUOTA), KEYWARD_LEASE_TTL: `${TTL_MS / 1000}s`,
  };
  const [paused, other] = await Promise.all([spawnServer(t, env, 30_000), spawnServer(t, env, 30_000)]);
  const org = await createOrg(paused.url);
  const cred = await createCredential(paused.url, org, 'openai', 'sk-pause-0123456789');
  const tok = await mintToken(paused.url, org, cred, '1h');
  const send = (url: string) => fetch(`${url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json' }, body: '{"model":"m","messages":[]}',
  }).then(async (r) => {
    await r.arrayBuffer();
    return r.status;
  });

  // The instance to be stopped serves first: it holds a block of the quota (most of it idle, some armed).
  for (let i = 0; i < 5; i++) t.is(await send(paused.url), 200);
  paused.proc.kill('SIGSTOP');
  await sleep(TTL_MS + 1500); // the thing under test: its lease expires, in real time, while it cannot renew
  // The other instance uses the quota to the end, reclaiming the stopped one's idle units on the way.
  let refused = 0;
  while (refused < 3) {
    if ((await send(other.url)) === 429) {
      refused++;
      await sleep(2100); // past an exhausted counter's recheck (2 s), on the spawned server's own clock
    }
  }
  const forwardedBefore = fake.received.length;
  t.true(forwardedBefore <= QUOTA);
  t.true(forwardedBefore >= QUOTA - 20, `the quota was used to (near) its end: ${forwardedBefore} of ${QUOTA}`);
  paused.proc.kill('SIGCONT');
  // Back: whatever it held in memory, it must not forward on it.
  const after = await Promise.all(Array.from({ length: 10 }, () => send(paused.url)));
  t.deepEqual([...new Set(after)], [429], `after SIGCONT: ${after.join(' ')}`);
  t.is(fake.received.length, forwardedBefore, 'nothing forwarded by the instance that was stopped');
  t.true(fake.received.length <= QUOTA);
});
