/**
 * The processes under test: the fake provider, the bare Node proxy, the floor, nginx and
 * Keyward (the built `node dist/src/main.js`), each its own child process on
 * 127.0.0.1; provisioning through the admin API; memory and CPU readings from /proc;
 * and the load-worker launcher.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, readdirSync, symlinkSync, writeFileSync, closeSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Job } from './load.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const BENCH = path.join(ROOT, 'bench');
/** bench/lib: the shared pieces, among them the scripts each server and load process runs. */
export const LIB = path.join(BENCH, 'lib');
export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Proc {
  name: string;
  proc: ChildProcess;
  port: number;
  /** The process and its children (nginx: master + worker). */
  pids(): number[];
  stop(): Promise<void>;
  stderr(): string;
}

/** `node args…` under `ulimit -n fds` (never above the hard limit). */
export function nodeWithFds(fds: number, args: string[], opts: Parameters<typeof spawn>[2]): ChildProcess {
  return spawn('sh', ['-c', `ulimit -n ${fds} && exec "$0" "$@"`, process.execPath, ...args], opts);
}

/** The port a child announces with a `ready <port>` line on stdout. */
export function readyLine(proc: ChildProcess, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /ready (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`${name} exited ${code}`)));
  });
}

export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** VmRSS and VmHWM in MB, summed over the pids. */
export function memory(pids: number[]): { rssMb: number; hwmMb: number } {
  let rss = 0;
  let hwm = 0;
  for (const pid of pids) {
    try {
      const s = readFileSync(`/proc/${pid}/status`, 'utf8');
      rss += Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? 0);
      hwm += Number(/VmHWM:\s+(\d+)/.exec(s)?.[1] ?? 0);
    } catch { /* gone */ }
  }
  return { rssMb: rss / 1024, hwmMb: hwm / 1024 };
}

/** CPU seconds (user + system) used so far by the pids, from /proc/<pid>/stat. */
export function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]); // utime, stime (fields 14 and 15)
    } catch { /* gone */ }
  }
  return ticks / CLK_TCK;
}
const CLK_TCK = 100;

/** Resets VmHWM to the current RSS (Linux clear_refs 5); false where not permitted. */
export function resetPeak(pids: number[]): boolean {
  try {
    for (const pid of pids) writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Samples VmRSS of each process group every `everyMs` and keeps the maximum. */
export class RssSampler {
  private readonly max = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  constructor(private readonly procs: Proc[], private readonly everyMs = 50) {}
  start(): void {
    this.max.clear();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }
  private sample(): void {
    for (const p of this.procs) {
      const { rssMb } = memory(p.pids());
      this.max.set(p.name, Math.max(this.max.get(p.name) ?? 0, rssMb));
    }
  }
  stop(): Map<string, number> {
    clearInterval(this.timer);
    this.sample();
    return new Map(this.max);
  }
}

function waitExit(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((r) => proc.once('exit', () => r()));
}

async function stopProc(proc: ChildProcess, graceMs = 5000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await waitExit(proc);
  clearTimeout(t);
}

/** Starts a node script that prints `ready <port>` on stdout (`execArgv` before it: `['--import', 'tsx']` for a .ts one). */
export async function startReadyLine(name: string, script: string, env: Record<string, string>, execArgv: string[] = []): Promise<Proc> {
  const proc = spawn(process.execPath, [...execArgv, script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const t = setTimeout(() => reject(new Error(`${name} did not start: ${err}`)), 10_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /ready (\d+)/.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => reject(new Error(`${name} exited ${code}: ${err}`)));
  });
  return { name, proc, port, pids: () => [proc.pid!], stop: () => stopProc(proc), stderr: () => err };
}

export const startFake = (): Promise<Proc> => startReadyLine('fake', path.join(LIB, 'fake-upstream.mjs'), { PORT: '0' });

export const startBare = (upstreamPort: number, key: string): Promise<Proc> =>
  startReadyLine('bare', path.join(LIB, 'bare-proxy.mjs'), { PORT: '0', UPSTREAM: `127.0.0.1:${upstreamPort}`, BENCH_KEY: key });

/** bench/lib/floor-proxy.mjs with the named parts (`hp3,hash,log,metrics,mask`), its log lines to `logFile`. */
export const startFloor = (upstreamPort: number, key: string, parts: string, logFile: string): Promise<Proc> =>
  startReadyLine(`floor:${parts}`, path.join(LIB, 'floor-proxy.mjs'), { PORT: '0', UPSTREAM: `127.0.0.1:${upstreamPort}`, BENCH_KEY: key, FLOOR_PARTS: parts, FLOOR_LOG: logFile });

/** GET until 200 (or the deadline); resolves with the time it first answered 200. */
export async function waitFor200(url: string, deadlineMs: number, everyMs = 2): Promise<number> {
  const end = performance.now() + deadlineMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(url, { agent: false }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200));
      });
      req.on('error', () => resolve(false));
    });
    if (ok) return performance.now();
    if (performance.now() > end) throw new Error(`${url} did not answer 200 within ${deadlineMs} ms`);
    await sleep(everyMs);
  }
}

export function nginxVersion(): string | undefined {
  const r = spawnSync('nginx', ['-v'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return undefined;
  return (r.stderr || r.stdout).trim().replace(/^nginx version:\s*/, '');
}

/** nginx as a non-daemon child (master + 1 worker, like one Node process), proxy_pass with the key set in a header. */
export async function startNginx(dir: string, upstreamPort: number, key: string): Promise<Proc> {
  const port = await freePort();
  mkdirSync(path.join(dir, 'temp'), { recursive: true });
  const conf = `
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 65536;
${process.getuid?.() === 0 ? 'user root root;' : ''}
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
  access_log off;
  client_body_temp_path ${dir}/temp/body;
  proxy_temp_path ${dir}/temp/proxy;
  fastcgi_temp_path ${dir}/temp/fastcgi;
  uwsgi_temp_path ${dir}/temp/uwsgi;
  scgi_temp_path ${dir}/temp/scgi;
  keepalive_requests 1000000;
  keepalive_timeout 65s;
  upstream fake {
    server 127.0.0.1:${upstreamPort};
    keepalive 256;
    keepalive_requests 1000000;
  }
  server {
    listen 127.0.0.1:${port};
    location /v1/proxy/ {
      proxy_pass http://fake/;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header X-Proxy-Token "";
      proxy_set_header Authorization "Bearer ${key}";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
`;
  const file = path.join(dir, 'nginx.conf');
  writeFileSync(file, conf);
  const proc = spawn('nginx', ['-p', dir, '-c', file, '-e', path.join(dir, 'error.log')], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  // Any answer from the upstream through nginx means it is up (the fake answers 200 to anything).
  await waitFor200(`http://127.0.0.1:${port}/v1/proxy/health`, 10_000, 20).catch((e: Error) => {
    throw new Error(`${e.message}: ${err}`);
  });
  return { name: 'nginx', proc, port, pids: () => [proc.pid!, ...childPids(proc.pid!)], stop: () => stopProc(proc), stderr: () => err };
}

export function keywardEnv(dataDir: string, port: number, upstreamPort: number): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    HOST: '127.0.0.1',
    PORT: String(port),
    KEYWARD_DATA_DIR: dataDir,
    KEYWARD_ADMIN_TOKEN: ADMIN_TOKEN,
    KEYWARD_UPSTREAM_OPENAI: `http://127.0.0.1:${upstreamPort}`,
    KEYWARD_FREE_PROXY_REQUESTS: '1000000000',
  };
}

/** `node [flags] dist/src/main.js` on the embedded default; stdout (one JSON log line per request) goes to `logFile`. */
export interface KeywardOptions {
  nodeFlags?: string[];
  /** The built entry point (default dist/src/main.js). */
  main?: string;
  env?: Record<string, string>;
}

/**
 * The V8 flags Keyward runs with: those of `npm start` (package.json; the Dockerfile's CMD carries the same, which
 * scripts/docker/image.ts checks), so the bench measures the process as it is deployed.
 */
export const KEYWARD_NODE_FLAGS: readonly string[] = (() => {
  const start = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  const m = /^node((?: --[\w-]+(?:=\S+)?)*) dist\/src\/main\.js$/.exec(start);
  if (!m) throw new Error(`package.json start script is not \`node [--flags] dist/src/main.js\`: ${start}`);
  return m[1]!.trim().split(' ').filter(Boolean);
})();

/**
 * A providers folder under `tmp`: the built ones, with openai wrapped to price gpt-4o-mini if it prices nothing (the
 * bench's OpenAI upstream is the fake provider; a budget or a tokens_per_minute scope needs the model priced, so the
 * rows that use one run on any branch).
 */
export function pricedProvidersDir(tmp: string): string {
  const dir = path.join(tmp, 'providers');
  mkdirSync(dir, { recursive: true });
  const built = path.join(ROOT, 'dist/providers');
  // A build whose prices are data (`<id>.prices.json` beside each provider) is linked as it is; an older one, whose
  // openai.js may price nothing, gets gpt-4o-mini priced inline.
  const files = readdirSync(built);
  const dataPrices = files.includes('openai.prices.json');
  for (const f of files.filter((f) => (f.endsWith('.js') && (dataPrices || f !== 'openai.js')) || f.endsWith('.prices.json'))) symlinkSync(path.join(built, f), path.join(dir, f));
  if (dataPrices) return dir;
  writeFileSync(path.join(dir, 'openai.js'), [
    `import base from ${JSON.stringify(pathToFileURL(path.join(built, 'openai.js')).href)};`,
    `export default { ...base, prices: base.prices ?? { 'gpt-4o-mini': { input: 0.15, cachedInput: 0.075, output: 0.6, maxOutput: 16384, contextWindow: 128000 } }, pricesAsOf: base.pricesAsOf ?? '2026-11-01', pricesSource: base.pricesSource ?? 'https://prices.example/bench' };`,
  ].join('\n'));
  return dir;
}

export async function startKeyward(dataDir: string, upstreamPort: number, logFile: string, opts: KeywardOptions = {}): Promise<Proc & { readyMs: number }> {
  const port = await freePort();
  mkdirSync(dataDir, { recursive: true });
  const out = openSync(logFile, 'a');
  const t0 = performance.now();
  const proc = spawn(process.execPath, [...KEYWARD_NODE_FLAGS, ...(opts.nodeFlags ?? []), opts.main ?? path.join(ROOT, 'dist/src/main.js')], {
    env: { ...keywardEnv(dataDir, port, upstreamPort), ...opts.env },
    stdio: ['ignore', out, 'pipe'],
    cwd: dataDir,
  });
  closeSync(out);
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<never>((_, reject) => proc.once('exit', (code) => reject(new Error(`keyward exited ${code}: ${err}`))));
  exited.catch(() => {});
  const at = await Promise.race([waitFor200(`http://127.0.0.1:${port}/readyz`, 15_000), exited]);
  return { name: 'keyward', proc, port, readyMs: at - t0, pids: () => [proc.pid!], stop: () => stopProc(proc, 15_000), stderr: () => err };
}

export async function postJson(url: string, token: string, body: unknown): Promise<any> {
  const r = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status !== 201) throw new Error(`POST ${url}: ${r.status} ${text}`);
  return JSON.parse(text);
}

/** A token for a round-robin pool of three credentials holding `key` (a new organisation's), as the pool row (bench/rows/pool.ts) makes one. */
export async function provisionPool(base: string, key: string): Promise<string> {
  const org = await postJson(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench-pool' });
  const creds: string[] = [];
  for (let i = 0; i < 3; i++) creds.push((await postJson(`${base}/v1/credentials`, org.token, { provider: 'openai', api_key: key })).id as string);
  const pool = await postJson(`${base}/v1/pools`, org.token, { strategy: 'round_robin', members: creds.map((credential_id) => ({ credential_id })) });
  return (await postJson(`${base}/v1/tokens`, org.token, { pool_id: pool.id, ttl: '1d' })).token as string;
}

/** An organisation, an OpenAI credential with `key`, and a day's token for it (with `scopes`, e.g. `{ budget_usd: '100' }`). */
export async function provision(base: string, key: string, scopes: Record<string, unknown> = {}): Promise<string> {
  const org = await postJson(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench' });
  const cred = await postJson(`${base}/v1/credentials`, org.token, { provider: 'openai', api_key: key });
  const tok = await postJson(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', ...scopes });
  return tok.token as string;
}

/** Runs one measurement in its own load-generator process and returns its JSON. */
export async function runLoad<T>(job: Job): Promise<T> {
  const proc = spawn(process.execPath, ['--import', 'tsx', path.join(LIB, 'load.ts'), JSON.stringify(job)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => proc.once('exit', (c) => r(c)));
  if (code !== 0) throw new Error(`load ${job.mode} failed (${code}): ${err}`);
  const line = out.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as T;
}

/** A long-lived load-generator process (one per path): jobs in, results out, over IPC. */
export class LoadWorker {
  private readonly proc: ChildProcess;
  private next = 0;
  private readonly waiting = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  private err = '';

  constructor(readonly name: string) {
    this.proc = fork(path.join(LIB, 'load.ts'), ['--worker'], { cwd: ROOT, execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
    this.proc.stderr!.on('data', (d) => (this.err += d));
    this.proc.on('message', (m: { id: number; out?: unknown; error?: string }) => {
      const w = this.waiting.get(m.id);
      this.waiting.delete(m.id);
      if (m.error !== undefined) w?.reject(new Error(`load ${this.name}: ${m.error}`));
      else w?.resolve(m.out);
    });
    this.proc.on('exit', (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`load worker ${this.name} exited ${code}: ${this.err}`));
      this.waiting.clear();
    });
  }

  run<T>(job: Job): Promise<T> {
    const id = this.next++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.proc.send({ id, job });
    });
  }

  close(): void {
    if (this.proc.connected) this.proc.disconnect();
  }
}
