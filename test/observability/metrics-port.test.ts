/**
 * KEYWARD_METRICS_PORT (the image's default): /metrics moves to 127.0.0.1:<port> for a sidecar collector in the same
 * instance, and the public listener no longer serves it (unless KEYWARD_METRICS_TOKEN is also set, then only with it).
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/settings/config.js';
import { LoopbackMetricsListener } from '../../src/http/metrics-listener.js';
import { Router } from '../../src/http/router.js';
import { HttpServer } from '../../src/http/server.js';
import { createLogger } from '../../src/log.js';
import { api, ROOT, startApp, tempDir, type TestApp } from '../support/app.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

function metricsPortOf(app: TestApp): number {
  const line = app.logs.find((l) => l.message === 'metrics listening');
  if (!line) throw new Error('no "metrics listening" line');
  if (line.address !== '127.0.0.1') throw new Error(`metrics listener bound to ${String(line.address)}`);
  return line.port as number;
}

/** A raw GET of `target` as written (not request(): a URL would normalise it first), answered status and body. */
function rawGet(host: string, port: number, target: string, method = 'GET', headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port, path: target, method, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

test('KEYWARD_METRICS_PORT: /metrics on 127.0.0.1 only; the public listener answers 404 for every spelling of it', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_METRICS_PORT: '0' } });
  const port = metricsPortOf(app);
  t.not(port, app.port);

  const local = await rawGet('127.0.0.1', port, '/metrics');
  t.is(local.status, 200);
  t.regex(local.body, /^keyward_/m);
  t.regex((await rawGet('127.0.0.1', port, '/metrics?x=1')).body, /keyward_/);

  // What tries to reach the metrics on the public port: none of these is the Prometheus text.
  for (const target of ['/metrics', '/metrics?x=1', '/metrics/', '//metrics', '/METRICS', '/metrics%2f', '/./metrics', '/v1/../metrics', '/metrics#a']) {
    const r = await rawGet('127.0.0.1', app.port, target);
    t.true(r.status === 404 || r.status === 400, `${target} → ${r.status}`);
    t.notRegex(r.body, /keyward_/, target);
  }
  // Even with a bearer token: none is configured, so the public /metrics stays absent.
  t.is((await api(app, 'GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status, 404);

  // The loopback listener serves nothing else.
  for (const [method, target] of [['GET', '/'], ['GET', '/healthz'], ['GET', '/v1/orgs'], ['POST', '/metrics'], ['DELETE', '/metrics'], ['GET', '/metricsx']] as const) {
    const r = await rawGet('127.0.0.1', port, target, method);
    t.is(r.status, 404, `${method} ${target}`);
    t.is(JSON.parse(r.body).error.type, 'not_found');
  }
});

test('KEYWARD_METRICS_PORT: reached at 0.0.0.0:<port> from the same host, as the Managed Prometheus sidecar dials it', async (t) => {
  // The sidecar's scrape target is "0.0.0.0:<port>"; on Linux a connection to 0.0.0.0 goes to the local host.
  const app = await startApp(t, { env: { KEYWARD_METRICS_PORT: '0' } });
  const r = await rawGet('0.0.0.0', metricsPortOf(app), '/metrics');
  t.is(r.status, 200);
  t.regex(r.body, /keyward_/);
});

test('KEYWARD_METRICS_PORT with KEYWARD_METRICS_TOKEN: the public /metrics needs the token; the loopback one does not', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_METRICS_PORT: '0', KEYWARD_METRICS_TOKEN: METRICS_TOKEN } });
  t.is((await api(app, 'GET', '/metrics')).status, 401);
  const withToken = await rawGet('127.0.0.1', app.port, '/metrics', 'GET', { authorization: `Bearer ${METRICS_TOKEN}` });
  t.is(withToken.status, 200);
  t.regex(withToken.body, /keyward_/);
  t.is((await rawGet('127.0.0.1', metricsPortOf(app), '/metrics')).status, 200);
});

test('KEYWARD_METRICS_PORT: open while the main listener drains (the collector\'s last scrape), closed once drained', async (t) => {
  const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: '/nonexistent', KEYWARD_METRICS_PORT: '0' });
  let release: () => void = () => undefined;
  // A proxied request that stays in flight until released: the drain waits for it.
  const proxy = { handle: (_req: IncomingMessage, res: ServerResponse) => void new Promise<void>((r) => (release = r)).then(() => res.end('done')) };
  const unused = { handle: (_a: unknown, _b: unknown, _c: unknown, _d: unknown, res: ServerResponse) => res.end() };
  const metrics = new LoopbackMetricsListener(0, async (_req, res) => void res.end('keyward_up 1\n'), 1000);
  const server = new HttpServer(config, createLogger('error'), new Router(), unused as never, proxy, { ready: async () => undefined }, {}, undefined, metrics);
  const main = await server.listen();
  const port = metrics.address()!;
  const inflight = rawGet('127.0.0.1', main.port, '/v1/proxy/x');
  while (server.inflightRequests === 0) await new Promise((r) => setImmediate(r));
  const drained = server.drain(10_000);
  t.is((await rawGet('127.0.0.1', port.port, '/metrics')).body, 'keyward_up 1\n');
  release();
  t.true(await drained);
  t.is((await inflight).body, 'done');
  t.is(await connectOutcome(port.port), 'ECONNREFUSED');
});

test('KEYWARD_METRICS_PORT: closed once the app is shut down', async (t) => {
  const app = await startApp(t, { env: { KEYWARD_METRICS_PORT: '0' } });
  const port = metricsPortOf(app);
  await app.stop();
  t.is(await connectOutcome(port), 'ECONNREFUSED');
});

function connectOutcome(port: number): Promise<string> {
  return new Promise<string>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
  });
}

test('KEYWARD_METRICS_PORT: bad values stop start-up naming the variable', (t) => {
  const base = { HOST: '127.0.0.1', KEYWARD_DATA_DIR: '/nonexistent' };
  for (const bad of ['abc', '-1', '65536', '9464.5', ' 9464']) {
    const err = t.throws(() => loadConfig({ ...base, PORT: '8080', KEYWARD_METRICS_PORT: bad }), { instanceOf: ConfigError });
    t.is(err?.variable, 'KEYWARD_METRICS_PORT', bad);
  }
  t.is(loadConfig({ ...base, PORT: '0', KEYWARD_METRICS_PORT: '0' }).metricsPort, 0);
  t.is(loadConfig(base).metricsPort, undefined);
});

async function startUpFailure(t: import('ava').ExecutionContext, env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', KEYWARD_DATA_DIR: tempDir(t), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  proc.stdout!.resume();
  const code = await new Promise<number | null>((resolve) => proc.once('exit', resolve));
  return { code, stderr };
}

test('KEYWARD_METRICS_PORT in use (by anything, or PORT itself): the built server exits 1 with one line naming KEYWARD_METRICS_PORT', async (t) => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const taken = (blocker.address() as net.AddressInfo).port;
  const inUse = await startUpFailure(t, { KEYWARD_METRICS_PORT: String(taken) });
  t.is(inUse.code, 1);
  t.regex(inUse.stderr, new RegExp(`keyward: start-up failed: KEYWARD_METRICS_PORT: expected a free port on 127\\.0\\.0\\.1 \\(EADDRINUSE\\), got "${taken}"`));
  // The same port as PORT: the main listener has it first.
  blocker.close();
  await new Promise((r) => setImmediate(r));
  const same = await startUpFailure(t, { PORT: String(taken), KEYWARD_METRICS_PORT: String(taken) });
  t.is(same.code, 1);
  t.regex(same.stderr, /KEYWARD_METRICS_PORT: expected a free port on 127\.0\.0\.1 \(EADDRINUSE\)/);
});
