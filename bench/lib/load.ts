/**
 * The load generator, in its own process: the side-by-side run forks one per path (LoadWorker)
 * (`load.ts --worker`, jobs and results over IPC), so no server shares a
 * process with its load; `load.ts '<job JSON>'` runs one job and prints its
 * result as one JSON line.
 *
 *   c1    sequential requests on one keep-alive connection (latency floor)
 *   rate  open loop at a fixed rate (requests sent on schedule, whatever answers)
 *   ttfb  sequential SSE requests: time to the first body byte
 *   sat   autocannon, N connections, as fast as the path answers
 *   soak  N concurrent SSE streams of E events D ms apart
 *
 * Latencies are measured here with performance.now() (microsecond resolution),
 * from the moment the request is handed to node:http to the response's last
 * byte (or first body byte for ttfb/soak).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';

export interface Target {
  url: string;
  headers: Record<string, string>;
  body: string;
}

export type Job =
  | { mode: 'c1'; target: Target; durationMs: number; warmupMs: number }
  | { mode: 'rate'; target: Target; rate: number; durationMs: number; warmupMs: number }
  | { mode: 'ttfb'; target: Target; events: number; durationMs: number; warmupMs: number }
  | { mode: 'sat'; target: Target; connections: number; durationS: number; warmupS: number }
  | { mode: 'soak'; target: Target; streams: number; events: number; delayMs: number; timeoutMs: number; rampMs: number };

export interface Stats {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LatencyResult { latency: Stats; errors: number; non2xx: number; achievedRate: number; /** Each good request's latency (ms, to the µs), for merging rounds. */ samples: number[] }
export interface TtfbResult { firstByte: Stats; total: Stats; errors: number; non2xx: number; samples: number[] }
export interface SatResult { rps: number; latencyP50: number; latencyP99: number; total: number; errors: number; non2xx: number; timeouts: number }
export interface SoakResult { streams: number; completed: number; failed: number; firstEvent: Stats; streamTime: Stats; wallMs: number }

export function stats(values: number[]): Stats {
  const v = Float64Array.from(values).sort();
  const at = (q: number) => (v.length === 0 ? NaN : v[Math.min(v.length - 1, Math.floor(q * v.length))]!);
  let sum = 0;
  for (const x of v) sum += x;
  return { n: v.length, mean: v.length ? sum / v.length : NaN, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: v.length ? v[v.length - 1]! : NaN };
}

interface Sample {
  status: number;
  totalMs: number;
  firstByteMs: number;
  bytes: number;
  expected: number;
}

function requester(target: Target, agent: http.Agent) {
  const u = new URL(target.url);
  const body = Buffer.from(target.body);
  const base = {
    host: u.hostname,
    port: Number(u.port),
    path: u.pathname + u.search,
    method: 'POST',
    agent,
  };
  const headers = { ...target.headers, 'content-type': 'application/json', 'content-length': String(body.length) };
  const live = new Set<http.ClientRequest>();
  const send = (extra?: Record<string, string>): Promise<Sample> => new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request({ ...base, headers: extra ? { ...headers, ...extra } : headers }, (res) => {
      let first = 0;
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        if (first === 0) first = performance.now();
        bytes += c.length;
      });
      res.on('end', () => {
        live.delete(req);
        const end = performance.now();
        resolve({ status: res.statusCode ?? 0, totalMs: end - t0, firstByteMs: (first || end) - t0, bytes, expected: Number(res.headers['x-bench-bytes'] ?? -1) });
      });
      res.on('error', (err) => {
        live.delete(req);
        reject(err);
      });
    });
    live.add(req);
    req.on('error', (err) => {
      live.delete(req);
      reject(err);
    });
    req.end(body);
  });
  return { send, live };
}

async function sequential(job: { target: Target; durationMs: number; warmupMs: number }, extra?: Record<string, string>): Promise<{ samples: Sample[]; errors: number; rate: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const { send } = requester(job.target, agent);
  const samples: Sample[] = [];
  let errors = 0;
  const warmEnd = performance.now() + job.warmupMs;
  while (performance.now() < warmEnd) await send(extra).catch(() => errors++);
  errors = 0;
  const start = performance.now();
  const end = start + job.durationMs;
  while (performance.now() < end && samples.length < 200_000) {
    try {
      samples.push(await send(extra));
    } catch {
      errors++;
    }
  }
  agent.destroy();
  return { samples, errors, rate: samples.length / ((performance.now() - start) / 1000) };
}

async function paced(job: { target: Target; rate: number; durationMs: number; warmupMs: number }): Promise<LatencyResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const { send } = requester(job.target, agent);
  const run = (durationMs: number) => new Promise<{ samples: Sample[]; errors: number; rate: number }>((resolve) => {
    const total = Math.max(1, Math.round((job.rate * durationMs) / 1000));
    const interval = 1000 / job.rate;
    const samples: Sample[] = [];
    let sent = 0;
    let inflight = 0;
    let errors = 0;
    const start = performance.now();
    const settle = () => {
      inflight--;
      if (sent === total && inflight === 0) resolve({ samples, errors, rate: samples.length / ((performance.now() - start) / 1000) });
    };
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - start) / interval) + 1);
      while (sent < due) {
        sent++;
        inflight++;
        send().then((s) => samples.push(s), () => errors++).finally(settle);
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await run(job.warmupMs);
  const r = await run(job.durationMs);
  agent.destroy();
  return latencyResult(r.samples, r.errors, r.rate);
}

function latencyResult(samples: Sample[], errors: number, rate: number): LatencyResult {
  const ok = samples.filter((s) => s.status >= 200 && s.status < 300);
  const ms = ok.map((s) => Math.round(s.totalMs * 1000) / 1000);
  return { latency: stats(ms), errors, non2xx: samples.length - ok.length, achievedRate: rate, samples: ms };
}

async function saturate(job: Extract<Job, { mode: 'sat' }>): Promise<SatResult> {
  const opts = { url: job.target.url, method: 'POST', headers: { ...job.target.headers, 'content-type': 'application/json' }, body: job.target.body, connections: job.connections, timeout: 10 };
  if (job.warmupS > 0) await autocannon({ ...opts, duration: job.warmupS });
  const r = await autocannon({ ...opts, duration: job.durationS });
  return { rps: r.requests.average, latencyP50: r.latency.p50, latencyP99: r.latency.p99, total: r.requests.total, errors: r.errors, non2xx: r.non2xx, timeouts: r.timeouts };
}

async function soak(job: Extract<Job, { mode: 'soak' }>): Promise<SoakResult> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const { send, live } = requester(job.target, agent);
  const extra = { 'x-bench-sse': `${job.events}:${job.delayMs}` };
  const start = performance.now();
  const timer = setTimeout(() => {
    for (const req of live) req.destroy(new Error('soak timeout'));
  }, job.timeoutMs);
  // Streams start evenly over rampMs (not in one burst: a burst past the listen backlog, 511 by default,
  // would measure SYN retransmission timers rather than the proxy).
  const results = await Promise.allSettled(Array.from({ length: job.streams }, (_, i) =>
    job.rampMs > 0 ? new Promise<Sample>((resolve, reject) => setTimeout(() => send(extra).then(resolve, reject), (i * job.rampMs) / job.streams)) : send(extra)));
  const wallMs = performance.now() - start;
  clearTimeout(timer);
  agent.destroy();
  const done = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const complete = done.filter((s) => s.status === 200 && s.expected > 0 && s.bytes === s.expected);
  return {
    streams: job.streams,
    completed: complete.length,
    failed: job.streams - complete.length,
    firstEvent: stats(done.map((s) => s.firstByteMs)),
    streamTime: stats(complete.map((s) => s.totalMs)),
    wallMs,
  };
}

export async function execute(job: Job): Promise<unknown> {
  let out: unknown;
  switch (job.mode) {
    case 'c1': {
      const r = await sequential(job);
      out = latencyResult(r.samples, r.errors, r.rate);
      break;
    }
    case 'rate':
      out = await paced(job);
      break;
    case 'ttfb': {
      const r = await sequential(job, { 'x-bench-sse': `${job.events}:0` });
      const ok = r.samples.filter((s) => s.status === 200);
      const first = ok.map((s) => Math.round(s.firstByteMs * 1000) / 1000);
      out = { firstByte: stats(first), total: stats(ok.map((s) => s.totalMs)), errors: r.errors, non2xx: r.samples.length - ok.length, samples: first } satisfies TtfbResult;
      break;
    }
    case 'sat':
      out = await saturate(job);
      break;
    case 'soak':
      out = await soak(job);
      break;
    default:
      throw new Error(`unknown job ${JSON.stringify(job)}`);
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--worker') {
    process.on('message', (msg: { id: number; job: Job }) => {
      execute(msg.job).then(
        (out) => process.send!({ id: msg.id, out }),
        (err: unknown) => process.send!({ id: msg.id, error: err instanceof Error ? err.stack : String(err) }),
      );
    });
    process.on('disconnect', () => process.exit(0));
  } else {
    execute(JSON.parse(process.argv[2] ?? '{}') as Job).then((out) => {
      process.stdout.write(JSON.stringify(out) + '\n');
      process.exit(0);
    }, (err: unknown) => {
      process.stderr.write(`load: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
  }
}
