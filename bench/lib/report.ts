/**
 * The bench's report: the side-by-side paths' numbers against the direct path, the bare proxy, the floor and
 * nginx, the targets they are held to, the Markdown tables printed at the end, and the JSON written to
 * bench/results/<date>.json (`<date>-<row>.json` for a row run alone; `-quick` for a BENCH_QUICK run, not committed).
 * A row run alone fills part of it: a table with no numbers is left out, and so is a target it has no value for.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Stats } from './load.js';
import type { PathName, PathResult } from './paths.js';
import { BENCH } from './servers.js';
import { BODY, D, QUICK, log } from './settings.js';

export const r3 = (x: number) => Math.round(x * 1000) / 1000;
export const fmt = (x: number | undefined, digits = 3) => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(digits));
const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
const added = (s: Stats | undefined, base: Stats | undefined) => s && base ? { p50: s.p50 - base.p50, p90: s.p90 - base.p90, p99: s.p99 - base.p99 } : undefined;

/** A target a number is held to; `met` is null when the run has no value for it. */
export interface Goal { target: string; value: string; met: boolean | null }

export interface ColdStart { firstBootMs: number; runsMs: number[]; medianMs: number }

export interface Report {
  date: string;
  machine: { nproc: number; cpu: string; memGb: number; node: string; nginx: string | null; kernel: string; loadAvgStart: number; loadAvgEnd: number };
  settings: typeof D & { requestBytes: number; keywardLogging: string };
  coldStart?: ColdStart;
  paths: Record<string, PathResult & {
    added?: { c1?: ReturnType<typeof added>; rate100?: ReturnType<typeof added>; rate1000?: ReturnType<typeof added>; ttfbP50?: number };
    vsBare?: { addedC1P50?: number; rps?: number; soakWall?: number };
    vsNginx?: { addedC1P50?: number; rps?: number; soakWall?: number };
    vsFloor?: { cpu?: number; rps?: number };
  }>;
  targets: Goal[];
  durationS: number;
}

function cpuModel(): string {
  try {
    return /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? os.cpus()[0]?.model ?? 'unknown';
  } catch {
    return os.cpus()[0]?.model ?? 'unknown';
  }
}

/** The report of the paths measured (none for a side row run alone), their targets, and the cold start's when it ran. */
export function buildReport(names: PathName[], results: Map<PathName, PathResult>, cold: ColdStart | undefined, nginxV: string | undefined, started: number, loadAvgStart: number): Report {
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
  const k = paths.keyward;
  const targets: Report['targets'] = [];
  const t = (target: string, value: number | undefined, ok: (v: number) => boolean, show: (v: number) => string) =>
    targets.push({ target, value: value === undefined ? 'n/a' : show(value), met: value === undefined ? null : ok(value) });
  // The side-by-side goals; the side rows' goals are added by their rows.
  t('server CPU per request ≤ 1.10× the floor (bench/lib/floor-proxy.mjs, every piece)', k?.vsFloor?.cpu, (v) => v <= 1.1, (v) => `${v.toFixed(2)}×`);
  t('throughput at saturation ≥ 0.90× the floor', k?.vsFloor?.rps, (v) => v >= 0.9, (v) => `${v.toFixed(2)}×`);
  t('added p50 latency at c=1 ≤ 1.3× bare Node proxy', k?.vsBare?.addedC1P50, (v) => v <= 1.3, (v) => `${v.toFixed(2)}×`);
  t('soak: every stream completes', k?.soak?.completed, (v) => v === k!.soak!.streams * k!.soak!.rounds, (v) => `${v}/${k!.soak!.streams * k!.soak!.rounds}`);
  // "In each of 3 runs": every round's wall against the bare proxy's in the same round, and every round's peak.
  const soakRoundRatios = k?.soak && paths.bare?.soak ? k.soak.wallRoundsMs.map((w, i) => w / paths.bare!.soak!.wallRoundsMs[i]!) : undefined;
  t('soak: wall time ≤ 1.15× bare Node proxy in every round', soakRoundRatios && Math.max(...soakRoundRatios), (v) => v <= 1.15, () => soakRoundRatios!.map((x) => `${x.toFixed(2)}×`).join(', '));
  t('soak: peak RSS ≤ 250 MB in every round', k?.soak && Math.max(...k.soak.peakRssRoundsMb), (v) => v <= 250, () => k!.soak!.peakRssRoundsMb.map((x) => `${x} MB`).join(', '));
  t('cold start to ready ≤ 300 ms (median)', cold?.medianMs, (v) => v <= 300, (v) => `${v.toFixed(0)} ms`);
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

/** The Markdown tables: the paths' (those with numbers), then `sideLines` (the side rows' lines), the cold start's, the targets. */
export function renderTables(r: Report, sideLines: string[] = []): string {
  const names = Object.keys(r.paths);
  const has = (part: keyof PathResult) => names.some((n) => r.paths[n]![part] !== undefined);
  const lines: string[] = [];
  const row = (cells: Array<string | number>) => lines.push(`| ${cells.join(' | ')} |`);
  const ms = (x: number | undefined) => fmt(x, 3);
  const x2 = (x: number | undefined) => (x === undefined ? '–' : `${x.toFixed(2)}×`);

  lines.push(`Machine: ${r.machine.nproc} cores, ${r.machine.cpu}, ${r.machine.memGb} GB; Node ${r.machine.node}; nginx ${r.machine.nginx ?? 'not installed (row skipped)'}; load average ${r.machine.loadAvgStart.toFixed(1)} → ${r.machine.loadAvgEnd.toFixed(1)}`);
  if (names.length > 0) lines.push(`Each latency/throughput phase: ${r.settings.rounds} rounds per path, interleaved (c=1 ${r.settings.c1Ms / 1000} s, 100/s ${r.settings.rate100Ms / 1000} s, 1,000/s ${r.settings.rate1000Ms / 1000} s, first SSE byte ${r.settings.ttfbMs / 1000} s, saturation ${r.settings.satS} s per round).`);
  lines.push('');
  if (has('c1') || has('rate100') || has('rate1000')) {
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
  }
  if (has('sat') || has('ttfb')) {
    lines.push(`Saturation (${r.settings.satConnections} connections, median of ${r.settings.rounds} rounds), first SSE byte, memory (peak RSS of the long-lived process over every phase but the soak):`);
    lines.push('');
    row(['path', 'req/s', '×bare', '×floor', '×nginx', 'server CPU µs/req', 'CPU ×floor', 'p99 ms at saturation', 'added first SSE byte p50 ms', 'peak RSS MB']);
    row(['---', '---', '---', '---', '---', '---', '---', '---', '---', '---']);
    for (const n of names) {
      const p = r.paths[n]!;
      row([n, fmt(p.sat?.rps, 0), x2(p.vsBare?.rps), x2(p.vsFloor?.rps), x2(p.vsNginx?.rps), fmt(p.sat?.cpuUsPerRequest, 0), x2(p.vsFloor?.cpu), fmt(p.sat?.latencyP99, 0), n === 'direct' ? `(${ms(p.ttfb?.firstByte.p50)} abs.)` : ms(p.added?.ttfbP50), fmt(p.peakRssMb, 0)]);
    }
    lines.push('');
  }
  if (has('soak')) {
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
  }
  for (const line of sideLines) {
    lines.push(line);
    lines.push('');
  }
  if (r.coldStart) {
    lines.push(`Cold start (spawn \`node dist/src/main.js\` → /readyz 200, embedded default): median ${r.coldStart.medianMs.toFixed(0)} ms of ${r.coldStart.runsMs.length} (${r.coldStart.runsMs.map((x) => x.toFixed(0)).join(', ')}); first boot on an empty data dir ${r.coldStart.firstBootMs.toFixed(0)} ms.`);
    lines.push('');
  }
  lines.push('Targets:');
  lines.push('');
  row(['target', 'Keyward', 'met']);
  row(['---', '---', '---']);
  for (const t of r.targets) row([t.target, t.value, t.met === null ? 'n/a' : t.met ? 'yes' : 'NO']);
  return lines.join('\n');
}

/**
 * Prints the tables and writes the report (with the side rows' fields, if any) to
 * bench/results/<date>[-<row>][-quick].json. A row run alone (`row`) keeps only the targets it has a value for.
 */
export function writeReport<R extends Report>(report: R, sideLines: string[], started: number, row?: string): void {
  if (row) report.targets = report.targets.filter((t) => t.met !== null);
  const out = renderTables(report, sideLines);
  process.stdout.write(out + '\n');
  const dir = path.join(BENCH, 'results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${new Date().toISOString().slice(0, 10)}${row ? `-${row}` : ''}${QUICK ? '-quick' : ''}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2) + '\n');
  log(`wrote ${path.relative(process.cwd(), file)} (${((Date.now() - started) / 1000).toFixed(0)} s in all)`);
}
