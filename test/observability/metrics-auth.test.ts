/**
 * KEYWARD_METRICS_TOKEN guards /metrics; /readyz answers from one shared check
 * at most 2 s old, so probes never turn into one store ping each.
 */
import test from 'ava';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadConfig } from '../../src/settings/config.js';
import { HttpServer } from '../../src/http/server.js';
import { Router } from '../../src/http/router.js';
import { createLogger } from '../../src/log.js';
import { api, startApp } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { sleep } from '../support/wait.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

test('KEYWARD_METRICS_TOKEN set: /metrics → 401 without it or with a wrong one, 200 with it', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_METRICS_TOKEN: METRICS_TOKEN } });
  for (const headers of [{} as Record<string, string>, { authorization: 'Bearer wrong-token-0123456789abcdef' }, { authorization: `Basic ${METRICS_TOKEN}` }, { authorization: `Bearer ${METRICS_TOKEN}x` }]) {
    const r = await api(app, 'GET', '/metrics', { headers });
    t.is(r.status, 401, JSON.stringify(headers));
    t.is(r.body.error.type, 'authentication');
    t.is(r.body.error.code, 'unauthenticated');
    t.is(r.headers.get('www-authenticate'), 'Bearer');
    t.false(r.text.includes(METRICS_TOKEN));
  }
  const ok = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  t.is(ok.status, 200);
  t.regex(await ok.text(), /keyward_/);
  t.false(app.logText().includes(METRICS_TOKEN));
});

test('KEYWARD_METRICS_TOKEN unset: /metrics stays open', async (t) => {
  const app = await startApp(t);
  t.is((await fetch(`${app.url}/metrics`)).status, 200);
});

/** A bare HttpServer whose readiness check is counted. */
async function countedServer(t: import('ava').ExecutionContext, ready: () => Promise<void>, timers: ManualClock) {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: '/nonexistent' });
  const unused = { handle: (_a: unknown, _b: unknown, _c: unknown, _d: unknown, res: ServerResponse) => res.end() };
  const proxy = { handle: (_req: IncomingMessage, res: ServerResponse) => res.end() };
  const http = new HttpServer(config, createLogger('error'), new Router(), unused as never, proxy, { ready, timers });
  const address = await http.listen();
  t.teardown(() => http.drain(0));
  return `http://127.0.0.1:${address.port}/readyz`;
}

test('/readyz: many probes within 2 s, concurrent or not, share one store ping; a later probe checks again', async (t) => {
  let pings = 0;
  // Readiness ages on these timers: the 2 s pass when the test says, however slow the machine.
  const timers = new ManualClock();
  const url = await countedServer(t, async () => {
    pings++;
    await sleep(100); // paces the fake store ping, so the concurrent probes arrive while it is in flight
  }, timers);
  const concurrent = await Promise.all(Array.from({ length: 20 }, () => fetch(url).then((r) => r.status)));
  t.deepEqual([...new Set(concurrent)], [200]);
  for (let i = 0; i < 10; i++) t.is((await fetch(url)).status, 200);
  t.is(pings, 1);
  await timers.tick(1999);
  t.is((await fetch(url)).status, 200);
  t.is(pings, 1, 'still within 2 s');
  await timers.tick(1);
  t.is((await fetch(url)).status, 200);
  t.is(pings, 2);
});

test('/readyz: a failed check is shared too, and answered 503', async (t) => {
  let pings = 0;
  const url = await countedServer(t, async () => {
    pings++;
    throw new Error('store down');
  }, new ManualClock());
  const statuses = await Promise.all(Array.from({ length: 10 }, () => fetch(url).then((r) => r.status)));
  t.deepEqual([...new Set(statuses)], [503]);
  t.is(pings, 1);
});
