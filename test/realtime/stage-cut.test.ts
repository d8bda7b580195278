/**
 * A stage ends a WebSocket session through the exchange as it ends any stream: a max_concurrent slot whose
 * lease is lost (the instance stalled past it, so the store may give the slot to another instance) closes the
 * session with 1011, on both sides, and its slot is free again.
 */
import test from 'ava';
import { ManualClock } from '../support/clocks.js';
import { realtimeFixture } from '../support/realtime-fixture.js';

test('a session whose max_concurrent slot lease is lost is closed 1011 through the exchange; the slot comes back', async (t) => {
  const clock = new ManualClock();
  const f = await realtimeFixture(t, { clock, timers: clock, env: { KEYWARD_LEASE_TTL: '30s', KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS: '3600000' } });
  const { token } = await f.mint('openai', { max_concurrent: 1 });
  const path = 'v1/realtime?model=gpt-realtime';
  const s = await f.open(path, { authorization: `Bearer ${token}` });
  const upstream = await f.fake.connection(0);
  const upstreamClosed = new Promise<number>((r) => upstream.once('close', (code: number) => r(code)));
  const refused = await f.open(path, { authorization: `Bearer ${token}` }).then(() => undefined, (err: { status: number }) => err.status);
  t.is(refused, 429, 'one session at a time');
  clock.advance(2 * f.app.config.leaseTtlMs);
  await clock.tick(250);
  const closed = await s.closed;
  t.is(closed.code, 1011);
  t.is(await upstreamClosed, 1000, 'the provider\'s side is closed too');
  const again = await f.open(path, { authorization: `Bearer ${token}` });
  t.teardown(() => again.ws.close());
  t.pass('the slot was freed with the session');
});
