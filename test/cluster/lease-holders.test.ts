/**
 * Leases with holders and expiry across three gateway processes on one Firestore emulator
 * (KEYWARD_LEASE_TTL=3s): one instance is killed with SIGKILL while three of its streams are open.
 * Within one TTL its idle amounts are back in the pool and its in-flight worst cases are charged as
 * used; the two survivors then reach the organisation's monthly cap to within one worst case and
 * never pass it, counting everything the dead instance forwarded as billed in full; GET /v1/usage
 * shows used + held ≤ limit throughout and, once every request is refused, less than one request left.
 */
import test from 'ava';
import { api, createCredential, createOrg, mintToken, type SpawnedServer } from '../support/app.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { startHoldingCluster } from '../support/holding-upstream.js';
import { formatUsd, parseUsd } from '../../src/pricing/money.js';
import { FirestoreStore } from '../../src/store/firestore/firestore-store.js';
import { eventually, sleep } from '../support/wait.js';

const TTL_MS = 3000;


test('SIGKILL mid-stream: idle amounts return within one TTL, in-flight worst cases are charged, the cap is reached and never passed', async (t) => {
  t.timeout(180_000);
  const { up, emulator, project, servers: [a, b, c] } = await startHoldingCluster(t, 'leases', TTL_MS);
  const w = worstCase(chatBody(0));
  const streamBody = JSON.stringify({ model: 'pm-1', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hold 000000' }] });
  const ws = worstCase(streamBody);
  const cap = 40 * w;
  const month = new Date().toISOString().slice(0, 7);

  const org = await createOrg(a.url);
  const cred = await createCredential(a.url, org, 'priced', 'sk-priced-0123456789');
  const tok = await mintToken(a.url, org, cred, '1h');
  t.is((await api(a.url, 'PATCH', '/v1/orgs/self', { token: org.token, body: { spend_limit_usd: formatUsd(cap) } })).status, 200);
  const spendView = async (node: SpawnedServer) => {
    const s = (await api(node.url, 'GET', '/v1/usage', { token: org.token })).body.spend_usd;
    const v = { used: parseUsd(s.used)!, held: parseUsd(s.held)!, limit: parseUsd(s.limit)! };
    t.true(v.used + v.held <= v.limit, `used ${v.used} + held ${v.held} ≤ limit ${v.limit}`);
    return v;
  };

  // Every instance serves a little, so each holds part of the cap; then three streams open through C.
  for (const n of [a, b, c]) for (let i = 0; i < 2; i++) t.is((await chat(n.url, tok.token, chatBody(i))).status, 200);
  const streams = [0, 1, 2].map(() => fetch(`${c.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': tok.token, 'content-type': 'application/json', 'x-hold': '1' }, body: streamBody,
  }).then((r) => r.text()).catch(() => 'cut'));
  await eventually(() => up.seen.held >= 3, 'the three streams open at the upstream');
  const before = await spendView(a);
  t.true(before.held > 0, 'instances hold part of the cap');

  c.proc.kill('SIGKILL');
  const killedAt = Date.now();
  await c.exited;
  t.deepEqual(await Promise.all(streams), ['cut', 'cut', 'cut'], 'the caller saw its streams cut');

  // The dead instance's idle amounts come back once its lease expires: at most one TTL after its last renewal.
  const store = await FirestoreStore.connect({ gcpProject: project, firestoreEmulatorHost: emulator.host });
  emulator.adopt(store);
  const key = `spend:org:${org.id}:${month}`;
  // The dead holder renewed at most a third of a TTL before it died, so its lease ends by killedAt + TTL on the
  // writers' clocks: read the pool as of then (once real time has passed it; how long the read takes on a busy
  // machine does not matter). Its idle amounts are back, and its armed ones charged as used: at least what it
  // forwarded (2 answered, 3 streams at their worst case). The survivors' own use reaches the store only at their
  // next report (held-lease.ts REPORT_MS), so it is not counted on here.
  const heldBefore = (await store.leaseLedger(key, killedAt)).held;
  const asOf = killedAt + TTL_MS + 100;
  while (Date.now() < asOf) await sleep(asOf - Date.now());
  const ledger = await store.leaseLedger(key, asOf);
  t.log(`held ${heldBefore} → ${ledger.held} µ$ one TTL after SIGKILL; used ${ledger.used} µ$`);
  t.true(ledger.held < heldBefore, 'the dead holder\'s idle amounts are back within one TTL');
  t.true(ledger.used >= 2 * w + 3 * ws, `its in-flight worst cases are charged: used ${ledger.used} ≥ ${2 * w + 3 * ws}`);

  // The survivors reach the cap: everything the dead instance held idle is usable again.
  let answered = 6;
  for (let round = 0, refusedInARow = 0; refusedInARow < 4 && round < 200; round++) {
    const status = (await chat((round % 2 === 0 ? a : b).url, tok.token, chatBody(round))).status;
    if (status === 200) {
      answered++;
      refusedInARow = 0;
    } else {
      t.is(status, 429);
      refusedInARow++;
      await sleep(1100); // past a refusal's recheck: that memo (1 s) runs on the spawned server's own clock, which no injected clock reaches
    }
  }
  t.is(up.seen.answered, answered, 'only what fit was forwarded');
  const billable = answered * w + 3 * ws; // a cut stream can be billed its whole worst case
  t.true(billable <= cap, `billable ${billable} ≤ cap ${cap}`);
  t.true(billable >= cap - w, `billable ${billable} ≥ cap − one worst case (${cap - w})`);
  const after = await spendView(a);
  t.true(after.limit - after.used - after.held < w, `less than one request shown left while every request is refused: ${after.limit - after.used - after.held}`);
  t.true(after.used >= billable - w, `used ${after.used} counts what was billed`);
});
