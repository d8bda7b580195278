/**
 * Leases with holders and expiry across three gateway processes on one Firestore emulator
 * (KEYWARD_LEASE_TTL=3s): one instance is killed with SIGKILL while three of its streams are open.
 * Within one TTL its idle amounts are back in the pool and its in-flight worst cases are charged as
 * used; the two survivors then reach the organisation's monthly cap to within one worst case and
 * never pass it, counting everything the dead instance forwarded as billed in full; GET /v1/usage
 * shows used + held ≤ limit throughout and, once every request is refused, less than one request left.
 */
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { api, createCredential, createOrg, mintToken, spawnServer, type SpawnedServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { providersDir } from '../support/providers-dir.js';
import { chat, chatBody, worstCase } from '../support/budget.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/catalog/spend-bound.js';
import { formatUsd, parseUsd } from '../../src/catalog/money.js';
import { FirestoreStore } from '../../src/store/firestore/firestore-store.js';

const TTL_MS = 3000;

/**
 * An OpenAI-shaped upstream: a JSON answer reporting the request's worst case as its usage, or, with
 * `x-hold`, a stream that sends its first chunk and then waits (until the caller goes away).
 */
async function startUpstream() {
  const seen = { answered: 0, held: 0, cut: 0 };
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (req.headers['x-hold']) {
      seen.held++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'pm-1', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
      res.on('close', () => seen.cut++);
      return;
    }
    seen.answered++;
    const usage = { prompt_tokens: Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, completion_tokens: JSON.parse(body).max_tokens };
    const text = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'pm-1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('SIGKILL mid-stream: idle amounts return within one TTL, in-flight worst cases are charged, the cap is reached and never passed', async (t) => {
  t.timeout(180_000);
  const emulator = await startEmulator(t);
  const up = await startUpstream();
  t.teardown(() => up.close());
  const project = `keyward-leases-${randomBytes(4).toString('hex')}`;
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: project,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']),
    KEYWARD_UPSTREAM_PRICED: up.url, KEYWARD_LEASE_TTL: `${TTL_MS / 1000}s`,
  };
  const [a, b, c] = await Promise.all([0, 1, 2].map(() => spawnServer(t, env, 30_000))) as [SpawnedServer, SpawnedServer, SpawnedServer];
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
  while (up.seen.held < 3) await sleep(20);
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
  // A ledger read is evaluated at the time it is given (expired holders reclaimed as of then), so what is checked is
  // the time the last read still without the reclaim was made for, not how long a busy machine took to read. The
  // reclaim is what charges the dead holder's in-flight worst cases (a change of `held` alone can be the survivors').
  const charged = 6 * w + 3 * ws;
  let readAt = Date.now();
  let ledger = await store.leaseLedger(key, readAt);
  const heldBefore = ledger.held;
  let lastHeldAt = readAt;
  while (ledger.used < charged && Date.now() - killedAt < 20_000) {
    lastHeldAt = readAt;
    await sleep(50);
    readAt = Date.now();
    ledger = await store.leaseLedger(key, readAt);
  }
  t.log(`the dead holder's lease was reclaimed in a read as of ${readAt - killedAt} ms after SIGKILL, not yet as of ${lastHeldAt - killedAt} ms (TTL ${TTL_MS} ms)`);
  t.true(ledger.used >= charged, `its in-flight worst cases are charged: used ${ledger.used} ≥ ${charged}`);
  t.not(ledger.held, heldBefore, 'the dead holder\'s amounts came back');
  t.true(lastHeldAt - killedAt <= TTL_MS + 1000, `back within one TTL: not yet as of ${lastHeldAt - killedAt} ms`);

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
      await sleep(1100); // past a refusal's recheck
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
