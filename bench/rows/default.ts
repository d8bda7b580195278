/**
 * `npm run bench` with no row: the whole side-by-side run, Keyward against the Node floor and nginx in one run on
 * this machine, every row of it in this order on the same processes: cold start, the paths' warm-up, latency,
 * saturation; the side rows on the same Keyward (budget, federation, pool, mcp-call); the streaming soak; last,
 * the crowd rows, on processes of their own once every server above has stopped. One report: the tables on
 * stdout, every number in bench/results/<date>.json. See bench/README.md for what each number means.
 *
 * BENCH_QUICK=1 shortens every phase (a smoke run, not for numbers); BENCH_CROWD=0 skips the crowd rows.
 */
import os from 'node:os';
import { Session, startPaths, warmUp } from '../lib/paths.js';
import { buildReport, writeReport } from '../lib/report.js';
import { startFake } from '../lib/servers.js';
import { BODY, D, KEY, QUICK, log, sideOptions } from '../lib/settings.js';
import { budgetRow, budgetSummary, budgetTargets } from './budget.js';
import { coldStarts } from './cold-start.js';
import { crowdRow, crowdSummary, crowdTargets, type CrowdRow } from './crowd.js';
import { federationRow, federationSummary, federationTargets } from './federation.js';
import { latencyPhases } from './latency.js';
import { mcpOptions, mcpRow, mcpSummary, mcpTargets } from './mcp-call.js';
import { poolRow, poolSummary, poolTargets } from './pool.js';
import { saturationPhase } from './saturation.js';
import { soakPhase } from './soak.js';

export async function run(): Promise<void> {
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  const s = new Session();
  try {
    const fake = s.add(await startFake());
    log(`fake provider on ${fake.port}`);
    const cold = await coldStarts(s.tmp, fake.port);
    const p = await startPaths(s, fake);

    await warmUp(p);
    await latencyPhases(p);
    await saturationPhase(p);

    const keyward = p.workers.get('keyward')!;
    const budget = await budgetRow(keyward, `http://127.0.0.1:${p.keyward.port}`, KEY, BODY, sideOptions(), log);
    const federation = await federationRow(keyward, p.keyward, p.entra, KEY, BODY, sideOptions(), log);
    const pool = await poolRow(keyward, p.keyward, KEY, BODY, sideOptions(), log);
    const mcpCalls = await mcpRow(p.keyward, p.mcp, mcpOptions(), log);

    await soakPhase(p, s);

    // The crowd rows run on processes of their own, after every server above has stopped, so the cores are theirs.
    let crowd: CrowdRow | undefined;
    if (process.env.BENCH_CROWD !== '0') {
      await s.stopAll();
      crowd = await crowdRow(s.tmp, QUICK, log);
    }

    const report = { ...buildReport(p.names, p.results, cold, p.nginxV, started, loadAvgStart), budget, federation, pool, mcp: mcpCalls, crowd };
    report.targets.push(...budgetTargets(budget), ...poolTargets(pool), ...federationTargets(federation), ...mcpTargets(mcpCalls));
    if (crowd) report.targets.push(...crowdTargets(crowd));
    const sideLines = [federationSummary(federation, D.sideRounds), poolSummary(pool, D.sideRounds), budgetSummary(budget, D.sideRounds), mcpSummary(mcpCalls)];
    if (crowd) sideLines.push(crowdSummary(crowd));
    writeReport(report, sideLines, started);
  } finally {
    await s.close();
  }
}
