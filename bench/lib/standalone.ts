/**
 * A row of `npm run bench` run alone: set up as the whole run sets it up, so it measures the same way, then its
 * part of the tables and of the JSON (bench/results/<date>-<row>.json).
 *   sideBySide      the paths' rows (latency, saturation, soak): every path started and warmed up first
 *   standaloneSide  the side rows (budget, federation, pool, mcp-call): the fake provider, the Entra stub and the
 *                   fake MCP server; the row starts its own Keyward (startSideKeyward)
 */
import os from 'node:os';
import { Session, startPaths, startSideUpstreams, warmUp, type Paths, type SideUpstreams } from './paths.js';
import { buildReport, writeReport, type Goal } from './report.js';
import { memory, nginxVersion, startFake } from './servers.js';
import { log } from './settings.js';

export async function sideBySide(row: string, measure: (p: Paths, s: Session) => Promise<void>): Promise<void> {
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  const s = new Session();
  try {
    const fake = s.add(await startFake());
    log(`fake provider on ${fake.port}`);
    const p = await startPaths(s, fake);
    await warmUp(p);
    await measure(p, s);
    for (const name of p.names) {
      const r = p.results.get(name)!;
      r.peakRssMb ??= memory(p.targets.get(name)!.proc.pids()).hwmMb;
    }
    writeReport(buildReport(p.names, p.results, undefined, p.nginxV, started, loadAvgStart), [], started, row);
  } finally {
    await s.close();
  }
}

/** What a side row measured: its fields of the report, its lines in the tables, its targets. */
export interface SideOutcome {
  fields: Record<string, unknown>;
  lines: string[];
  targets: Goal[];
}

export async function standaloneSide(row: string, measure: (s: Session, up: SideUpstreams) => Promise<SideOutcome>, o: { mcpJson?: boolean } = {}): Promise<void> {
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  const s = new Session();
  try {
    const fake = s.add(await startFake());
    const up = await startSideUpstreams(s, fake, o);
    const { fields, lines, targets } = await measure(s, up);
    const base = buildReport([], new Map(), undefined, nginxVersion(), started, loadAvgStart);
    const report = { ...base, ...fields, targets: [...base.targets, ...targets] };
    writeReport(report, lines, started, row);
  } finally {
    await s.close();
  }
}
