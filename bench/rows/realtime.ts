/**
 * The realtime row, `npm run bench -- realtime`: realtime sessions through one Keyward process
 * (`node dist/src/main.js`, embedded default, default plugins): 1,000
 * concurrent OpenAI Realtime sessions, each sending 10 messages a second for
 * 30 s, against a fake provider that echoes each message back as a server
 * event. Prints, and writes to bench/results/realtime-<date>.json:
 *   - completeness and order: every message relayed both ways, each session's
 *     echoes in the order sent
 *   - Keyward's peak RSS (sampled VmRSS) and the event loop's delay inside it
 *     (perf_hooks.monitorEventLoopDelay via the bench-only preload
 *     bench/lib/loop-probe.mjs): p50 / p99 / max, over the steady phase
 *   - echo latency (client send → echo back) p50 / p99, and server CPU
 *     seconds per 10,000 messages relayed (both ways)
 * Then the same load through the floor a WebSocket proxy cannot go under on
 * Node: http-proxy-3's `ws()` splicing the two sockets (the key swapped in the
 * handshake, no message read), for the cost of terminating both legs with
 * `ws` (masking, usage, per-response holds need each message whole).
 *
 *   BENCH_RT_SESSIONS (1000), BENCH_RT_RATE (10 a second), BENCH_RT_SECONDS (30),
 *   BENCH_RT_RAMP_MS (10000), BENCH_RT_PAD (200 bytes of text per message), BENCH_RT_SPLICE=0 (skip the floor),
 *   BENCH_RT_PROF=<dir> (Keyward runs with --cpu-prof, the profile written there),
 *   BENCH_OUT=<file> (the report goes there instead: the crowd row, bench/rows/crowd.ts, runs this row so)
 *
 * Each side is its own process (fake, proxy, clients; this one measures).
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ProxyServer } from 'http-proxy-3';
import WebSocket, { WebSocketServer } from 'ws';
import { stats, type Stats } from '../lib/load.js';
import { BENCH, KEYWARD_NODE_FLAGS, LIB, ROOT, cpuSeconds, freePort, keywardEnv, memory, nodeWithFds, provision, readyLine, sleep, waitFor200 } from '../lib/servers.js';

const SELF = fileURLToPath(import.meta.url);
const KEY = `sk-bench-rt-${'k'.repeat(40)}`;
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);

interface ClientJob { url: string; headers: Record<string, string>; sessions: number; rate: number; seconds: number; rampMs: number; pad: number }
interface ClientResult { opened: number; failed: number; sent: number; echoed: number; outOfOrder: number; missing: number; closedEarly: number; latency: Stats; errors: string[] }

// ---------------------------------------------------------------------------------------------
// The fake provider: a session.created on connect, then every client message echoed at once as a server event.
function fake(): void {
  const server = http.createServer((_req, res) => res.end());
  const wss = new WebSocketServer({ server, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    ws.send('{"type":"session.created","session":{"model":"gpt-realtime"}}');
    // The echo is built as text, not parsed: the fake's cost stays out of the measure.
    ws.on('message', (data: Buffer) => ws.send(`{"type":"conversation.item.created","echo":${data.toString()}}`));
  });
  server.listen(0, '127.0.0.1', () => console.log(`ready ${(server.address() as { port: number }).port}`));
}

// The floor: http-proxy-3's ws() splicing caller and provider sockets, the key swapped into the handshake.
function splice(upstreamPort: number): void {
  const proxy = new ProxyServer({ target: `http://127.0.0.1:${upstreamPort}`, ws: true, xfwd: false });
  proxy.on('error', () => {});
  const server = http.createServer((_req, res) => res.end());
  server.on('upgrade', (req, socket, head) => {
    delete req.headers['x-proxy-token'];
    req.headers.authorization = `Bearer ${KEY}`;
    req.url = (req.url ?? '').replace('/v1/proxy', '');
    proxy.ws(req, socket, head);
  });
  server.listen(0, '127.0.0.1', () => console.log(`ready ${(server.address() as { port: number }).port}`));
}

// ---------------------------------------------------------------------------------------------
// The clients: `sessions` sessions opened evenly over `rampMs`, each sending `rate` numbered messages a second
// for `seconds`, each waiting for every echo; order is checked per session.
async function client(job: ClientJob): Promise<ClientResult> {
  const result: ClientResult = { opened: 0, failed: 0, sent: 0, echoed: 0, outOfOrder: 0, missing: 0, closedEarly: 0, latency: stats([]), errors: [] };
  const latencies: number[] = [];
  const pad = 'p'.repeat(job.pad);
  const one = (i: number) => new Promise<void>((resolve) => {
    const ws = new WebSocket(job.url, { headers: job.headers, perMessageDeflate: false });
    const sentAt: number[] = [];
    let next = 0;
    let timer: NodeJS.Timeout | undefined;
    const total = job.rate * job.seconds;
    const finish = () => {
      clearInterval(timer);
      result.missing += total - next;
      ws.close();
      resolve();
    };
    ws.on('open', () => {
      result.opened++;
      let k = 0;
      timer = setInterval(() => {
        if (k >= total) return clearInterval(timer);
        sentAt[k] = performance.now();
        ws.send(`{"type":"conversation.item.create","item":{"type":"message","role":"user","content":[{"type":"input_text","text":"s${i}:${k}:${pad}"}]},"n":${k}}`);
        k++;
        result.sent++;
      }, 1000 / job.rate);
    });
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (!text.startsWith('{"type":"conversation.item.created"')) return;
      const n = Number(/"n":(\d+)/.exec(text)?.[1]);
      if (n !== next) result.outOfOrder++;
      latencies.push(performance.now() - sentAt[n]!);
      next = n + 1;
      result.echoed++;
      if (next === total) finish();
    });
    ws.on('unexpected-response', (_req, res) => {
      result.failed++;
      if (result.errors.length < 5) result.errors.push(`status ${res.statusCode}`);
      resolve();
    });
    ws.on('error', (err) => {
      if (result.errors.length < 5) result.errors.push(err.message);
    });
    ws.on('close', () => {
      if (next < total && result.opened > 0) {
        result.closedEarly++;
        finish();
      }
    });
  });
  await Promise.all(Array.from({ length: job.sessions }, (_, i) => sleep((job.rampMs * i) / job.sessions).then(() => one(i))));
  result.latency = stats(latencies);
  return result;
}

// ---------------------------------------------------------------------------------------------
// The measuring side.
const tsx = (mode: string, ...args: string[]) => ['--import', 'tsx', SELF, mode, ...args];

async function runClients(job: ClientJob): Promise<ClientResult> {
  const proc = nodeWithFds(job.sessions + 100, tsx('client', JSON.stringify(job)), { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  await new Promise((r) => proc.once('exit', r));
  return JSON.parse(out.trim().split('\n').pop()!) as ClientResult;
}

interface PathResult { name: string; clients: ClientResult; peakRssMb: number; cpuPer10kMessages: number; loop?: { p50: number; p99: number; max: number } }

/** Runs the load against one proxy process; samples its RSS and CPU over the run. */
async function measure(name: string, proxy: ChildProcess, job: ClientJob, probe: boolean): Promise<PathResult> {
  const pid = proxy.pid!;
  let peak = memory([pid]).rssMb;
  const sampler = setInterval(() => (peak = Math.max(peak, memory([pid]).rssMb)), 100);
  const cpu0 = cpuSeconds([pid]);
  if (probe) proxy.send({ probe: 'reset' });
  const clients = await runClients(job);
  const cpu = cpuSeconds([pid]) - cpu0;
  clearInterval(sampler);
  let loop: PathResult['loop'];
  if (probe) {
    loop = await new Promise((resolve) => {
      proxy.once('message', (m: { p50: number; p99: number; max: number }) => resolve({ p50: m.p50, p99: m.p99, max: m.max }));
      proxy.send({ probe: 'report' });
    });
  }
  const messages = clients.sent + clients.echoed;
  return { name, clients, peakRssMb: Math.round(peak), cpuPer10kMessages: Math.round((cpu / Math.max(1, messages)) * 1e4 * 1000) / 1000, ...(loop ? { loop } : {}) };
}

async function main(): Promise<void> {
  const sessions = env('BENCH_RT_SESSIONS', 1000);
  const job: Omit<ClientJob, 'url' | 'headers'> = { sessions, rate: env('BENCH_RT_RATE', 10), seconds: env('BENCH_RT_SECONDS', 30), rampMs: env('BENCH_RT_RAMP_MS', 10_000), pad: env('BENCH_RT_PAD', 200) };
  const fds = 2 * sessions + 500;
  const fakeProc = nodeWithFds(fds, tsx('fake'), { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const kill: ChildProcess[] = [fakeProc];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-rt-'));
  try {
    const fakePort = await readyLine(fakeProc, 'fake');
    const port = await freePort();
    mkdirSync(dir, { recursive: true });
    const log = openSync(path.join(dir, 'keyward.log'), 'a');
    const prof = process.env.BENCH_RT_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_RT_PROF)}`] : [];
    const keyward = nodeWithFds(fds, [...KEYWARD_NODE_FLAGS, ...prof, '--import', path.join(LIB, 'loop-probe.mjs'), path.join(ROOT, 'dist/src/main.js')], {
      cwd: dir, env: keywardEnv(dir, port, fakePort), stdio: ['ignore', log, 'inherit', 'ipc'],
    });
    closeSync(log);
    kill.push(keyward);
    await waitFor200(`http://127.0.0.1:${port}/readyz`, 15_000);
    const ptok = await provision(`http://127.0.0.1:${port}`, KEY);
    console.log(`keyward: ${sessions} sessions × ${job.rate} messages/s × ${job.seconds} s (ramp ${job.rampMs} ms)…`);
    const results = [await measure('keyward', keyward, { ...job, url: `ws://127.0.0.1:${port}/v1/proxy/v1/realtime?model=gpt-realtime`, headers: { authorization: `Bearer ${ptok}` } }, true)];
    if (process.env.BENCH_RT_SPLICE !== '0') {
      // The floor gets the same loop probe: on a machine whose cores are busy, it tells Keyward's stalls from the machine's.
      const spliceProc = nodeWithFds(fds, ['--import', path.join(LIB, 'loop-probe.mjs'), ...tsx('splice', String(fakePort))], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
      kill.push(spliceProc);
      const splicePort = await readyLine(spliceProc, 'splice');
      console.log('http-proxy-3 ws() splice (the floor)…');
      results.push(await measure('splice', spliceProc, { ...job, url: `ws://127.0.0.1:${splicePort}/v1/proxy/v1/realtime?model=gpt-realtime`, headers: { 'x-proxy-token': ptok } }, true));
    }
    report(results, job);
  } finally {
    for (const p of kill) p.kill(process.env.BENCH_RT_PROF && p !== fakeProc ? 'SIGINT' : 'SIGKILL');
    if (process.env.BENCH_RT_PROF) await sleep(3000);
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(results: PathResult[], job: Omit<ClientJob, 'url' | 'headers'>): void {
  const expected = job.sessions * job.rate * job.seconds;
  console.log('\n| path | sessions open | messages sent / echoed (of each way) | out of order | peak RSS | loop p50 / p99 / max | echo p50 / p99 | CPU s per 10k messages |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const c = r.clients;
    const loop = r.loop ? `${r.loop.p50} / ${r.loop.p99} / ${r.loop.max} ms` : '–';
    console.log(`| ${r.name} | ${c.opened} of ${job.sessions} | ${c.sent} / ${c.echoed} (of ${expected}) | ${c.outOfOrder} | ${r.peakRssMb} MB | ${loop} | ${c.latency.p50.toFixed(2)} / ${c.latency.p99.toFixed(2)} ms | ${r.cpuPer10kMessages} |`);
  }
  const k = results[0]!;
  const goals = [
    ['every message relayed, in order', k.clients.sent === expected && k.clients.echoed === expected && k.clients.outOfOrder === 0],
    ['peak RSS ≤ 1 GB', k.peakRssMb <= 1024],
    ['event-loop p99 < 50 ms', (k.loop?.p99 ?? Infinity) < 50],
  ] as const;
  console.log('\n| goal | met |\n|---|---|');
  for (const [goal, met] of goals) console.log(`| ${goal} | ${met ? 'yes' : 'NO'} |`);
  const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
  console.log(`\nload average at the end: ${load} (${os.cpus().length} cores)`);
  const out = process.env.BENCH_OUT ?? path.join(BENCH, 'results', `realtime-${new Date().toISOString().slice(0, 10)}.json`);
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() }, job, results }, null, 2) + '\n');
  console.log(`\nwritten to ${path.relative(ROOT, out)}`);
  if (k.clients.errors.length) console.log(`client errors: ${k.clients.errors.join('; ')}`);
}

/** `npm run bench -- realtime`. */
export const run = (): Promise<void> => main();

// The fake provider, the splice floor and the clients are this file run again, each in a process of its own.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [mode, arg] = process.argv.slice(2);
  if (mode === 'fake') fake();
  else if (mode === 'splice') splice(Number(arg));
  else if (mode === 'client') void client(JSON.parse(arg!) as ClientJob).then((r) => console.log(JSON.stringify(r)));
}
