/**
 * The side-by-side run's paths, each server its own process on 127.0.0.1 and each path measured by its own
 * load process (a LoadWorker), started once and measured in rotated rounds (`phase`):
 *   direct   the fake provider itself
 *   bare     a ~20-line node:http proxy (keep-alive agent, one header swapped)
 *   floor    bench/lib/floor-proxy.mjs with every piece Keyward cannot drop (http-proxy-3 as Keyward calls it,
 *            the token hash, the log line, metrics, the masking and usage scan) and none of Keyward's code
 *   nginx    proxy_pass with the key in a header (skipped when not installed)
 *   keyward  `node dist/src/main.js`, embedded default (SQLite + local key), ready for the side rows too
 *            (priced providers, the Entra stub, the fake MCP server)
 * And the session that owns every process and closer a row starts, stopping them in reverse order.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Job, Stats, Target, LatencyResult } from './load.js';
import { stats } from './load.js';
import { LoadWorker, cpuSeconds, nginxVersion, pricedProvidersDir, provision, sleep, startBare, startFloor, startKeyward, startNginx, type Proc } from './servers.js';
import { BODY, D, KEY, log } from './settings.js';
import { federationEnv, mcpEnv, startEntraStub, startMcpServer, type EntraStub, type McpServerProc } from './upstreams.js';

export type PathName = 'direct' | 'bare' | 'floor' | 'nginx' | 'keyward';
/** bench/lib/floor-proxy.mjs's parts: every one (see its header). */
export const FLOOR_PARTS = 'hp3,hash,log,metrics,mask';

export interface Soak {
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

export interface Latency { latency: Stats; errors: number; non2xx: number; achievedRate: number }
export interface Saturation { rps: number; rpsRounds: number[]; latencyP50: number; latencyP99: number; errors: number; non2xx: number; timeouts: number; cpuUsPerRequest: number }

export interface PathResult {
  c1?: Latency;
  rate100?: Latency;
  rate1000?: Latency;
  ttfb?: { firstByte: Stats; errors: number; non2xx: number };
  sat?: Saturation;
  soak?: Soak;
  peakRssMb?: number;
}

export const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};

export function mergeLatency(rs: LatencyResult[]): Latency {
  return {
    latency: stats(rs.flatMap((r) => r.samples)),
    errors: rs.reduce((a, r) => a + r.errors, 0),
    non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
    achievedRate: rs.reduce((a, r) => a + r.achievedRate, 0) / rs.length,
  };
}

/** Every process and closer a row started (stopped in reverse order at the end, or early for the crowd rows), and its temp folder. */
export class Session {
  readonly tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-'));
  readonly procs: Proc[] = [];
  readonly closers: Array<() => void> = [];

  add<P extends Proc>(p: P): P {
    this.procs.push(p);
    return p;
  }

  async stopAll(): Promise<void> {
    for (const c of this.closers.splice(0)) c();
    for (const p of this.procs.splice(0).reverse()) await p.stop().catch(() => {});
  }

  async close(): Promise<void> {
    await this.stopAll();
    rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** What the side rows' Keyward talks to: the fake provider, the Entra stub (federation), the fake MCP server (mcp-call). */
export interface SideUpstreams {
  fake: Proc;
  entra: EntraStub;
  mcp: McpServerProc;
}

export async function startSideUpstreams(s: Session, fake: Proc, o: { mcpJson?: boolean } = {}): Promise<SideUpstreams> {
  const entra = await startEntraStub();
  s.closers.push(() => entra.close());
  const mcp = s.add(await startMcpServer({ json: o.mcpJson ?? true }));
  return { fake, entra, mcp };
}

/**
 * A Keyward ready for every side row (gpt-4o-mini priced, federation and MCP upstreams set), owned by the session.
 * `name` gives it folders of its own (a second Keyward in one session); `main`, another build's entry point.
 */
export async function startSideKeyward(s: Session, up: SideUpstreams, o: { name?: string; main?: string; nodeFlags?: string[]; env?: Record<string, string> } = {}): Promise<Proc & { readyMs: number }> {
  const base = o.name ? path.join(s.tmp, o.name) : s.tmp;
  return s.add(await startKeyward(path.join(base, 'data'), up.fake.port, path.join(base, 'keyward.log'), {
    env: { KEYWARD_PROVIDERS_DIR: pricedProvidersDir(base), ...federationEnv(up.entra.url, up.fake.port), ...mcpEnv(up.mcp.port), ...o.env },
    ...(o.main ? { main: o.main } : {}),
    ...(o.nodeFlags?.length ? { nodeFlags: o.nodeFlags } : {}),
  }));
}

export interface Paths extends SideUpstreams {
  keyward: Proc;
  /** nginx's version, undefined when it is not installed (its path is then left out). */
  nginxV: string | undefined;
  names: PathName[];
  targets: Map<PathName, { target: Target; proc: Proc }>;
  results: Map<PathName, PathResult>;
  workers: Map<PathName, LoadWorker>;
}

/** Starts every path's server but the fake's (given), each path's load worker, and provisions Keyward's token. */
export async function startPaths(s: Session, fake: Proc): Promise<Paths> {
  const { tmp } = s;
  const bare = s.add(await startBare(fake.port, KEY));
  const floor = s.add(await startFloor(fake.port, KEY, FLOOR_PARTS, path.join(tmp, 'floor.log')));
  const nginxV = nginxVersion();
  let nginx: Proc | undefined;
  if (nginxV) {
    nginx = s.add(await startNginx(path.join(tmp, 'nginx'), fake.port, KEY));
  } else {
    log('nginx is not installed: its row is skipped (apt-get install -y nginx to include it)');
  }
  const up = await startSideUpstreams(s, fake);
  const keyward = await startSideKeyward(s, up);
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
  s.closers.push(() => {
    for (const w of workers.values()) w.close();
  });
  return { ...up, keyward, nginxV, names, targets, results, workers };
}

/** One phase: `D.rounds` rounds over every path, rotating the order; `collect` gets each path's per-round outputs. */
export async function phase<T>(p: Paths, label: string, make: (t: Target, round: number) => Job, collect: (r: PathResult, outs: Array<{ out: T; cpuS: number }>) => void): Promise<void> {
  const { names, targets, workers, results } = p;
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
}

/** The warm-up before any measured phase: JIT, caches, keep-alive pools; nothing is kept. */
export const warmUp = (p: Paths): Promise<void> =>
  phase(p, 'warm-up', (target) => ({ mode: 'sat', target, connections: 16, durationS: D.warmupS, warmupS: 0 }), () => {});

function summary(out: any): string {
  if (out.latency) return `p50 ${out.latency.p50.toFixed(3)} ms  p99 ${out.latency.p99.toFixed(3)} ms  (${out.latency.n} req, ${out.achievedRate.toFixed(0)}/s, ${out.errors + out.non2xx} bad)`;
  if (out.firstByte) return `first byte p50 ${out.firstByte.p50.toFixed(3)} ms  (${out.firstByte.n} streams)`;
  if (out.rps !== undefined) return `${out.rps.toFixed(0)} req/s  p99 ${out.latencyP99} ms  (${out.errors + out.non2xx + out.timeouts} bad)`;
  return '';
}
