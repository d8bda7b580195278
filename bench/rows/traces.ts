/**
 * The traces row, `npm run bench -- traces`: what OpenTelemetry tracing costs a proxied request. Two
 * Keyward processes on the embedded default, one without OTEL_EXPORTER_OTLP_ENDPOINT
 * and one exporting every span to a local OTLP/HTTP sink (in this process, answering
 * 200 and counting spans), measured in alternating rounds against the same fake
 * upstream: throughput at saturation and latency p50/p99 (autocannon, its own
 * process), and the Keyward process's CPU time per request (utime + stime from /proc: the
 * figure that holds up best on a busy machine). Prints numbers; asserts nothing.
 * BENCH_QUICK=1 for a smoke run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { SatResult } from '../lib/load.js';
import { cpuSeconds, provision, runLoad, startFake, startKeyward, type Proc } from '../lib/servers.js';
import { BODY, KEY, QUICK } from '../lib/settings.js';

const ROUNDS = QUICK ? 1 : 3;
const DURATION_S = QUICK ? 2 : 4;
const CONNECTIONS = 32;

/** The sink: counts the spans it is sent (OTLP/JSON), nothing else. */
async function startSink(): Promise<{ url: string; spans: () => number; close: () => Promise<void> }> {
  let spans = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      spans += (text.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans: () => spans, close: () => new Promise((r) => server.close(() => r())) };
}

export async function run(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-traces-'));
  const sink = await startSink();
  const procs: Proc[] = [];
  try {
    const fake = await startFake();
    procs.push(fake);
    const off = await startKeyward(path.join(dir, 'off'), fake.port, path.join(dir, 'off.log'), { env: { KEYWARD_LOG_LEVEL: 'warn' } });
    procs.push(off);
    const on = await startKeyward(path.join(dir, 'on'), fake.port, path.join(dir, 'on.log'), { env: { KEYWARD_LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } });
    procs.push(on);
    const targets = {
      off: { url: `http://127.0.0.1:${off.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': `${await provision(`http://127.0.0.1:${off.port}`, KEY)}` }, body: BODY },
      on: { url: `http://127.0.0.1:${on.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': `${await provision(`http://127.0.0.1:${on.port}`, KEY)}` }, body: BODY },
    };
    const results: Record<'off' | 'on', SatResult[]> = { off: [], on: [] };
    const cpuUsPerRequest: Record<'off' | 'on', number[]> = { off: [], on: [] };
    const pids = { off: off.pids(), on: on.pids() };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so a machine whose load drifts affects both alike.
      for (const name of (round % 2 === 0 ? ['off', 'on'] : ['on', 'off']) as Array<'off' | 'on'>) {
        // Warm-up apart, so the CPU time read is the measured phase's only.
        await runLoad<SatResult>({ mode: 'sat', target: targets[name], connections: CONNECTIONS, durationS: 1, warmupS: 0 });
        const cpu0 = cpuSeconds(pids[name]);
        const r = await runLoad<SatResult>({ mode: 'sat', target: targets[name], connections: CONNECTIONS, durationS: DURATION_S, warmupS: 0 });
        cpuUsPerRequest[name].push(((cpuSeconds(pids[name]) - cpu0) * 1e6) / Math.max(1, r.total));
        results[name].push(r);
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    console.log(`tracing cost, ${ROUNDS} alternating rounds of ${DURATION_S} s at ${CONNECTIONS} connections (medians):`);
    for (const name of ['off', 'on'] as const) {
      const r = results[name];
      const bad = r.reduce((n, x) => n + x.errors + x.non2xx + x.timeouts, 0);
      console.log(`  tracing ${name.padEnd(3)}  ${median(r.map((x) => x.rps)).toFixed(0).padStart(6)} req/s  p50 ${median(r.map((x) => x.latencyP50)).toFixed(1)} ms  p99 ${median(r.map((x) => x.latencyP99)).toFixed(1)} ms  CPU ${median(cpuUsPerRequest[name]).toFixed(0)} µs/request  errors ${bad}`);
    }
    const rpsOff = median(results.off.map((x) => x.rps));
    const rpsOn = median(results.on.map((x) => x.rps));
    console.log(`  throughput with tracing: ${((rpsOn / rpsOff) * 100).toFixed(1)} % of without`);
    // Let the batch processor's last scheduled export (every 5 s) land before counting.
    await new Promise((r) => setTimeout(r, 5_500));
    console.log(`  spans received by the sink so far: ${sink.spans()}`);
  } finally {
    for (const p of procs.reverse()) await p.stop();
    await sink.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
