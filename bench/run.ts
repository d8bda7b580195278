/**
 * `npm run bench`: Keyward against the Node floor and nginx, side by side in
 * one run on this machine. See bench/README.md for what each number means.
 *
 * Paths (each server its own process; each measurement its own load process):
 *   direct   the fake provider itself
 *   bare     a ~20-line node:http proxy (keep-alive agent, one header swapped)
 *   floor    bench/floor-proxy.mjs with every piece Keyward cannot drop (http-proxy-3 as Keyward calls it,
 *            the token hash, the log line, metrics, the masking and usage scan) and none of Keyward's code:
 *            issue 29's yardstick for Keyward's own cost
 *   nginx    proxy_pass with the key in a header (skipped when not installed)
 *   keyward  `node dist/src/main.js`, embedded default (SQLite + local key)
 * and a short spend-budget row (bench/budget.ts): a budgeted token against an
 * unbudgeted one on the same Keyward; and a federation row (bench/federation.ts):
 * a federated Azure credential against a key one, CPU per request.
 *
 * Last, the crowd rows (bench/crowd.ts): 10,000 streams opened at 1,000 a second with an ordinary request
 * made meanwhile, and 1,000 realtime sessions × 10 messages a second, each on processes of its own.
 *
 * BENCH_QUICK=1 shortens every phase (a smoke run, not for numbers); BENCH_CROWD=0 skips the crowd rows.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stats, type Job, type LatencyResult, type SatResult, type SoakResult, type Stats, type Target, type TtfbResult } from './lib/load.js';
import {
  BENCH, LoadWorker, RssSampler, cpuSeconds, memory, nginxVersion, provision, resetPeak, sleep, startBare, startFake, startFloor, startKeyward, startNginx, type Proc,
} from './lib/servers.js';
import { budgetProvidersDir, budgetRow, type BudgetRow } from './budget.js';
import { federationEnv, federationRow, startEntraStub, type FederationRow } from './federation.js';
import { poolRow, type PoolRow } from './pool.js';
import { mcpEnv, mcpRow, mcpSummary, startMcpServer, type McpRow } from './mcp.js';
import { crowdRow, crowdSummary, type CrowdRow } from './crowd.js';

const QUICK = process.env.BENCH_QUICK === '1';
/** Every latency and throughput phase runs in `rounds` rounds, each round visiting every path (in a rotated order), so a machine whose load changes over the run affects every path alike. */
const D = {
  rounds: QUICK ? 1 : 3,
  /** The side rows (budget, federation, pool) compare two ways on one process: their ratios are goals, so more rounds steady the median (a plain token's CPU per request spread 198-214 µs over 3). */
  sideRounds: QUICK ? 1 : 5,
  warmupS: QUICK ? 1 : 2,
  c1Ms: QUICK ? 1000 : 1500,
  rate100Ms: QUICK ? 1000 : 2000,
  rate1000Ms: QUICK ? 1000 : 2000,
  ttfbMs: QUICK ? 500 : 1000,
  satS: QUICK ? 2 : 3,
  satConnections: 64,
  soakStreams: Number(process.env.BENCH_SOAK_STREAMS ?? (QUICK ? 200 : 1000)),
  soakEvents: 200,
  soakDelayMs: 10,
  soakRampMs: 500,
  soakRounds: QUICK ? 1 : 3,
  coldStarts: QUICK ? 2 : 5,
};
const KEY = `sk-bench-${'k'.repeat(40)}`;
const BODY = JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello in one short sentence.' }] });

type PathName = 'direct' | 'bare' | 'floor' | 'nginx' | 'keyward';
/** bench/floor-proxy.mjs's parts: every one (see its header). */
const FLOOR_PARTS = 'hp3,hash,log,metrics,mask';

interface Soak {
  /** Streams per round. */
  streams: number;
  rounds: number;
  /** Over all rounds. */
  completed: number;
  failed: number;
  /** Median over rounds. */
  wallMs: number;
  wallRoundsMs: number[];
  peakRssRoundsMb: number[];
  /** Median of the rounds' p50, highest of their p99. */
  firstEventP50: number;
  firstEventP99: number;
  peakRssMb: number;
}

interface Latency { latency: Stats; errors: number; non2xx: number; achievedRate: number }
interface Saturation { rps: number; rpsRounds: number[]; latencyP50: number; latencyP99: number; errors: number; non2xx: number; timeouts: number; cpuUsPerRequest: number }

interface PathResult {
  c1?: Latency;
  rate100?: Latency;
  rate1000?: Latency;
  ttfb?: { firstByte: Stats; errors: number; non2xx: number };
  sat?: Saturation;
  soak?: Soak;
  peakRssMb?: number;
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

function mergeLatency(rs: LatencyResult[]): Latency {
  return {
    latency: stats(rs.flatMap((r) => r.samples)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
    achievedRate: rs.reduce((a, r) => a + r.achievedRate, 0) / rs.length,
  };
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;
const fmt = (x: number | undefined, digits = 3) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
const added = (s: Stats | undefined, base: Stats | undefined) => s && base ? { p50: s.p50 - base.p50, p90: s.p90 - base.p90, p99: s.p99 - base.p99 } : undefined;

function log(msg: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

async function coldStarts(tmp: string, upstreamPort: number): Promise<{ firstBootMs: number; runsMs: number[]; medianMs: number }> {
  const dataDir = path.join(tmp, 'cold');
  const runs: number[] = [];
  let firstBootMs = 0;
  for (let i = 0; i <= D.coldStarts; i++) {
    const k = await startKeyward(dataDir, upstreamPort, path.join(tmp, 'cold.log'));
    if (i === 0) firstBootMs = k.readyMs; // creates the key file and the database
    else runs.push(k.readyMs);
    await k.stop();
  }
  const sorted = [...runs].sort((a, b) => a - b);
  return { firstBootMs, runsMs: runs.map(r3), medianMs: sorted[Math.floor(sorted.length / 2)]! };
}

async function main(): Promise<void> {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 24) throw new Error(`run through npm (Node 24 from devDependencies), not node ${process.version}`);
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  if (loadAvgStart > os.availableParallelism()) log(`warning: load average ${loadAvgStart.toFixed(1)} on ${os.availableParallelism()} cores: other work is running, absolute numbers will be noisy (ratios less so)`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-'));
  const procs: Proc[] = [];
  const closers: Array<() => void> = [];
  try {
    const fake = await startFake();
    procs.push(fake);
    log(`fake provider on ${fake.port}`);

    log('cold start: spawn → /readyz 200');
    const cold = await coldStarts(tmp, fake.port);
    log(`cold start median ${cold.medianMs.toFixed(0)} ms (first boot ${cold.firstBootMs.toFixed(0)} ms)`);

    const bare = await startBare(fake.port, KEY);
    procs.push(bare);
    const floor = await startFloor(fake.port, KEY, FLOOR_PARTS, path.join(tmp, 'floor.log'));
    procs.push(floor);
    const nginxV = nginxVersion();
    let nginx: Proc | undefined;
    if (nginxV) {
      nginx = await startNginx(path.join(tmp, 'nginx'), fake.port, KEY);
      procs.push(nginx);
    } else {
      log('nginx is not installed: its row is skipped (apt-get install -y nginx to include it)');
    }
    const entra = await startEntraStub();
    closers.push(() => entra.close());
    const mcp = await startMcpServer({ json: true });
    procs.push(mcp);
    const keyward = await startKeyward(path.join(tmp, 'data'), fake.port, path.join(tmp, 'keyward.log'), { env: { KEYWARD_PROVIDERS_DIR: budgetProvidersDir(tmp), ...federationEnv(entra.url, fake.port), ...mcpEnv(mcp.port) } });
    procs.push(keyward);
    const ptok = await provision(`http://127.0.0.1:${keyward.port}`, KEY);

    const targets = new Map<PathName, { target: Target; proc: Proc }>();
    const through = (port: number): Target => ({ url: `http://127.0.0.1:${port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok }, body: BODY });
    targets.set('direct', { target: { url: `http://127.0.0.1:${fake.port}/v1/chat/completions`, headers: { authorization: `Bearer ${KEY}` }, body: BODY }, proc: fake });
    targets.set('bare', { target: through(bare.port), proc: bare });
    targets.set('floor', { target: through(floor.port), proc: floor });
    if (nginx) targets.set('nginx', { target: through(nginx.port), proc: nginx });
    targets.set('keyward', { target: through(keyward.port), proc: keyward });
    const names = [...targets.keys()];
    const results = new Map<PathName, PathResult>(names.map((n) => [n, {}]));
    const workers = new Map<PathName, LoadWorker>(names.map((n) => [n, new LoadWorker(n)]));
    closers.push(() => {
      for (const w of workers.values()) w.close();
    });

    /** One phase: `D.rounds` rounds over every path, rotating the order; `collect` gets each path's per-round outputs. */
    const phase = async <T>(label: string, make: (t: Target, round: number) => Job, collect: (r: PathResult, outs: Array<{ out: T; cpuS: number }>) => void) => {
      const outs = new Map<PathName, Array<{ out: T; cpuS: number }>>(names.map((n) => [n, []]));
      for (let round = 0; round < D.rounds; round++) {
        for (let j = 0; j < names.length; j++) {
          const name = names[(j + round) % names.length]!;
          const { target, proc } = targets.get(name)!;
          const before = cpuSeconds(proc.pids());
          const out = await workers.get(name)!.run<T>(make(target, round));
          outs.get(name)!.push({ out, cpuS: cpuSeconds(proc.pids()) - before });
          log(`${label.padEnd(9)} ${name.padEnd(8)} ${summary(out)}`);
          await sleep(100);
        }
      }
      for (const name of names) collect(results.get(name)!, outs.get(name)!);
    };

    await phase<SatResult>('warm-up', (target) => ({ mode: 'sat', target, connections: 16, durationS: D.warmupS, warmupS: 0 }), () => {});
    await phase<LatencyResult>('c=1', (target) => ({ mode: 'c1', target, durationMs: D.c1Ms, warmupMs: 200 }), (r, o) => (r.c1 = mergeLatency(o.map((x) => x.out))));
    await phase<LatencyResult>('100/s', (target) => ({ mode: 'rate', target, rate: 100, durationMs: D.rate100Ms, warmupMs: 200 }), (r, o) => (r.rate100 = mergeLatency(o.map((x) => x.out))));
    await phase<LatencyResult>('1000/s', (target) => ({ mode: 'rate', target, rate: 1000, durationMs: D.rate1000Ms, warmupMs: 200 }), (r, o) => (r.rate1000 = mergeLatency(o.map((x) => x.out))));
    await phase<TtfbResult>('ttfb', (target) => ({ mode: 'ttfb', target, events: 5, durationMs: D.ttfbMs, warmupMs: 100 }), (r, o) => {
      r.ttfb = { firstByte: stats(o.flatMap((x) => x.out.samples)), errors: o.reduce((a, x) => a + x.out.errors, 0), non2xx: o.reduce((a, x) => a + x.out.non2xx, 0) };
    });
    await phase<SatResult>('saturate', (target, round) => ({ mode: 'sat', target, connections: D.satConnections, durationS: D.satS, warmupS: round === 0 ? 1 : 0 }), (r, o) => {
      const outs = o.map((x) => x.out);
      r.sat = {
        rps: median(outs.map((x) => x.rps)),
        rpsRounds: outs.map((x) => Math.round(x.rps)),
        latencyP50: median(outs.map((x) => x.latencyP50)),
        latencyP99: median(outs.map((x) => x.latencyP99)),
        errors: outs.reduce((a, x) => a + x.errors, 0),
        non2xx: outs.reduce((a, x) => a + x.non2xx, 0),
        timeouts: outs.reduce((a, x) => a + x.timeouts, 0),
        // Round 0 includes a 1 s warm-up whose requests autocannon does not count: leave it out.
        cpuUsPerRequest: median(o.slice(o.length > 1 ? 1 : 0).map((x) => (x.cpuS * 1e6) / x.out.total)),
      };
    });

    const budget = await budgetRow(workers.get('keyward')!, `http://127.0.0.1:${keyward.port}`, KEY, BODY, { rounds: D.sideRounds, c1Ms: D.c1Ms, satS: D.satS, connections: D.satConnections }, log);
    const federation = await federationRow(workers.get('keyward')!, keyward, entra, KEY, BODY, { rounds: D.sideRounds, c1Ms: D.c1Ms, satS: D.satS, connections: D.satConnections }, log);
    const pool = await poolRow(workers.get('keyward')!, keyward, KEY, BODY, { rounds: D.sideRounds, c1Ms: D.c1Ms, satS: D.satS, connections: D.satConnections }, log);
    const mcpCalls = await mcpRow(keyward, mcp, { rounds: D.sideRounds, calls: QUICK ? 100 : 500, warmup: QUICK ? 20 : 100 }, log);

    // VmHWM of the long-lived processes so far.
    const peakBeforeSoak = new Map<PathName, number>(names.map((n) => [n, memory(targets.get(n)!.proc.pids()).hwmMb]));
    // Streaming soak, in rounds like the other phases, each proxy's round on a fresh process of it (the fake, the
    // upstream of all, stays): its peak RSS is then the soak's own, not the garbage and free lists the saturation
    // phases left in a long-lived heap (that process's peak is the whole-run column). Each fresh process is warmed
    // with 1 s of event-stream requests at 8 connections first; VmHWM is reset before the soak and VmRSS sampled too.
    const fresh = async (name: PathName, round: number): Promise<{ target: Target; proc: Proc; stop: () => Promise<void> }> => {
      const kept = targets.get(name)!;
      let proc: Proc;
      let target: Target;
      if (name === 'bare') proc = await startBare(fake.port, KEY);
      else if (name === 'floor') proc = await startFloor(fake.port, KEY, FLOOR_PARTS, path.join(tmp, `floor-soak-${round}.log`));
      else if (name === 'nginx') proc = await startNginx(path.join(tmp, `nginx-soak-${round}`), fake.port, KEY);
      else if (name === 'keyward') proc = await startKeyward(path.join(tmp, `soak-${round}`), fake.port, path.join(tmp, `keyward-soak-${round}.log`));
      else return { ...kept, stop: async () => {} };
      if (name === 'keyward') target = { ...kept.target, url: `http://127.0.0.1:${proc.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': await provision(`http://127.0.0.1:${proc.port}`, KEY) } };
      else target = { ...kept.target, url: `http://127.0.0.1:${proc.port}/v1/proxy/v1/chat/completions` };
      // Warmed on the soak's own kind of response (event streams), so no proxy compiles its streaming path during the soak.
      await workers.get(name)!.run<SatResult>({ mode: 'sat', target: { ...target, headers: { ...target.headers, 'x-bench-sse': `${D.soakEvents}:0` } }, connections: 8, durationS: 1, warmupS: 0 });
      return { target, proc, stop: () => proc.stop() };
    };
    const soaks = new Map<PathName, Array<SoakResult & { peakRssMb: number }>>(names.map((n) => [n, []]));
    for (let round = 0; round < D.soakRounds; round++) {
      for (let j = 0; j < names.length; j++) {
        const name = names[(j + round) % names.length]!;
        const { target, proc, stop } = await fresh(name, round);
        const pids = proc.pids();
        const reset = resetPeak(pids);
        const sampler = new RssSampler([proc]);
        sampler.start();
        const out = await workers.get(name)!.run<SoakResult>({ mode: 'soak', target, streams: D.soakStreams, events: D.soakEvents, delayMs: D.soakDelayMs, timeoutMs: 60_000, rampMs: D.soakRampMs });
        const sampled = sampler.stop().get(proc.name) ?? 0;
        const peak = reset ? Math.max(memory(pids).hwmMb, sampled) : sampled;
        await stop();
        soaks.get(name)!.push({ ...out, peakRssMb: peak });
        log(`soak      ${name.padEnd(8)} ${out.completed}/${out.streams} complete, wall ${(out.wallMs / 1000).toFixed(2)} s, first event p50 ${out.firstEvent.p50.toFixed(1)} ms, peak RSS ${peak.toFixed(0)} MB`);
        await sleep(500);
      }
    }
    for (const name of names) {
      const rs = soaks.get(name)!;
      results.get(name)!.soak = {
        streams: D.soakStreams,
        rounds: rs.length,
        completed: rs.reduce((a, x) => a + x.completed, 0),
        failed: rs.reduce((a, x) => a + x.failed, 0),
        wallMs: median(rs.map((x) => x.wallMs)),
        wallRoundsMs: rs.map((x) => Math.round(x.wallMs)),
        peakRssRoundsMb: rs.map((x) => Math.round(x.peakRssMb)),
        firstEventP50: median(rs.map((x) => x.firstEvent.p50)),
        firstEventP99: Math.max(...rs.map((x) => x.firstEvent.p99)),
        peakRssMb: Math.max(...rs.map((x) => x.peakRssMb)),
      };
    }
    // Peak over the long-lived process's whole run (its saturation phases, not the soaks: those ran on fresh ones).
    for (const name of names) {
      const r = results.get(name)!;
      r.peakRssMb = Math.max(memory(targets.get(name)!.proc.pids()).hwmMb, peakBeforeSoak.get(name) ?? 0);
    }

    // The crowd rows (bench/crowd.ts) run on processes of their own, after every server above has stopped, so the cores are theirs.
    let crowd: CrowdRow | undefined;
    if (process.env.BENCH_CROWD !== '0') {
      for (const c of closers.splice(0)) c();
      for (const p of procs.splice(0).reverse()) await p.stop().catch(() => {});
      crowd = await crowdRow(tmp, QUICK, log);
    }

    const report = { ...buildReport(names, results, cold, nginxV, started, loadAvgStart), budget, federation, pool, mcp: mcpCalls, crowd };
    report.targets.push(
      { target: 'budgeted token throughput ≥ 0.90× an unbudgeted one', value: `${budget.rpsRatio.toFixed(2)}×`, met: budget.rpsRatio >= 0.9 },
      { target: 'tokens_per_minute token throughput ≥ 0.90× an unlimited one', value: `${budget.tpmRpsRatio.toFixed(2)}×`, met: budget.tpmRpsRatio >= 0.9 },
      { target: 'pooled token CPU per request within 10% of a plain token (no member failing)', value: `${pool.cpuRatio.toFixed(2)}×`, met: pool.cpuRatio <= 1.1 },
      { target: 'federated credential CPU per request within 10% of a key credential (steady state)', value: `${federation.cpuRatio.toFixed(2)}×`, met: federation.cpuRatio <= 1.1 },
      { target: 'MCP tools/call through Keyward adds ≤ 1 ms p50 over direct', value: `${mcpCalls.addedP50Ms.toFixed(3)} ms`, met: mcpCalls.met },
    );
    if (crowd) {
      const s = crowd.soak10k;
      const r = crowd.realtime;
      report.targets.push(
        { target: `${s.streams} streams opened at ${s.ratePerS}/s: every one complete, an ordinary request meanwhile < 100 ms`, value: `${s.completed}/${s.streams}; max ${s.ordinaryMaxMs.toFixed(1)} ms`, met: s.met },
        { target: `realtime ${r.sessions} sessions × ${r.rate} messages/s: all relayed in order, peak RSS ≤ 1 GB, loop p99 < 50 ms`, value: `${r.echoed}/${r.expected}; ${r.peakRssMb} MB; ${r.loopP99Ms.toFixed(1)} ms`, met: r.met },
      );
    }
    const out = renderTables(report);
    process.stdout.write(out + '\n');
    const dir = path.join(BENCH, 'results');
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${new Date().toISOString().slice(0, 10)}${QUICK ? '-quick' : ''}.json`);
    writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
    log(`wrote ${path.relative(process.cwd(), file)} (${((Date.now() - started) / 1000).toFixed(0)} s in all)`);
  } finally {
    for (const c of closers) c();
    for (const p of procs.reverse()) await p.stop().catch(() => {});
    rmSync(tmp, { recursive: true, force: true });
  }
}

function summary(out: any): string {
  if (out.latency) return `p50 ${out.latency.p50.toFixed(3)} ms  p99 ${out.latency.p99.toFixed(3)} ms  (${out.latency.n} req, ${out.achievedRate.toFixed(0)}/s, ${out.errors + out.non2xx} bad)`;
  if (out.firstByte) return `first byte p50 ${out.firstByte.p50.toFixed(3)} ms  (${out.firstByte.n} streams)`;
  if (out.rps !== undefined) return `${out.rps.toFixed(0)} req/s  p99 ${out.latencyP99} ms  (${out.errors + out.non2xx + out.timeouts} bad)`;
  return '';
}

interface Report {
  date: string;
  machine: { nproc: number; cpu: string; memGb: number; node: string; nginx: string | null; kernel: string; loadAvgStart: number; loadAvgEnd: number };
  settings: typeof D & { requestBytes: number; keywardLogging: string };
  coldStart: { firstBootMs: number; runsMs: number[]; medianMs: number };
  paths: Record<string, PathResult & {
    added?: { c1?: ReturnType<typeof added>; rate100?: ReturnType<typeof added>; rate1000?: ReturnType<typeof added>; ttfbP50?: number };
    vsBare?: { addedC1P50?: number; rps?: number; soakWall?: number };
    vsNginx?: { addedC1P50?: number; rps?: number; soakWall?: number };
    vsFloor?: { cpu?: number; rps?: number };
  }>;
  targets: Array<{ target: string; value: string; met: boolean | null }>;
  durationS: number;
  budget?: BudgetRow;
  federation?: FederationRow;
  pool?: PoolRow;
  mcp?: McpRow;
  crowd?: CrowdRow;
}

function cpuModel(): string {
  try {
    return /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

function buildReport(names: PathName[], results: Map<PathName, PathResult>, cold: Report['coldStart'], nginxV: string | undefined, started: number, loadAvgStart: number): Report {
  const direct = results.get('direct')!;
  const paths: Report['paths'] = {};
  for (const name of names) {
    const r = results.get(name)!;
    paths[name] = {
      ...r,
      added: {
        c1: added(r.c1?.latency, direct.c1?.latency),
        rate100: added(r.rate100?.latency, direct.rate100?.latency),
        rate1000: added(r.rate1000?.latency, direct.rate1000?.latency),
        ttfbP50: r.ttfb && direct.ttfb ? r.ttfb.firstByte.p50 - direct.ttfb.firstByte.p50 : undefined,
      },
    };
  }
  for (const name of names) {
    const p = paths[name]!;
    for (const [ref, key] of [['bare', 'vsBare'], ['nginx', 'vsNginx']] as const) {
      const b = paths[ref];
      if (!b || name === 'direct') continue;
      p[key] = {
        addedC1P50: ratio(p.added?.c1?.p50, b.added?.c1?.p50),
        rps: ratio(p.sat?.rps, b.sat?.rps),
        soakWall: ratio(p.soak?.wallMs, b.soak?.wallMs),
      };
    }
  }
  for (const name of names) {
    const p = paths[name]!;
    const f = paths.floor;
    if (f && name !== 'direct') p.vsFloor = { cpu: ratio(p.sat?.cpuUsPerRequest, f.sat?.cpuUsPerRequest), rps: ratio(p.sat?.rps, f.sat?.rps) };
  }
  const k = paths.keyward!;
  const targets: Report['targets'] = [];
  const t = (target: string, value: number | undefined, ok: (v: number) => boolean, show: (v: number) => string) =>
    targets.push({ target, value: value === undefined ? 'n/a' : show(value), met: value === undefined ? null : ok(value) });
  // Issue 29's goals (the third performance round); the side rows' goals are added by main().
  t('server CPU per request ≤ 1.10× the floor (bench/floor-proxy.mjs, every piece)', k.vsFloor?.cpu, (v) => v <= 1.1, (v) => `${v.toFixed(2)}×`);
  t('throughput at saturation ≥ 0.90× the floor', k.vsFloor?.rps, (v) => v >= 0.9, (v) => `${v.toFixed(2)}×`);
  t('added p50 latency at c=1 ≤ 1.3× bare Node proxy', k.vsBare?.addedC1P50, (v) => v <= 1.3, (v) => `${v.toFixed(2)}×`);
  t('soak: every stream completes', k.soak?.completed, (v) => v === k.soak!.streams * k.soak!.rounds, (v) => `${v}/${k.soak!.streams * k.soak!.rounds}`);
  // "In each of 3 runs": every round's wall against the bare proxy's in the same round, and every round's peak.
  const soakRoundRatios = k.soak && paths.bare?.soak ? k.soak.wallRoundsMs.map((w, i) => w / paths.bare!.soak!.wallRoundsMs[i]!) : undefined;
  t('soak: wall time ≤ 1.15× bare Node proxy in every round', soakRoundRatios && Math.max(...soakRoundRatios), (v) => v <= 1.15, () => soakRoundRatios!.map((x) => `${x.toFixed(2)}×`).join(', '));
  t('soak: peak RSS ≤ 250 MB in every round', k.soak && Math.max(...k.soak.peakRssRoundsMb), (v) => v <= 250, () => k.soak!.peakRssRoundsMb.map((x) => `${x} MB`).join(', '));
  t('cold start to ready ≤ 300 ms (median)', cold.medianMs, (v) => v <= 300, (v) => `${v.toFixed(0)} ms`);
  return {
    date: new Date().toISOString(),
    machine: { nproc: os.availableParallelism(), cpu: cpuModel(), memGb: Math.round(os.totalmem() / 2 ** 30), node: process.version, nginx: nginxV ?? null, kernel: os.release(), loadAvgStart, loadAvgEnd: os.loadavg()[0]! },
    settings: { ...D, requestBytes: Buffer.byteLength(BODY), keywardLogging: 'info (one JSON line per request, to a file)' },
    coldStart: cold,
    paths,
    targets,
    durationS: Math.round((Date.now() - started) / 1000),
  };
}

function renderTables(r: Report): string {
  const names = Object.keys(r.paths);
  const lines: string[] = [];
  const row = (cells: Array<string | number>) => lines.push(`| ${cells.join(' | ')} |`);
  const ms = (x: number | undefined) => fmt(x, 3);
  const x2 = (x: number | undefined) => (x === undefined ? '–' : `${x.toFixed(2)}×`);

  lines.push(`Machine: ${r.machine.nproc} cores, ${r.machine.cpu}, ${r.machine.memGb} GB; Node ${r.machine.node}; nginx ${r.machine.nginx ?? 'not installed (row skipped)'}; load average ${r.machine.loadAvgStart.toFixed(1)} → ${r.machine.loadAvgEnd.toFixed(1)}`);
  lines.push(`Each latency/throughput phase: ${r.settings.rounds} rounds per path, interleaved (c=1 ${r.settings.c1Ms / 1000} s, 100/s ${r.settings.rate100Ms / 1000} s, 1,000/s ${r.settings.rate1000Ms / 1000} s, first SSE byte ${r.settings.ttfbMs / 1000} s, saturation ${r.settings.satS} s per round).`);
  lines.push('');
  lines.push('Added latency over direct, JSON chat completion (ms; p50 / p90 / p99):');
  lines.push('');
  row(['path', 'c=1', '100 req/s', '1,000 req/s', 'added p50 c=1 ×bare', '×nginx']);
  row(['---', '---', '---', '---', '---', '---']);
  for (const n of names) {
    const p = r.paths[n]!;
    const a = (s: { p50: number; p90: number; p99: number } | undefined, abs?: Stats) =>
      n === 'direct' ? (abs ? `(${ms(abs.p50)} / ${ms(abs.p90)} / ${ms(abs.p99)} abs.)` : '–') : s ? `${ms(s.p50)} / ${ms(s.p90)} / ${ms(s.p99)}` : '–';
    row([n, a(p.added?.c1, p.c1?.latency), a(p.added?.rate100, p.rate100?.latency), a(p.added?.rate1000, p.rate1000?.latency), x2(p.vsBare?.addedC1P50), x2(p.vsNginx?.addedC1P50)]);
  }
  lines.push('');
  lines.push(`Saturation (${r.settings.satConnections} connections, median of ${r.settings.rounds} rounds), first SSE byte, memory (peak RSS of the long-lived process over every phase but the soak):`);
  lines.push('');
  row(['path', 'req/s', '×bare', '×floor', '×nginx', 'server CPU µs/req', 'CPU ×floor', 'p99 ms at saturation', 'added first SSE byte p50 ms', 'peak RSS MB']);
  row(['---', '---', '---', '---', '---', '---', '---', '---', '---', '---']);
  for (const n of names) {
    const p = r.paths[n]!;
    row([n, fmt(p.sat?.rps, 0), x2(p.vsBare?.rps), x2(p.vsFloor?.rps), x2(p.vsNginx?.rps), fmt(p.sat?.cpuUsPerRequest, 0), x2(p.vsFloor?.cpu), fmt(p.sat?.latencyP99, 0), n === 'direct' ? `(${ms(p.ttfb?.firstByte.p50)} abs.)` : ms(p.added?.ttfbP50), fmt(p.peakRssMb, 0)]);
  }
  lines.push('');
  lines.push(`Streaming soak: ${r.settings.soakStreams} concurrent SSE streams × ${r.settings.soakEvents} events ${r.settings.soakDelayMs} ms apart, started evenly over ${r.settings.soakRampMs} ms (ideal wall ≈ ${((r.settings.soakRampMs + (r.settings.soakEvents - 1) * r.settings.soakDelayMs) / 1000).toFixed(2)} s); ${r.settings.soakRounds} rounds, each proxy's on a fresh process of it (warmed 1 s on event streams), median wall, peak RSS of the worst round:`);
  lines.push('');
  row(['path', 'completed', 'first event p50 / p99 ms', 'wall s (rounds)', 'wall ×bare', '×nginx', 'peak RSS MB']);
  row(['---', '---', '---', '---', '---', '---', '---']);
  for (const n of names) {
    const s = r.paths[n]!.soak;
    const p = r.paths[n]!;
    row([n, s ? `${s.completed}/${s.streams * s.rounds}` : '–', s ? `${fmt(s.firstEventP50, 0)} / ${fmt(s.firstEventP99, 0)}` : '–', s ? `${fmt(s.wallMs / 1000, 2)} (${s.wallRoundsMs.map((x) => (x / 1000).toFixed(2)).join(', ')})` : '–', x2(p.vsBare?.soakWall), x2(p.vsNginx?.soakWall), fmt(s?.peakRssMb, 0)]);
  }
  lines.push('');
  if (r.federation) {
    const f = r.federation;
    lines.push(`Federated credential (same Keyward, Azure OpenAI, same body; median of ${r.settings.sideRounds} rounds): key credential ${fmt(f.static.p50, 3)} ms c=1 p50, ${fmt(f.static.rps, 0)} req/s, ${fmt(f.static.cpuUsPerRequest, 0)} µs CPU/request; federated ${fmt(f.federated.p50, 3)} ms, ${fmt(f.federated.rps, 0)} req/s, ${fmt(f.federated.cpuUsPerRequest, 0)} µs CPU/request (${f.cpuRatio.toFixed(2)}× CPU); ${f.mints} Entra grant${f.mints === 1 ? '' : 's'} for all of its requests.`);
    lines.push('');
  }
  if (r.pool) {
    const p = r.pool;
    lines.push(`Pooled token (same Keyward, same body, a round-robin pool of three healthy OpenAI keys; median of ${r.settings.sideRounds} rounds): plain ${fmt(p.plain.p50, 3)} ms c=1 p50, ${fmt(p.plain.rps, 0)} req/s, ${fmt(p.plain.cpuUsPerRequest, 0)} µs CPU/request; pooled ${fmt(p.pooled.p50, 3)} ms, ${fmt(p.pooled.rps, 0)} req/s, ${fmt(p.pooled.cpuUsPerRequest, 0)} µs CPU/request (${p.cpuRatio.toFixed(2)}× CPU).`);
    lines.push('');
  }
  if (r.budget) {
    const b = r.budget;
    lines.push(`Spend budget (same Keyward, same body; c=1 p50 and saturation req/s, median of ${r.settings.sideRounds} rounds): unbudgeted ${fmt(b.plain.p50, 3)} ms, ${fmt(b.plain.rps, 0)} req/s; models-scoped (body read first) ${fmt(b.scoped.p50, 3)} ms, ${fmt(b.scoped.rps, 0)} req/s; budgeted ${fmt(b.budgeted.p50, 3)} ms (+${fmt(b.addedP50Ms, 3)} ms), ${fmt(b.budgeted.rps, 0)} req/s (${b.rpsRatio.toFixed(2)}×); tokens_per_minute ${fmt(b.tpm.p50, 3)} ms, ${fmt(b.tpm.rps, 0)} req/s (${b.tpmRpsRatio.toFixed(2)}×).`);
    lines.push('');
  }
  if (r.mcp) {
    lines.push(mcpSummary(r.mcp));
    lines.push('');
  }
  if (r.crowd) {
    lines.push(crowdSummary(r.crowd));
    lines.push('');
  }
  lines.push(`Cold start (spawn \`node dist/src/main.js\` → /readyz 200, embedded default): median ${r.coldStart.medianMs.toFixed(0)} ms of ${r.coldStart.runsMs.length} (${r.coldStart.runsMs.map((x) => x.toFixed(0)).join(', ')}); first boot on an empty data dir ${r.coldStart.firstBootMs.toFixed(0)} ms.`);
  lines.push('');
  lines.push('Targets:');
  lines.push('');
  row(['target', 'Keyward', 'met']);
  row(['---', '---', '---']);
  for (const t of r.targets) row([t.target, t.value, t.met === null ? 'n/a' : t.met ? 'yes' : 'NO']);
  return lines.join('\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
