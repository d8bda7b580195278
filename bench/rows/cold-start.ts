/**
 * The cold-start row: `node dist/src/main.js` spawned on the embedded default, time from `spawn()` to the first
 * `/readyz` 200 (polled every 2 ms). The first boot on an empty data dir (it creates the key file and the
 * database) is kept apart; then D.coldStarts spawns on that already-initialised data dir, and their median.
 *
 * Alone: `npm run bench -- cold-start`.
 */
import os from 'node:os';
import path from 'node:path';
import { Session } from '../lib/paths.js';
import { buildReport, r3, writeReport, type ColdStart } from '../lib/report.js';
import { nginxVersion, startFake, startKeyward } from '../lib/servers.js';
import { D, log } from '../lib/settings.js';

export async function coldStarts(tmp: string, upstreamPort: number): Promise<ColdStart> {
  log('cold start: spawn → /readyz 200');
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
  const cold = { firstBootMs, runsMs: runs.map(r3), medianMs: sorted[Math.floor(sorted.length / 2)]! };
  log(`cold start median ${cold.medianMs.toFixed(0)} ms (first boot ${cold.firstBootMs.toFixed(0)} ms)`);
  return cold;
}

/** `npm run bench -- cold-start`: the row alone, against the fake provider. */
export async function run(): Promise<void> {
  const started = Date.now();
  const loadAvgStart = os.loadavg()[0]!;
  const s = new Session();
  try {
    const fake = s.add(await startFake());
    log(`fake provider on ${fake.port}`);
    const cold = await coldStarts(s.tmp, fake.port);
    writeReport(buildReport([], new Map(), cold, nginxVersion(), started, loadAvgStart), [], started, 'cold-start');
  } finally {
    await s.close();
  }
}
