/**
 * The streaming-soak row of the side-by-side run: D.soakStreams concurrent SSE streams of 200 events 10 ms apart,
 * started evenly over 500 ms, through every path in rotated rounds, each proxy's round on a fresh process of it
 * (the fake, the upstream of all, stays): its peak RSS is then the soak's own, not the garbage and free lists the
 * saturation phases left in a long-lived heap (that process's peak is the saturation table's column). Each fresh
 * process is warmed with 1 s of event-stream requests at 8 connections first; VmHWM is reset before the soak and
 * VmRSS sampled too. Reported: streams complete (status 200 and exactly the bytes the fake declared), first event
 * p50 / p99, wall (median of rounds) and peak RSS (the worst round's).
 *
 * Alone: `npm run bench -- soak` (every path started and warmed up first, as in the whole run).
 */
import path from 'node:path';
import type { SatResult, SoakResult, Target } from '../lib/load.js';
import { FLOOR_PARTS, median, type PathName, type Paths, type Session } from '../lib/paths.js';
import { RssSampler, memory, provision, resetPeak, sleep, startBare, startFloor, startKeyward, startNginx, type Proc } from '../lib/servers.js';
import { D, KEY, log } from '../lib/settings.js';
import { sideBySide } from '../lib/standalone.js';

export async function soakPhase(p: Paths, s: Session): Promise<void> {
  const { names, targets, workers, results, fake } = p;
  const { tmp } = s;
  // VmHWM of the long-lived processes so far.
  const peakBeforeSoak = new Map<PathName, number>(names.map((n) => [n, memory(targets.get(n)!.proc.pids()).hwmMb]));
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
}

/** `npm run bench -- soak`: the row alone. */
export const run = (): Promise<void> => sideBySide('soak', (p, s) => soakPhase(p, s));
