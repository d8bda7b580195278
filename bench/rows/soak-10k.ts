/**
 * The soak-10k row, `npm run bench -- soak-10k`: ten thousand concurrent SSE streams through one
 * Keyward process (`node dist/src/main.js`, embedded default, default plugins),
 * one event a second for 60 s each, against a fake provider that numbers its
 * events. Prints, and writes to bench/results/soak-10k-<date>.json:
 *   - completeness and order: every stream 200, every event once and in order, then [DONE]
 *   - Keyward's peak RSS (VmHWM) and peak open file descriptors (/proc/<pid>/fd)
 *   - the event loop's delay inside Keyward (perf_hooks.monitorEventLoopDelay, from the
 *     bench-only preload bench/lib/loop-probe.mjs, reported over IPC): p50 / p99 / max
 *   - an ordinary (JSON) request through Keyward every second during the soak: p50 / max, and beside it,
 *     sent at the same moment, the same request straight to the fake on a new connection: the yardstick
 *     that tells a stall of Keyward's from one of the fake's or of the shared cores'
 *
 * Every process is its own (fake, Keyward, stream client; this one measures). Each is
 * started under `ulimit -n` raised to what it needs (up to the hard limit). An HTTP/1.1
 * stream holds two descriptors in Keyward (the caller's socket and the upstream one):
 * 10,000 streams need ~20,050. Where the hard limit is lower, the callers come over
 * cleartext HTTP/2 (100 streams per connection, Keyward's limit) and the run says so;
 * BENCH_SOAK10K_H2=0 or 1 forces the choice.
 *
 *   BENCH_SOAK10K_STREAMS (10000), BENCH_SOAK10K_EVENTS (60), BENCH_SOAK10K_INTERVAL_MS (1000),
 *   BENCH_SOAK10K_RAMP_MS (20000: streams start evenly over this, 500 a second), BENCH_MAIN (another build's main.js),
 *   BENCH_SOAK10K_PROF=<dir> (Keyward runs with --cpu-prof, the profile written there),
 *   BENCH_SOAK10K_FLAGS (more Node flags for Keyward, space-separated, e.g. --trace-gc), BENCH_SOAK10K_KEEP=1 (keep the
 *   temporary folder, Keyward's stdout in keyward.log, and print where it is), BENCH_OUT=<file> (the report goes there
 *   instead: the crowd row, bench/rows/crowd.ts, runs this row so)
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stats, type Stats } from '../lib/load.js';
import { BENCH, KEYWARD_NODE_FLAGS, LIB, ROOT, cpuSeconds, freePort, keywardEnv, memory, nodeWithFds, provision, readyLine, sleep, waitFor200 } from '../lib/servers.js';

const SELF = fileURLToPath(import.meta.url);
const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Count slowly.' }] });
/** Keyward's HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS (src/http/h2c.ts). */
const H2_STREAMS_PER_SESSION = 100;

interface ClientJob { url: string; ptok: string; streams: number; events: number; intervalMs: number; rampMs: number; h2: boolean; timeoutMs: number }
interface ClientResult { streams: number; completed: number; outOfOrder: number; missing: number; failed: number; errors: string[]; firstEvent: Stats; eventsReceived: number; wallMs: number }

// ---------------------------------------------------------------------------------------------
// The fake provider: POST with `x-soak-events: N:MS` → N numbered SSE events MS ms apart (the
// first at once), then usage and [DONE]; anything else → a small JSON chat completion.
function fake(): void {
  const JSON_BODY = Buffer.from(JSON.stringify({ id: 'chatcmpl-soak', object: 'chat.completion', model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }));
  const event = (seq: number) => `data: {"id":"chatcmpl-soak","object":"chat.completion.chunk","seq":${seq},"choices":[{"index":0,"delta":{"content":" hello"},"finish_reason":null}]}\n\n`;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const spec = req.headers['x-soak-events'];
      if (typeof spec !== 'string') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(JSON_BODY.length) });
        res.end(JSON_BODY);
        return;
      }
      const [n, ms] = spec.split(':').map(Number) as [number, number];
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      let seq = 0;
      const next = (): void => {
        if (res.destroyed) return;
        res.write(event(seq++));
        if (seq < n) setTimeout(next, ms);
        else res.end('data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":60,"total_tokens":65}}\n\ndata: [DONE]\n\n');
      };
      next();
    });
  });
  server.keepAliveTimeout = 120_000;
  server.listen(0, '127.0.0.1', 8192, () => process.stdout.write(`ready ${(server.address() as { port: number }).port}\n`));
  process.on('SIGTERM', () => process.exit(0));
}

// ---------------------------------------------------------------------------------------------
// The stream client: opens every stream (evenly over the ramp), checks each event's number.
interface StreamCheck { status: number; next: number; done: boolean; outOfOrder: boolean; firstAt: number; buf: string }

function checkChunk(s: StreamCheck, chunk: string, onEvent: () => void): void {
  s.buf += chunk;
  for (let end = s.buf.indexOf('\n\n'); end !== -1; end = s.buf.indexOf('\n\n')) {
    const ev = s.buf.slice(0, end);
    s.buf = s.buf.slice(end + 2);
    if (ev === 'data: [DONE]') {
      s.done = true;
      continue;
    }
    const m = /"seq":(\d+)/.exec(ev);
    if (!m) continue; // the usage event
    onEvent();
    if (Number(m[1]) !== s.next || s.done) s.outOfOrder = true;
    s.next++;
  }
}

async function client(job: ClientJob): Promise<ClientResult> {
  const u = new URL(job.url);
  const body = Buffer.from(BODY);
  const errors = new Map<string, number>();
  const fail = (e: Error) => errors.set(e.message.slice(0, 80), (errors.get(e.message.slice(0, 80)) ?? 0) + 1);
  let events = 0;
  const sessions: http2.ClientHttp2Session[] = [];
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const open = (i: number, t0: number): Promise<StreamCheck> => new Promise((resolve) => {
    const s: StreamCheck = { status: 0, next: 0, done: false, outOfOrder: false, firstAt: 0, buf: '' };
    const onData = (c: Buffer) => {
      if (s.firstAt === 0) s.firstAt = performance.now() - t0;
      checkChunk(s, c.toString('utf8'), () => events++);
    };
    const timer = setTimeout(() => resolve(s), job.timeoutMs);
    const finish = () => {
      clearTimeout(timer);
      resolve(s);
    };
    if (job.h2) {
      const session = sessions[Math.floor(i / H2_STREAMS_PER_SESSION)]!;
      const st = session.request({ ':method': 'POST', ':path': u.pathname, 'x-proxy-token': job.ptok, 'content-type': 'application/json', 'content-length': String(body.length), 'x-soak-events': `${job.events}:${job.intervalMs}` });
      st.on('response', (h) => (s.status = Number(h[':status'])));
      st.on('data', onData);
      st.on('end', finish);
      st.on('error', (e) => {
        fail(e);
        finish();
      });
      st.end(body);
    } else {
      const req = http.request({ host: u.hostname, port: Number(u.port), path: u.pathname, method: 'POST', agent, headers: { 'x-proxy-token': job.ptok, 'content-type': 'application/json', 'content-length': String(body.length), 'x-soak-events': `${job.events}:${job.intervalMs}` } }, (res) => {
        s.status = res.statusCode ?? 0;
        res.on('data', onData);
        res.on('end', finish);
        res.on('error', (e) => {
          fail(e);
          finish();
        });
      });
      req.on('error', (e) => {
        fail(e);
        finish();
      });
      req.end(body);
    }
  });
  if (job.h2) {
    for (let i = 0; i < Math.ceil(job.streams / H2_STREAMS_PER_SESSION); i++) {
      const session = http2.connect(`http://${u.host}`);
      session.on('error', fail);
      await new Promise<void>((r) => session.once('connect', () => r()));
      sessions.push(session);
    }
  }
  const start = performance.now();
  const results = await Promise.all(Array.from({ length: job.streams }, (_, i) => new Promise<StreamCheck>((resolve) => {
    setTimeout(() => void open(i, performance.now()).then(resolve), (i * job.rampMs) / job.streams);
  })));
  const wallMs = performance.now() - start;
  for (const s of sessions) s.close();
  agent.destroy();
  const complete = results.filter((s) => s.status === 200 && s.done && !s.outOfOrder && s.next === job.events);
  return {
    streams: job.streams,
    completed: complete.length,
    outOfOrder: results.filter((s) => s.outOfOrder).length,
    missing: results.filter((s) => !s.outOfOrder && s.next !== job.events).length,
    failed: job.streams - complete.length,
    errors: [...errors].map(([m, n]) => `${n}× ${m}`),
    firstEvent: stats(results.filter((s) => s.firstAt > 0).map((s) => s.firstAt)),
    eventsReceived: events,
    wallMs,
  };
}

// ---------------------------------------------------------------------------------------------
// The measuring side.
function hardFdLimit(): number {
  const r = spawnSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' });
  const v = r.stdout.trim();
  return v === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(v);
}

const fdCount = (pid: number): number => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

function ask<T>(proc: ChildProcess, msg: object, key: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: Record<string, unknown>) => {
      if (m?.[key] === undefined) return;
      proc.off('message', on);
      resolve(m as T);
    };
    proc.on('message', on);
    proc.send(msg);
  });
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
  await new Promise((r) => proc.once('exit', r));
  clearTimeout(t);
}

async function measure(): Promise<void> {
  const streams = Number(process.env.BENCH_SOAK10K_STREAMS ?? 10_000);
  const events = Number(process.env.BENCH_SOAK10K_EVENTS ?? 60);
  const intervalMs = Number(process.env.BENCH_SOAK10K_INTERVAL_MS ?? 1000);
  const rampMs = Number(process.env.BENCH_SOAK10K_RAMP_MS ?? 20_000);
  const hard = hardFdLimit();
  const slack = 200;
  const h1Need = 2 * streams + slack;
  const h2 = process.env.BENCH_SOAK10K_H2 === '1' || (process.env.BENCH_SOAK10K_H2 !== '0' && h1Need > hard);
  const keywardFds = Math.min(hard, h2 ? streams + Math.ceil(streams / H2_STREAMS_PER_SESSION) + slack : h1Need);
  const log = (m: string) => process.stderr.write(`[soak10k ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
  log(`${streams} streams × ${events} events ${intervalMs} ms apart, started over ${rampMs} ms; fd hard limit ${hard}; HTTP/1.1 callers need ${h1Need} fds in Keyward`);
  if (h2 && h1Need > hard) log(`the hard limit is below that: callers come over cleartext HTTP/2 (${H2_STREAMS_PER_SESSION} streams per connection) so Keyward holds one descriptor per stream`);

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-soak10k-'));
  const children: ChildProcess[] = [];
  try {
    const fakeProc = nodeWithFds(Math.min(hard, streams + slack), ['--import', 'tsx', SELF, '--fake'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(fakeProc);
    const fakePort = await readyLine(fakeProc, 'fake');

    const port = await freePort();
    const dataDir = path.join(tmp, 'data');
    mkdirSync(dataDir);
    const out = openSync(path.join(tmp, 'keyward.log'), 'a');
    const main = process.env.BENCH_MAIN ? path.resolve(process.env.BENCH_MAIN) : path.join(ROOT, 'dist/src/main.js');
    const prof = process.env.BENCH_SOAK10K_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.BENCH_SOAK10K_PROF)}`] : [];
    const extraFlags = (process.env.BENCH_SOAK10K_FLAGS ?? '').split(' ').filter(Boolean);
    const keyward = nodeWithFds(keywardFds, [...KEYWARD_NODE_FLAGS, ...extraFlags, ...prof, '--import', path.join(LIB, 'loop-probe.mjs'), main], {
      cwd: dataDir, env: keywardEnv(dataDir, port, fakePort), stdio: ['ignore', out, 'inherit', 'ipc'],
    });
    closeSync(out);
    children.push(keyward);
    await waitFor200(`http://127.0.0.1:${port}/readyz`, 20_000, 20);
    const base = `http://127.0.0.1:${port}`;
    const ptok = await provision(base, KEY);
    const pid = keyward.pid!;
    log(`Keyward pid ${pid} on ${port} (${fdCount(pid)} fds open at rest, soft limit ${keywardFds})`);

    // An ordinary request every second, on its own keep-alive connection.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    // (direct: a new connection each time, as Keyward's upstream request may need one while the streams take the pool's)
    const ordinary = (direct = false): Promise<number> => new Promise((resolve, reject) => {
      const t0 = performance.now();
      const url = direct ? `http://127.0.0.1:${fakePort}/v1/chat/completions` : `${base}/v1/proxy/v1/chat/completions`;
      const req = http.request(url, { method: 'POST', agent: direct ? false : agent, headers: { 'x-proxy-token': ptok, 'content-type': 'application/json' } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }));
    });
    for (let i = 0; i < 20; i++) await Promise.all([ordinary(), ordinary(true)]); // warm

    const clientProc = nodeWithFds(Math.min(hard, streams + slack), ['--import', 'tsx', SELF, '--client'], { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    children.push(clientProc);
    const cpu0 = cpuSeconds([pid]);
    writeFileSync(`/proc/${pid}/clear_refs`, '5'); // VmHWM from here
    keyward.send({ probe: 'reset' });
    const job: ClientJob = { url: `${base}/v1/proxy/v1/chat/completions`, ptok, streams, events, intervalMs, rampMs, h2, timeoutMs: rampMs + events * intervalMs + 60_000 };
    const resultP = ask<{ result: ClientResult }>(clientProc, { job }, 'result');
    let running = true;
    const samples = { rssMb: 0, fds: 0 };
    const ordinaryMs: number[] = [];
    const ordinaryAt: Array<{ at: number; ms: number }> = [];
    const directAt: Array<{ at: number; ms: number }> = [];
    let ordinaryFailed = 0;
    const sampler = (async () => {
      let lastLog = 0;
      while (running) {
        samples.fds = Math.max(samples.fds, fdCount(pid));
        samples.rssMb = Math.max(samples.rssMb, memory([pid]).rssMb);
        try {
          const at = performance.now(); // by when it was sent
          const [ms, directMs] = await Promise.all([ordinary(), ordinary(true).catch(() => NaN)]);
          ordinaryMs.push(ms);
          ordinaryAt.push({ at, ms });
          if (!Number.isNaN(directMs)) directAt.push({ at, ms: directMs });
        } catch {
          ordinaryFailed++;
        }
        if (performance.now() - lastLog > 10_000) {
          lastLog = performance.now();
          log(`fds ${fdCount(pid)}, RSS ${memory([pid]).rssMb.toFixed(0)} MB, last ordinary request ${ordinaryMs.at(-1)?.toFixed(1)} ms`);
        }
        await sleep(1000);
      }
    })();
    // The delay while streams are being opened, and after (every stream open, then ending), apart.
    type Delay = { p50: number; p99: number; max: number; mean: number; count: number };
    const rampEnd = performance.now() + rampMs + 2000;
    const rampLoopP = sleep(rampMs + 2000).then(() => ask<Delay>(keyward, { probe: 'mark' }, 'probe'));
    const { result } = await resultP;
    running = false;
    await sampler;
    const rampLoop = await rampLoopP;
    const loop = await ask<Delay & { window: Delay }>(keyward, { probe: 'report' }, 'probe');
    const ordinaryRamp = stats(ordinaryAt.filter((x) => x.at < rampEnd).map((x) => x.ms));
    const ordinaryAfter = stats(ordinaryAt.filter((x) => x.at >= rampEnd).map((x) => x.ms));
    const cpuS = cpuSeconds([pid]) - cpu0;
    const peakRssMb = Math.max(memory([pid]).hwmMb, samples.rssMb);
    const ord = stats(ordinaryMs);
    const direct = stats(directAt.map((x) => x.ms));
    const directRamp = stats(directAt.filter((x) => x.at < rampEnd).map((x) => x.ms));
    const directAfter = stats(directAt.filter((x) => x.at >= rampEnd).map((x) => x.ms));
    const report = {
      date: new Date().toISOString(),
      machine: { nproc: os.availableParallelism(), memGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, loadAvgEnd: os.loadavg()[0] },
      settings: { streams, events, intervalMs, rampMs, callers: h2 ? 'h2c' : 'http/1.1', fdHardLimit: hard, keywardFdLimit: keywardFds },
      streams: result,
      keyward: { peakRssMb: Math.round(peakRssMb), peakFds: samples.fds, cpuS: Math.round(cpuS * 100) / 100, cpuUsPerEvent: Math.round((cpuS * 1e6) / Math.max(1, result.eventsReceived)) },
      eventLoopDelayMs: { whole: { p50: loop.p50, p99: loop.p99, max: loop.max, mean: loop.mean, count: loop.count }, opening: rampLoop, afterOpening: loop.window },
      ordinaryRequestMs: { n: ord.n, p50: ord.p50, p99: ord.p99, max: ord.max, failed: ordinaryFailed, opening: { n: ordinaryRamp.n, p50: ordinaryRamp.p50, max: ordinaryRamp.max }, afterOpening: { n: ordinaryAfter.n, p50: ordinaryAfter.p50, max: ordinaryAfter.max } },
      // The same request straight to the fake, sent at the same moment: what the machine and the fake alone cost it.
      directRequestMs: { n: direct.n, p50: direct.p50, max: direct.max, opening: { n: directRamp.n, p50: directRamp.p50, max: directRamp.max }, afterOpening: { n: directAfter.n, p50: directAfter.p50, max: directAfter.max } },
      targets: {
        everyStreamComplete: result.completed === streams,
        peakRssUnder1GB: peakRssMb <= 1024,
        loopP99Under50ms: loop.p99 < 50,
        ordinaryUnder100ms: ord.max < 100 && ordinaryFailed === 0,
      },
    };
    const f = (x: number) => x.toFixed(1);
    process.stdout.write([
      `${streams} concurrent SSE streams (${h2 ? 'callers over h2c' : 'callers over HTTP/1.1'}), ${events} events ${intervalMs} ms apart, started over ${rampMs / 1000} s; load average ${os.loadavg()[0]!.toFixed(1)} on ${os.availableParallelism()} cores`,
      '',
      '| measure | value | target |',
      '|---|---|---|',
      `| streams complete, every event in order | ${result.completed}/${streams} (out of order ${result.outOfOrder}, short ${result.missing}) | all |`,
      `| events relayed | ${result.eventsReceived} | ${streams * events} |`,
      `| wall | ${f(result.wallMs / 1000)} s | ≈ ${f((rampMs + (events - 1) * intervalMs) / 1000)} s |`,
      `| first event p50 / p99 | ${f(result.firstEvent.p50)} / ${f(result.firstEvent.p99)} ms | |`,
      `| Keyward peak RSS | ${report.keyward.peakRssMb} MB | ≤ 1024 MB |`,
      `| Keyward peak open fds | ${samples.fds} | |`,
      `| event-loop delay p50 / p99 / max | ${f(loop.p50)} / ${f(loop.p99)} / ${f(loop.max)} ms | p99 < 50 ms |`,
      `| … while the streams open (first ${f((rampMs + 2000) / 1000)} s) / after | p99 ${f(rampLoop.p99)}, max ${f(rampLoop.max)} / p99 ${f(loop.window.p99)}, max ${f(loop.window.max)} ms | |`,
      `| ordinary request during the soak p50 / max (${ord.n}) | ${f(ord.p50)} / ${f(ord.max)} ms${ordinaryFailed ? `, ${ordinaryFailed} failed` : ''} | < 100 ms |`,
      `| … while the streams open / after: max | ${f(ordinaryRamp.max)} / ${f(ordinaryAfter.max)} ms | |`,
      `| the same request straight to the fake (new connection), same moments: p50 / max; max while open / after | ${f(direct.p50)} / ${f(direct.max)}; ${f(directRamp.max)} / ${f(directAfter.max)} ms | |`,
      `| Keyward CPU | ${f(cpuS)} s (${report.keyward.cpuUsPerEvent} µs per event) | |`,
      ...(result.errors.length ? ['', `client errors: ${result.errors.join('; ')}`] : []),
    ].join('\n') + '\n');
    const file = process.env.BENCH_OUT ?? path.join(BENCH, 'results', `soak-10k-${report.date.slice(0, 10)}${h2 ? '-h2c' : ''}${streams !== 10_000 ? `-${streams}` : ''}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    log(`wrote ${path.relative(ROOT, file)}`);
  } finally {
    for (const c of children.reverse()) await stop(c).catch(() => {});
    if (process.env.BENCH_SOAK10K_KEEP === '1') log(`kept ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

/** `npm run bench -- soak-10k`. */
export const run = (): Promise<void> => measure();

// The fake provider and the stream client are this file run again, each in a process of its own.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes('--fake')) fake();
  else if (process.argv.includes('--client')) {
    process.on('message', (m: { job?: ClientJob }) => {
      if (m.job) void client(m.job).then((result) => {
        process.send!({ result });
        process.disconnect();
      });
    });
  }
}
