/**
 * The crowd rows of `npm run bench`, each run by its own row in child processes, after the side-by-side phases
 * have stopped their servers, so neither shares the cores with them:
 *   - ten thousand SSE streams opened at 1,000 a second (the soak-10k row, a 10 s ramp): an ordinary request
 *     made meanwhile must answer in < 100 ms; every stream complete and in order
 *   - 1,000 realtime WebSocket sessions × 10 messages a second for 30 s (the realtime row, Keyward only: the
 *     splice floor is `npm run bench -- realtime`'s): every message relayed in order, peak RSS ≤ 1 GB, event-loop
 *     p99 < 50 ms
 * Each row writes its full report where BENCH_OUT says; this reads it back. BENCH_QUICK=1 runs both small (a smoke
 * run: 1,000 streams, 100 sessions); BENCH_CROWD=0 skips them in the whole run.
 *
 * Alone: `npm run bench -- crowd`.
 */
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from '../lib/paths.js';
import { buildReport, writeReport, type Goal } from '../lib/report.js';
import { BENCH, ROOT, nginxVersion } from '../lib/servers.js';
import { QUICK, log } from '../lib/settings.js';

export interface CrowdRow {
  soak10k: {
    streams: number; ratePerS: number; completed: number; outOfOrder: number; peakRssMb: number; cpuUsPerEvent: number;
    loopOpeningMaxMs: number; ordinaryP50Ms: number; ordinaryMaxMs: number; ordinaryOpeningMaxMs: number; directMaxMs: number; met: boolean;
  };
  realtime: {
    sessions: number; rate: number; seconds: number; expected: number; sent: number; echoed: number; outOfOrder: number;
    peakRssMb: number; loopP99Ms: number; echoP50Ms: number; echoP99Ms: number; cpuPer10kMessages: number; met: boolean;
  };
}

/** Runs one row (`bench/run.ts <row>`, dist/ as built) to its end, its progress lines passed to `log`, and returns the JSON it wrote. */
async function runBench(row: string, env: Record<string, string>, out: string, log: (m: string) => void): Promise<any> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(BENCH, 'run.ts'), row], {
    cwd: ROOT, env: { ...process.env, ...env, BENCH_OUT: out, BENCH_BUILD: '0' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  const relay = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) if (line.trim()) log(`  ${row}: ${line}`);
  };
  child.stdout.on('data', relay);
  child.stderr.on('data', relay);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`the ${row} row exited with ${code}`);
  try {
    return JSON.parse(readFileSync(out, 'utf8'));
  } finally {
    rmSync(out, { force: true });
  }
}

export async function crowdRow(tmp: string, quick: boolean, log: (m: string) => void): Promise<CrowdRow> {
  const streams = quick ? 1000 : 10_000;
  const rampMs = quick ? 1000 : 10_000;
  log(`crowd: ${streams} SSE streams opened at ${Math.round(streams / (rampMs / 1000))} a second, an ordinary request each second (the soak-10k row)`);
  const s = await runBench('soak-10k', {
    BENCH_SOAK10K_STREAMS: String(streams), BENCH_SOAK10K_RAMP_MS: String(rampMs), BENCH_SOAK10K_EVENTS: quick ? '10' : '60',
  }, path.join(tmp, 'soak-10k.json'), log);
  const sessions = quick ? 100 : 1000;
  const seconds = quick ? 5 : 30;
  log(`crowd: ${sessions} realtime sessions × 10 messages a second for ${seconds} s (the realtime row, Keyward only)`);
  const r = await runBench('realtime', {
    BENCH_RT_SESSIONS: String(sessions), BENCH_RT_SECONDS: String(seconds), BENCH_RT_RATE: '10', BENCH_RT_RAMP_MS: quick ? '1000' : '10000', BENCH_RT_SPLICE: '0',
  }, path.join(tmp, 'realtime.json'), log);
  const k = r.results[0];
  const expected = r.job.sessions * r.job.rate * r.job.seconds;
  const realtimeMet = k.clients.sent === expected && k.clients.echoed === expected && k.clients.outOfOrder === 0 && k.peakRssMb <= 1024 && (k.loop?.p99 ?? Infinity) < 50;
  return {
    soak10k: {
      streams: s.settings.streams, ratePerS: Math.round(s.settings.streams / (s.settings.rampMs / 1000)), completed: s.streams.completed, outOfOrder: s.streams.outOfOrder,
      peakRssMb: s.keyward.peakRssMb, cpuUsPerEvent: s.keyward.cpuUsPerEvent, loopOpeningMaxMs: s.eventLoopDelayMs.opening.max,
      ordinaryP50Ms: s.ordinaryRequestMs.p50, ordinaryMaxMs: s.ordinaryRequestMs.max, ordinaryOpeningMaxMs: s.ordinaryRequestMs.opening.max,
      directMaxMs: s.directRequestMs.max,
      met: s.targets.ordinaryUnder100ms && s.targets.everyStreamComplete,
    },
    realtime: {
      sessions: r.job.sessions, rate: r.job.rate, seconds: r.job.seconds, expected, sent: k.clients.sent, echoed: k.clients.echoed, outOfOrder: k.clients.outOfOrder,
      peakRssMb: k.peakRssMb, loopP99Ms: k.loop?.p99 ?? NaN, echoP50Ms: k.clients.latency.p50, echoP99Ms: k.clients.latency.p99, cpuPer10kMessages: k.cpuPer10kMessages,
      met: realtimeMet,
    },
  };
}

export function crowdSummary(c: CrowdRow): string {
  const f = (x: number) => x.toFixed(1);
  const s = c.soak10k;
  const r = c.realtime;
  return [
    `Streams opened at ${s.ratePerS} a second (bench/rows/soak-10k.ts, callers over h2c): ${s.completed}/${s.streams} complete (${s.outOfOrder} out of order), peak RSS ${s.peakRssMb} MB, ${s.cpuUsPerEvent} µs CPU per event, event-loop max while they opened ${f(s.loopOpeningMaxMs)} ms; an ordinary request meanwhile p50 ${f(s.ordinaryP50Ms)} ms, max ${f(s.ordinaryMaxMs)} ms (${f(s.ordinaryOpeningMaxMs)} ms while they opened; straight to the fake at the same moments, max ${f(s.directMaxMs)} ms).`,
    '',
    `Realtime (bench/rows/realtime.ts): ${r.sessions} sessions × ${r.rate} messages a second × ${r.seconds} s: ${r.sent}/${r.expected} sent, ${r.echoed} echoed, ${r.outOfOrder} out of order; peak RSS ${r.peakRssMb} MB; event-loop p99 ${f(r.loopP99Ms)} ms; echo p50 / p99 ${r.echoP50Ms.toFixed(2)} / ${r.echoP99Ms.toFixed(2)} ms; ${r.cpuPer10kMessages} CPU s per 10k messages.`,
  ].join('\n');
}

export const crowdTargets = (c: CrowdRow): Goal[] => {
  const s = c.soak10k;
  const r = c.realtime;
  return [
    { target: `${s.streams} streams opened at ${s.ratePerS}/s: every one complete, an ordinary request meanwhile < 100 ms`, value: `${s.completed}/${s.streams}; max ${s.ordinaryMaxMs.toFixed(1)} ms`, met: s.met },
    { target: `realtime ${r.sessions} sessions × ${r.rate} messages/s: all relayed in order, peak RSS ≤ 1 GB, loop p99 < 50 ms`, value: `${r.echoed}/${r.expected}; ${r.peakRssMb} MB; ${r.loopP99Ms.toFixed(1)} ms`, met: r.met },
  ];
};

/** `npm run bench -- crowd`: both crowd rows, one after the other. */
export async function run(): Promise<void> {
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  const s = new Session();
  try {
    const crowd = await crowdRow(s.tmp, QUICK, log);
    const base = buildReport([], new Map(), undefined, nginxVersion(), started, loadAvgStart);
    writeReport({ ...base, crowd, targets: [...base.targets, ...crowdTargets(crowd)] }, [crowdSummary(crowd)], started, 'crowd');
  } finally {
    await s.close();
  }
}
