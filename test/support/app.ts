/**
 * Test support: a real Keyward server on 127.0.0.1:0 with a real SQLite file
 * in a fresh temp folder, in this process (startApp) or as a child process
 * running the built dist/ (spawnServer). Every line the server logs is kept,
 * so tests can prove no secret was logged.
 */
import type { ExecutionContext } from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Clock, Timers } from '../../src/clock.js';
import { loadConfig, type Config } from '../../src/settings/config.js';
import { buildServer, type Server } from '../../src/boot/container.js';
import { createLogger } from '../../src/log.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** The repository: two folders up from test/support/ (run from source), three from dist/test/support/ (compiled by `npm test`). */
export const ROOT = path.resolve(HERE, ...(HERE.split(path.sep).includes('dist') ? ['..', '..', '..'] : ['..', '..']));
export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';
export const TEST_ABUSE_LIMITS = { KEYWARD_AUTH_FAILURES: '1000000', KEYWARD_ADMIN_RATE: '1000000' };

export function tempDir(t: ExecutionContext, prefix = 'keyward-'): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface TestApp {
  url: string;
  port: number;
  config: Config;
  server: Server;
  dataDir: string;
  /** Every log line, parsed. */
  logs: Array<Record<string, unknown>>;
  /** Every log line, raw. */
  logText(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  dataDir?: string;
  clock?: Clock;
  /** Flushes, polls and cache ages on these (a ManualClock: moved by the test with tick(), never waited for). */
  timers?: Timers;
}

export async function startApp(t: ExecutionContext, options: StartOptions = {}): Promise<TestApp> {
  const dataDir = options.dataDir ?? tempDir(t);
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    KEYWARD_DATA_DIR: dataDir,
    KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN,
    KEYWARD_LOG_LEVEL: 'debug',
    // Most suites send many bad tokens and admin calls from 127.0.0.1 on purpose;
    // the abuse-control tests set these back to small values.
    ...TEST_ABUSE_LIMITS,
    ...options.env,
  });
  const raw: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      raw.push(chunk.toString());
      cb();
    },
  });
  const log = createLogger(config.logLevel, sink);
  const server = await buildServer(config, log, { ...(options.clock ? { clock: options.clock } : {}), ...(options.timers ? { timers: options.timers } : {}) });
  const address = await server.http.listen();
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await server.shutdown();
  };
  t.teardown(stop);
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    config,
    server,
    dataDir,
    get logs() {
      return raw.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    },
    logText: () => raw.join(''),
    stop,
  };
}

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

/** One admin API call with JSON in and out. */
export async function api<T = any>(
  base: string | TestApp,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<ApiResponse<T>> {
  const url = (typeof base === 'string' ? base : base.url) + path;
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(url, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

export interface Org {
  id: string;
  token: string;
}

export async function createOrg(app: TestApp | string, name = 'acme'): Promise<Org> {
  const r = await api(app, 'POST', '/v1/orgs', { token: ADMIN_TOKEN, body: { name } });
  if (r.status !== 201) throw new Error(`org create failed: ${r.status} ${r.text}`);
  return { id: r.body.id, token: r.body.token };
}

export async function createCredential(app: TestApp | string, org: Org, provider: string, apiKey: string): Promise<string> {
  const r = await api(app, 'POST', '/v1/credentials', { token: org.token, body: { provider, api_key: apiKey } });
  if (r.status !== 201) throw new Error(`credential create failed: ${r.status} ${r.text}`);
  return r.body.id;
}

export async function mintToken(app: TestApp | string, org: Org, credentialId: string, ttl = '15m', extra: Record<string, unknown> = {}): Promise<{ id: string; token: string }> {
  const r = await api(app, 'POST', '/v1/tokens', { token: org.token, body: { credential_id: credentialId, ttl, ...extra } });
  if (r.status !== 201) throw new Error(`token mint failed: ${r.status} ${r.text}`);
  return { id: r.body.id, token: r.body.token };
}

export interface SpawnedServer {
  url: string;
  port: number;
  proc: ChildProcess;
  /** stdout lines so far. */
  lines: string[];
  stderr(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node dist/src/main.js` (built by `npm test` before ava runs) and waits for its listening line. */
export async function spawnServer(t: ExecutionContext, env: Record<string, string>, timeoutMs = 60_000): Promise<SpawnedServer> {
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist/src/main.js')], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN, ...TEST_ABUSE_LIMITS, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let err = '';
  let buffered = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  proc.stderr!.on('data', (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${err}${lines.join('\n')}`)), timeoutMs);
    proc.stdout!.on('data', (d: Buffer) => {
      buffered += d.toString();
      let nl;
      while ((nl = buffered.indexOf('\n')) !== -1) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        lines.push(line);
        try {
          const o = JSON.parse(line);
          if (o.message === 'listening') {
            clearTimeout(timer);
            resolve(o.port);
          }
        } catch { /* not JSON */ }
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}: ${err}`));
    });
  });
  const kill = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
    return exited;
  };
  t.teardown(() => kill('SIGKILL'));
  return { url: `http://127.0.0.1:${port}`, port, proc, lines, stderr: () => err, exited, kill };
}
