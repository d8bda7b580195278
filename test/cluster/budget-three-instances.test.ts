/**
 * Spend budgets exact across instances: three gateway processes (node dist/src/main.js) on one
 * Firestore emulator, in front of one fake upstream that reports each request's worst case as its
 * usage. 300 concurrent requests, spread over the three, at a cap that fits 37 worst cases: the
 * settled spend never passes the cap and reaches it to within one worst case; only what fit was
 * forwarded; after SIGTERM (every instance hands its held amounts back) the store's leased total is
 * exactly what was spent. Once for a token's budget_usd, once for an org's monthly spend_limit_usd
 * (set through one instance mid-month, applied by all, starting from the month's spend so far).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { api, createCredential, createOrg, mintToken, spawnServer, type SpawnedServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { providersDir } from '../support/providers-dir.js';
import { chat, chatBody, startUsageUpstream, worstCase } from '../support/budget.js';
import { formatUsd } from '../../src/pricing/money.js';
import { FirestoreStore } from '../../src/store/firestore/firestore-store.js';
import { pool } from '../support/pool.js';
import { eventually, sleep } from '../support/wait.js';

test('three instances on one Firestore: a token budget and an org monthly limit are never passed and reached to within one worst case', async (t) => {
  t.timeout(180_000);
  const emulator = await startEmulator(t);
  const up = await startUsageUpstream();
  t.teardown(() => up.close());
  const project = `keyward-budget-${randomBytes(4).toString('hex')}`;
  const shared = {
    KEYWARD_STORE: 'firestore',
    FIRESTORE_EMULATOR_HOST: emulator.host,
    GOOGLE_CLOUD_PROJECT: project,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'),
    KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']),
    KEYWARD_UPSTREAM_PRICED: up.url,
  };
  const nodes: SpawnedServer[] = await Promise.all([0, 1, 2].map(() => spawnServer(t, shared, 30_000)));
  const w = worstCase(chatBody(0));
  const cap = 37 * w;
  const month = new Date().toISOString().slice(0, 7);

  /** `before`: spend already counted under the cap (the month's spend before an org limit was set). */
  const run = async (token: string, before = 0) => {
    const sent = up.received.length;
    const statuses = await pool(300, 300, async (i) => (await chat(nodes[i % 3]!.url, token, chatBody(i))).status);
    const ok = statuses.filter((s) => s === 200).length;
    t.is(statuses.filter((s) => s === 429).length, 300 - ok, 'every other request was refused as budget_exhausted');
    t.is(up.received.length - sent, ok, 'only what fit was forwarded');
    const spent = before + ok * w; // each forwarded request reported its worst case
    t.true(spent <= cap, `spent ${spent} ≤ cap ${cap}`);
    t.true(spent >= cap - w, `spent ${spent} ≥ cap − one worst case (${cap - w})`);
    return ok;
  };

  // A token's lifetime budget.
  const a = await createOrg(nodes[0]!.url, 'tokens');
  const credA = await createCredential(nodes[0]!.url, a, 'priced', 'sk-priced-0123456789');
  const budgeted = await mintToken(nodes[1]!.url, a, credA, '1h', { budget_usd: formatUsd(cap) });
  const tokenOk = await run(budgeted.token);
  t.log(`token budget: ${tokenOk} of 300 forwarded (${formatUsd(tokenOk * w)} of ${formatUsd(cap)} USD)`);

  // An organisation's monthly limit, set through one instance after every instance has served the org.
  const b = await createOrg(nodes[0]!.url, 'org-limit');
  const credB = await createCredential(nodes[0]!.url, b, 'priced', 'sk-priced-0123456789');
  const plain = await mintToken(nodes[0]!.url, b, credB, '1h');
  for (const n of nodes) t.is((await chat(n.url, plain.token, chatBody(0))).status, 200, 'no limit yet');
  // Usage is flushed every second: then the limit, set mid-month, starts from the month's spend (3 worst cases).
  // The flushes happen in the other processes: waited for in the store (a real event, a generous bound).
  const reader = await FirestoreStore.connect({ gcpProject: project, firestoreEmulatorHost: emulator.host });
  emulator.adopt(reader);
  await eventually(async () => (await reader.getUsage('org', b.id, month)).spendMicros === 3 * w, 'the three requests flushed');
  t.is((await api(nodes[2]!.url, 'PATCH', '/v1/orgs/self', { token: b.token, body: { spend_limit_usd: formatUsd(cap) } })).status, 200);
  await sleep(1500); // the promise under test: every instance (another process) hears of it within a second
  const orgOk = await run(plain.token, 3 * w);
  t.true(orgOk <= 34, `${orgOk} forwarded: the three requests before the limit count against it`);
  t.log(`org limit: ${orgOk} of 300 forwarded (${formatUsd(orgOk * w)} of ${formatUsd(cap)} USD)`);

  // Shutdown hands every held amount back: the store then holds exactly what was spent, all used, none held.
  await Promise.all(nodes.map((n) => n.kill('SIGTERM')));
  const store = await FirestoreStore.connect({ gcpProject: project, firestoreEmulatorHost: emulator.host });
  emulator.adopt(store);
  t.deepEqual(await store.leaseLedger(`spend:tok:${budgeted.id}`, Date.now()), { outstanding: tokenOk * w, used: tokenOk * w, held: 0 });
  t.deepEqual(await store.leaseLedger(`spend:org:${b.id}:${month}`, Date.now()), { outstanding: 3 * w + orgOk * w, used: 3 * w + orgOk * w, held: 0 });
});
