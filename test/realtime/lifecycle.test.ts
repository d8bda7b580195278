/**
 * How sessions end from the gateway's side: revoking the token or deleting its credential closes them (1008)
 * within a second; a session silent for KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS closes (1001, the injected clock); a
 * message over KEYWARD_WS_MAX_MESSAGE closes both legs with 1009 (either way); a reader that never reads pauses
 * the provider's side (its own send buffer fills, the gateway holds little), and when it reads again every
 * message arrives, in order; SIGTERM drains sessions like streams (they go on, new ones are refused, then 1001,
 * exit 0, usage flushed).
 */
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { ManualClock } from '../support/clocks.js';
import { api, createOrg, mintToken, spawnServer } from '../support/app.js';
import { openClient, realtimeFixture } from '../support/realtime-fixture.js';
import { startRealtimeFake } from '../support/realtime-fake.js';
import { eventually } from '../support/wait.js';

const item = (text: string) => ({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });

test('revoking the token closes its sessions with 1008 within a second; deleting the credential closes the rest', async (t) => {
  // "Within a second" is a second of the server's own timers (the feed's poll, the sessions' sweep): moved here,
  // however busy the machine; the close frame's trip to the client is a real event, waited for as one.
  const timers = new ManualClock();
  const f = await realtimeFixture(t, { timers });
  const a = await f.mint('openai');
  const b = await f.mint('openai');
  const g = await f.mint('gemini');
  const sa = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${a.token}` });
  const sb = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${b.token}` });
  const sg = await f.open('ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent', { 'x-goog-api-key': g.token });
  t.is((await f.admin('DELETE', `/v1/tokens/${a.id}`)).status, 200);
  await timers.tick(1000);
  const closed = await sa.closed;
  t.is(closed.code, 1008);
  t.is(sb.ws.readyState, sb.ws.OPEN, 'another token\'s session goes on');
  t.is(sg.ws.readyState, sg.ws.OPEN);
  t.is((await f.admin('DELETE', `/v1/credentials/${f.credentials.openai}`)).status, 200);
  await timers.tick(1000);
  t.is((await sb.closed).code, 1008);
  t.is(sg.ws.readyState, sg.ws.OPEN, 'a session of another credential goes on');
  sg.ws.close();
});

test('a session silent for KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS closes with 1001 (the injected clock)', async (t) => {
  const clock = new ManualClock(Date.now());
  const f = await realtimeFixture(t, { clock, timers: clock, env: { KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '60000' } });
  const tok = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');
  clock.advance(59_000);
  c.send(item('still here'));
  await c.waitFor((m) => m.type === 'conversation.item.created');
  await clock.tick(59_000); // every sweep on the way: not idle yet (a message 59 s ago)
  t.is(c.ws.readyState, c.ws.OPEN);
  await clock.tick(2_000);
  const closed = await c.closed;
  t.is(closed.code, 1001);
  t.regex(closed.reason, /idle/);
});

test('a message over KEYWARD_WS_MAX_MESSAGE closes the session with 1009, from either side', async (t) => {
  const f = await realtimeFixture(t, { env: { KEYWARD_WS_MAX_MESSAGE: '64kb' } });
  const tok = await f.mint('openai');
  const auth = { authorization: `Bearer ${tok.token}` };
  const up = await f.open('v1/realtime?model=gpt-realtime', auth);
  up.send(item('x'.repeat(100 * 1024)));
  t.is((await up.closed).code, 1009);
  t.is(f.fake.received[0]!.length, 0, 'the oversized message never reached the provider');
  const down = await f.open('v1/realtime?model=gpt-realtime', auth);
  down.send(item('big:100'));
  t.is((await down.closed).code, 1009);
  // The provider's legs close after the gateway's: real events, waited for with a generous bound.
  for (const i of [0, 1]) await eventually(() => f.fake.sockets[i]!.readyState === 3, `the provider's leg ${i} closed`);
  t.is(f.fake.sockets[0]!.readyState, 3);
  t.is(f.fake.sockets[1]!.readyState, 3, 'the provider\'s leg is closed too');
});

test('a reader that never reads pauses the provider side; reading again, every message arrives in order', async (t) => {
  const f = await realtimeFixture(t);
  const tok = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');
  c.ws.pause(); // the caller stops reading its socket
  const n = 400;
  const kib = 64; // 25 MB in all, more than every socket buffer on the way
  c.ws.send(JSON.stringify(item(`flood:${n}:${kib}`)));
  const upstream = await f.fake.connection(0);
  // Wait until the provider's send buffer stops draining: the gateway has stopped reading. No event marks what does
  // not happen, so "stopped" is the buffer unchanged for 500 ms on end.
  let last = -1;
  let since = 0;
  await eventually(() => {
    if (upstream.bufferedAmount !== last) [last, since] = [upstream.bufferedAmount, performance.now()];
    return performance.now() - since >= 500;
  }, 'the provider\'s send buffer stopped draining');
  const total = n * (kib * 1024 + 80);
  t.log(`provider still holds ${(upstream.bufferedAmount / 2 ** 20).toFixed(1)} MB of ${(total / 2 ** 20).toFixed(1)} MB`);
  // Everything not in the provider's buffer sits in kernel socket buffers or the gateway: bounded, far below the total.
  t.true(upstream.bufferedAmount > total - 16 * 2 ** 20, 'the gateway and the kernels hold under 16 MB');
  c.ws.resume();
  await c.waitFor(() => c.received.filter((m) => m.type === 'response.output_audio.delta').length === n);
  const seqs = c.received.filter((m) => m.type === 'response.output_audio.delta').map((m) => m.seq);
  t.deepEqual(seqs, Array.from({ length: n }, (_, i) => seqs[0] + i), 'every message, in order');
  c.ws.close();
});

test('SIGTERM drains sessions like streams: open ones go on, new ones are refused, then 1001 and exit 0', async (t) => {
  const key = `sk-drain-${randomBytes(8).toString('hex')}`;
  const fake = await startRealtimeFake(key);
  t.teardown(() => fake.close());
  const dir = (await import('../support/app.js')).tempDir(t);
  // The drain window is real time in another process: long enough for the open session's turn on a busy machine.
  const node = await spawnServer(t, { KEYWARD_DATA_DIR: dir, KEYWARD_UPSTREAM_OPENAI: fake.url, KEYWARD_DRAIN_S: '10' });
  const org = await createOrg(node.url);
  const cred = (await api(node.url, 'POST', '/v1/credentials', { token: org.token, body: { provider: 'openai', api_key: key } })).body.id;
  const tok = await mintToken(node.url, org, cred, '1h');
  const ws = `ws://127.0.0.1:${node.port}/v1/proxy/v1/realtime?model=gpt-realtime`;
  const c = await openClient(ws, { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');
  node.proc.kill('SIGTERM');
  await eventually(() => node.lines.some((l) => l.includes('"message":"shutting down"')), 'the drain began');
  c.send({ type: 'response.create' });
  await c.waitFor((m) => m.type === 'response.done');
  t.pass('the open session goes on while draining');
  // Once the drain has begun (the signal handler hands leases back first), no new session is accepted.
  // Well within the 10 s drain window, so a server that has exited (refusing everything) cannot pass for one draining.
  const refused = await eventually(async () => {
    const opened = await openClient(ws, { authorization: `Bearer ${tok.token}` }).then((s) => s, () => undefined);
    opened?.ws.close();
    return !opened;
  }, 'a new session refused', 5_000).then(() => true, () => false);
  t.true(refused, 'no new session while draining');
  const closed = await c.closed;
  t.is(closed.code, 1001);
  t.is(await node.exited, 0);
  t.true(node.lines.some((l) => l.includes('"message":"stopped"')));
});
