/**
 * Pools and token limits across three gateway processes (node dist/src/main.js) on one Firestore emulator,
 * in front of one upstream whose answer depends on the key it receives:
 * - a member that answered 429 is skipped by every instance within a second (its cooling travels through
 *   the store and the change feed), also by instances that had the pool cached before;
 * - `max_concurrent` and `tokens_per_minute` (KEYWARD_LEASE_TTL=3s): never more open streams at the
 *   upstream than the limit, whichever instances they came through, while one instance is killed (SIGKILL)
 *   with its streams open; its slots come back within one TTL; the tokens forwarded in any 60 s (a rolling
 *   window, measured at the upstream) never pass the cap, and reach it once the dead instance's holder
 *   was reclaimed (a window after its lease expired) and the streams' tokens left the window.
 */
import test, { type ExecutionContext } from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { api, createCredential, createOrg, spawnServer, type SpawnedServer } from '../support/app.js';
import { startEmulator } from '../support/firestore-emulator.js';
import { providersDir } from '../support/providers-dir.js';
import { chat, chatBody } from '../support/budget.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { FirestoreStore } from '../../src/store/firestore/firestore-store.js';
import { pool } from '../support/pool.js';
import { eventually, sleep } from '../support/wait.js';

const TTL_MS = 3000;

/** The most tokens the upstream received within any 60 s (uses less than 60 s apart). */
function mostInAnyMinute(uses: readonly { at: number; tokens: number }[]): number {
  const sorted = [...uses].sort((x, y) => x.at - y.at);
  let most = 0;
  for (let j = 0, i = 0, sum = 0; j < sorted.length; j++) {
    sum += sorted[j]!.tokens;
    while (sorted[j]!.at - sorted[i]!.at >= 60_000) sum -= sorted[i++]!.tokens;
    most = Math.max(most, sum);
  }
  return most;
}

/** The upstream: `rateLimited` keys answer 429; `x-hold` streams stay open; others report their worst case as usage. */
async function startUpstream() {
  const seen = { byKey: new Map<string, number>(), open: 0, mostOpen: 0, held: 0, uses: [] as { at: number; tokens: number }[] };
  const rateLimited = new Set<string>();
  const holding: http.ServerResponse[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const key = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    seen.byKey.set(key, (seen.byKey.get(key) ?? 0) + 1);
    if (rateLimited.has(key)) {
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '60' });
      res.end('{"error":{"message":"slow down","type":"rate_limit_error"}}');
      return;
    }
    if (req.headers['x-hold']) {
      seen.held++;
      seen.open++;
      seen.mostOpen = Math.max(seen.mostOpen, seen.open);
      res.on('close', () => seen.open--);
      holding.push(res);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', model: 'pm-1', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] })}\n\n`);
      return;
    }
    const usage = { prompt_tokens: Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, completion_tokens: JSON.parse(body).max_tokens };
    seen.uses.push({ at: Date.now(), tokens: usage.prompt_tokens + usage.completion_tokens });
    const text = JSON.stringify({ id: 'c', object: 'chat.completion', model: 'pm-1', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, rateLimited,
    /** Ends every held stream cleanly. */
    release: () => {
      for (const r of holding.splice(0)) r.end('data: [DONE]\n\n');
    },
    close: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

async function cluster(t: ExecutionContext, extra: Record<string, string> = {}) {
  const emulator = await startEmulator(t);
  const up = await startUpstream();
  t.teardown(() => up.close());
  const project = `keyward-pools-${randomBytes(4).toString('hex')}`;
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulator.host, GOOGLE_CLOUD_PROJECT: project,
    KEYWARD_LOCAL_KEK: randomBytes(32).toString('base64'), KEYWARD_PROVIDERS_DIR: providersDir(t, ['priced']), KEYWARD_UPSTREAM_PRICED: up.url, ...extra,
  };
  const nodes = await Promise.all([0, 1, 2].map(() => spawnServer(t, env, 30_000))) as [SpawnedServer, SpawnedServer, SpawnedServer];
  const org = await createOrg(nodes[0].url);
  const reader = await FirestoreStore.connect({ gcpProject: project, firestoreEmulatorHost: emulator.host });
  emulator.adopt(reader);
  return { up, nodes, org, reader };
}

test('three instances: a member that answered 429 is skipped by every instance within a second', async (t) => {
  t.timeout(180_000);
  const { up, nodes, org, reader } = await cluster(t);
  const keys = ['sk-priced-member-a-0000000', 'sk-priced-member-b-0000000'];
  const creds = [await createCredential(nodes[0].url, org, 'priced', keys[0]!), await createCredential(nodes[0].url, org, 'priced', keys[1]!)];
  const p = await api(nodes[1].url, 'POST', '/v1/pools', { token: org.token, body: { strategy: 'ordered', members: creds.map((credential_id) => ({ credential_id })) } });
  t.is(p.status, 201);
  const tok = await api(nodes[2].url, 'POST', '/v1/tokens', { token: org.token, body: { pool_id: p.body.id, ttl: '1h' } });
  // Every instance has the pool cached, with no member cooling: the first member answers.
  for (const n of nodes) t.is((await chat(n.url, tok.body.token, chatBody(0))).status, 200);
  t.is(up.seen.byKey.get(keys[0]!), 3);

  up.rateLimited.add(keys[0]!);
  const failed = await chat(nodes[0].url, tok.body.token, chatBody(1));
  t.is(failed.status, 200);
  t.is(failed.headers.get('x-keyward-attempts'), '2');
  t.is(up.seen.byKey.get(keys[0]!), 4);
  await eventually(async () => ((await reader.getPool(org.id, p.body.id))?.cooling[creds[0]!] ?? 0) > Date.now(), 'the cooling in the store');
  await sleep(1500); // the promise under test: every instance (another process) hears of it within a second
  const statuses = await pool(30, 6, async (i) => {
    const r = await chat(nodes[i % 3]!.url, tok.body.token, chatBody(i));
    return `${r.status}/${r.headers.get('x-keyward-attempts')}`;
  });
  t.deepEqual(new Set(statuses), new Set(['200/1']), 'straight to the second member on every instance');
  t.is(up.seen.byKey.get(keys[0]!), 4, 'the cooling member was never tried again');
  const view = await api(nodes[2].url, 'GET', `/v1/pools/${p.body.id}`, { token: org.token });
  t.truthy(view.body.members[0].cooling_until, 'every instance shows it cooling');
});

test('three instances, one killed mid-stream: max_concurrent never passed at the upstream, the dead instance\'s slots back within one TTL; tokens_per_minute never past the cap in any 60 s', async (t) => {
  t.timeout(240_000);
  const { up, nodes, org } = await cluster(t, { KEYWARD_LEASE_TTL: `${TTL_MS / 1000}s` });
  const [a, b, c] = nodes;
  const cred = await createCredential(a.url, org, 'priced', 'sk-priced-limits-000000000');
  const body = chatBody(0);
  const worst = Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS + 100;
  const perMinute = 25 * worst;
  const minted = await api(b.url, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: cred, ttl: '1h', max_concurrent: 3, tokens_per_minute: perMinute } });
  t.is(minted.status, 201);
  const token = minted.body.token as string;
  const stream = (node: SpawnedServer) => fetch(`${node.url}/v1/proxy/v1/chat/completions`, {
    method: 'POST', headers: { 'x-proxy-token': token, 'content-type': 'application/json', 'x-hold': '1' },
    body: JSON.stringify({ model: 'pm-1', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hold' }] }),
  });

  // Three streams open through C; every further one, through any instance, is refused.
  const held = await Promise.all([stream(c), stream(c), stream(c)]);
  t.deepEqual(held.map((r) => r.status), [200, 200, 200]);
  const bodies = held.map((r) => r.text().catch(() => 'cut'));
  for (const n of [a, b, c]) {
    const r = await stream(n);
    t.is(r.status, 429);
    t.is(((await r.json()) as any).error.code, 'concurrency_exceeded');
  }
  t.is(up.seen.mostOpen, 3);

  c.proc.kill('SIGKILL');
  const killedAt = Date.now();
  await c.exited;
  t.deepEqual(await Promise.all(bodies), ['cut', 'cut', 'cut']);
  // Its slots come back once its holder expires: at most one TTL after its last renewal.
  let reopened: Response | undefined;
  await eventually(async () => {
    const r = await stream(a);
    if (r.status === 200) reopened = r;
    else await r.text();
    return reopened !== undefined;
  }, 'a slot back', 4 * TTL_MS, 100).catch(() => undefined); // not back: the assertions below say so
  const back = Date.now() - killedAt;
  t.log(`the dead instance's slots were back ${back} ms after SIGKILL (TTL ${TTL_MS} ms)`);
  t.truthy(reopened, 'a slot came back');
  t.true(back <= TTL_MS + 1500, `within one TTL (and a retry): ${back} ms`);
  // A and B together hold the limit again: never a fourth open at the upstream.
  const more = await Promise.all([stream(b), stream(a), stream(b)]);
  t.is(more.filter((r) => r.status === 200).length, 2, 'two more fit beside the one reopened');
  t.true(up.seen.mostOpen <= 3, `never more than 3 open at the upstream (saw ${up.seen.mostOpen})`);
  const ended = [reopened!, ...more].map((r) => r.text().catch(() => undefined));
  up.release();
  await Promise.all(ended);
  const releasedAt = Date.now();

  // Tokens per minute, a rolling window: the streams' tokens leave it 60 s after they ended, and the dead
  // instance's holder is reclaimed whole 60 s after its lease expired (it may have used what it armed until
  // then). Once both are past, a burst over the two survivors reaches the cap and never passes it.
  const whole = Math.max(killedAt + TTL_MS + 61_000, releasedAt + 61_000);
  await sleep(Math.max(0, whole - Date.now())); // the window under test, on the spawned servers' own clocks
  const statuses = await pool(80, 16, async (i) => (await chat((i % 2 === 0 ? a : b).url, token, chatBody(0))).status);
  t.true(statuses.every((s) => s === 200 || s === 429), JSON.stringify([...new Set(statuses)]));
  // Then one at a time, past each refusal's recheck, until refused four times in a row: what instances held apart is pooled again.
  for (let round = 0, refusedInARow = 0; refusedInARow < 4 && round < 100; round++) {
    const status = (await chat((round % 2 === 0 ? a : b).url, token, chatBody(0))).status;
    if (status === 200) refusedInARow = 0;
    else {
      t.is(status, 429);
      refusedInARow++;
      await sleep(1100); // past a refusal's recheck: that memo (1 s) runs on the spawned server's own clock, which no injected clock reaches
    }
  }
  const most = mostInAnyMinute(up.seen.uses);
  t.log(`the most tokens in any 60 s at the upstream: ${most} (cap ${perMinute}, one request ${worst}, ${up.seen.uses.length} requests)`);
  t.true(most <= perMinute, `${most} tokens within 60 s ≤ ${perMinute}`);
  t.true(most >= perMinute - worst, 'the cap is reached to within one request');
});
