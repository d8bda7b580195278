/**
 * New HTTP/2 streams are handled at most STREAMS_PER_TURN to a turn of the event loop (src/http/h2c.ts), so a
 * burst of HEADERS frames cannot hold the loop while every other connection's request waits (issue 29: turns of
 * 100 ms and more while 10,000 streams opened at 1,000 a second). The rest wait for the next turns: none is
 * refused, none reordered, and one the caller reset while it waited is never handed to the gateway.
 */
import test from 'ava';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { H2cFrontDoor, TurnQueue } from '../../src/http/h2c.js';
import { ManualClock } from '../support/clocks.js';

/** One check phase later: setImmediate callbacks run in the order they were set, so this runs after the queue's own. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('a burst runs perTurn jobs now and the rest in the turns after, in arrival order', async (t) => {
  const queue = new TurnQueue(4);
  const ran: number[] = [];
  for (let i = 0; i < 10; i++) queue.run(() => ran.push(i));
  t.deepEqual(ran, [0, 1, 2, 3]);
  t.is(queue.waiting, 6);
  // A job arriving while others wait goes behind them, even once the turn has room again.
  await nextTurn();
  t.deepEqual(ran, [0, 1, 2, 3, 4, 5, 6, 7]);
  queue.run(() => ran.push(10));
  t.deepEqual(ran, [0, 1, 2, 3, 4, 5, 6, 7], 'the turn that ran 4–7 had no room left');
  await nextTurn();
  t.deepEqual(ran, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  t.is(queue.waiting, 0);
  // With nothing waiting, a new turn runs its share at once again.
  await nextTurn();
  for (let i = 11; i < 15; i++) queue.run(() => ran.push(i));
  t.is(ran.at(-1), 14);
  queue.run(() => ran.push(15));
  t.is(ran.at(-1), 14);
  await nextTurn();
  t.is(ran.at(-1), 15);
});

test('a hundred streams sent in one burst are all handled, in the order they were opened, and a reset one is not', async (t) => {
  const clock = new ManualClock();
  const handled: number[] = [];
  const h1 = http.createServer();
  const door = new H2cFrontDoor(h1, (req, res) => {
    handled.push((req as unknown as http2.Http2ServerRequest).stream.id!);
    res.end('ok');
  }, { firstBytesTimeoutMs: 5000, requestTimeoutMs: 5000, checkEveryMs: 1000, clock, timers: clock, idleTimeoutMs: 60_000, maxHeaderSize: 16 * 1024, streamsPerTurn: 8 });
  await new Promise<void>((resolve) => h1.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    door.destroyAll();
    h1.close();
  });
  const session = http2.connect(`http://127.0.0.1:${(h1.address() as AddressInfo).port}`);
  t.teardown(() => session.destroy());
  await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
  const answers: Array<Promise<number>> = [];
  const opened: number[] = [];
  let reset = -1;
  for (let i = 0; i < 100; i++) {
    const stream = session.request({ ':path': `/${i}` });
    stream.on('error', () => {});
    stream.resume();
    if (i === 99) {
      // Sent in the same write as the HEADERS: it arrives behind 99 others, long before its turn.
      reset = stream.id!;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      continue;
    }
    // The session is connected: the stream has its id as soon as it is opened.
    opened.push(stream.id!);
    answers.push(new Promise((resolve) => stream.once('response', (h) => resolve(Number(h[':status'])))));
  }
  const statuses = await Promise.all(answers);
  t.true(statuses.every((s) => s === 200));
  t.deepEqual(handled, opened, 'every stream handled once, in the order it was opened');
  t.true(reset > 0);
  t.false(handled.includes(reset), 'the stream reset while it waited its turn is not handed over');
  t.is(handled.length, 99);
});
