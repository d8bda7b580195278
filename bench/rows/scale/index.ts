/**
 * The scale row, `npm run bench -- scale`: one organisation served by N gateway instances (N = 1, 10, 50, 100 by default) on
 * one Firestore emulator whose every document read, write and delete is recorded with its time
 * (test/support/emulator-ops.ts). The instances run as whole servers, several per process
 * (./worker.ts); a fixed total rate of requests is spread over them, against a fake provider that
 * reports usage, under an org quota, an org spend limit and a token budget. Mid-run a token is revoked and
 * every instance is probed until it refuses it. Reports, per N: writes per second per document (max, p99,
 * max over any 10 s window), reads, writes and deletes per million requests, lease claims per second,
 * revocation time to every instance, and exactness after drain (usage, quota and spend against what the
 * provider received). Writes bench/results/scale-<date>.json.
 *
 *   npm run bench -- scale --instances 1,10,50,100 --rate 100 --seconds 60 --per-process 25 [--label x]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { cpSync, mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { startEmulator } from '../../../test/support/firestore-emulator.js';
import { recordOps, type Op } from '../../../test/support/emulator-ops.js';
import { BENCH, ROOT, sleep } from '../../lib/servers.js';
import { analyse, formatBreakdown, formatReport, PRICES, type RunResult } from './report.js';
import { INPUT_OVERHEAD_TOKENS } from '../../../src/pricing/spend-bound.js';

/** This row's folder: its worker and provider scripts. */
const HERE = path.dirname(fileURLToPath(import.meta.url));

const OPTIONS = {
  instances: { type: 'string', default: '1,10,50,100' },
  rate: { type: 'string', default: '100' },
  seconds: { type: 'string', default: '60' },
  'per-process': { type: 'string', default: '25' },
  /** Appended to the results' file name (runs of one day kept apart). */
  label: { type: 'string', default: '' },
} as const;
// The run's settings, from its arguments (set once by run()).
let SIZES: number[] = [];
let RATE = 0;
let SECONDS = 0;
let PER_PROCESS = 0;
let LABEL = '';
const ADMIN = 'bench-admin-token-0123456789abcdef';
const KEK = randomBytes(32).toString('base64');
const QUOTA = 10_000_000;

/** The provider (./provider.mjs, its own process): 11 input and 5 output tokens each (pm-1: 22 + 40 = 62 µ$). */
async function provider(): Promise<{ url: string; received: () => Promise<number>; close(): void }> {
  const proc = fork(path.join(HERE, 'provider.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => proc.once('message', (m) => resolve((m as { port: number }).port)));
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => new Promise<number>((resolve) => {
      proc.once('message', (m) => resolve((m as { count: number }).count));
      proc.send('count');
    }),
    close: () => proc.kill(),
  };
}
const COST_MICROS = 11 * 2 + 5 * 8;
const BODY = JSON.stringify({ model: 'pm-1', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
/** The budget's reservation for BODY (pricing/spend-bound.ts): what a request is charged when no usage comes back. */
const WORST_MICROS = (Buffer.byteLength(BODY) + INPUT_OVERHEAD_TOKENS) * 2 + 5 * 8;

const MAX_INFLIGHT = 256;
const agent = new http.Agent({ keepAlive: true, maxSockets: MAX_INFLIGHT });
function call(url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.request(url, { method, agent, headers: { ...headers, ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end(body);
  });
}
const admin = async (base: string, method: string, p: string, token: string, body?: unknown) =>
  JSON.parse((await call(base + p, method, { authorization: `Bearer ${token}` }, body === undefined ? undefined : JSON.stringify(body))).body || '{}');

interface Worker {
  proc: ChildProcess;
  ports: number[];
}

async function startWorkers(n: number, env: Record<string, string>): Promise<Worker[]> {
  const workers: Worker[] = [];
  for (let left = n; left > 0; left -= PER_PROCESS) {
    const count = Math.min(PER_PROCESS, left);
    const proc = fork(path.join(HERE, 'worker.ts'), [], { execArgv: ['--import', 'tsx', '--max-semi-space-size=16'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    proc.send({ count, env });
    const ports = await new Promise<number[]>((resolve, reject) => {
      proc.once('message', (m) => resolve((m as { ports: number[] }).ports));
      proc.once('exit', (code) => reject(new Error(`a scale worker exited with ${code}`)));
    });
    workers.push({ proc, ports });
  }
  return workers;
}

async function stopWorkers(workers: Worker[]): Promise<void> {
  await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
    w.proc.once('exit', () => resolve());
    w.proc.send({ stop: true });
  })));
}

async function runSize(n: number, emulatorHost: string, ops: Op[], providersDir: string): Promise<RunResult> {
  const up = await provider();
  const project = `keyward-scale-${n}-${randomBytes(3).toString('hex')}`;
  const env = {
    KEYWARD_STORE: 'firestore', FIRESTORE_EMULATOR_HOST: emulatorHost, GOOGLE_CLOUD_PROJECT: project, KEYWARD_LOCAL_KEK: KEK,
    KEYWARD_ADMIN_TOKEN: ADMIN, KEYWARD_PROVIDERS_DIR: providersDir, KEYWARD_UPSTREAM_PRICED: up.url, KEYWARD_FREE_PROXY_REQUESTS: String(QUOTA),
    KEYWARD_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'keyward-scale-')), KEYWARD_DRAIN_S: '2', KEYWARD_AUTH_FAILURES: '1000000', KEYWARD_ADMIN_RATE: '1000000',
  };
  const started = performance.now();
  const workers = await startWorkers(n, env);
  const urls = workers.flatMap((w) => w.ports.map((p) => `http://127.0.0.1:${p}`));
  process.stderr.write(`  ${n} instances listening after ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  const org = await admin(urls[0]!, 'POST', '/v1/orgs', ADMIN, { name: 'scale' });
  const cred = await admin(urls[0]!, 'POST', '/v1/credentials', org.token, { provider: 'priced', api_key: 'sk-scale-0123456789' });
  await admin(urls[0]!, 'PATCH', '/v1/orgs/self', org.token, { spend_limit_usd: '100000' });
  const tok = await admin(urls[0]!, 'POST', '/v1/tokens', org.token, { credential_id: cred.id, ttl: '1d', budget_usd: '100000' });
  const victim = await admin(urls[0]!, 'POST', '/v1/tokens', org.token, { credential_id: cred.id, ttl: '1d' });
  const proxied = (url: string, token: string) => call(`${url}/v1/proxy/v1/chat/completions`, 'POST', { 'x-proxy-token': token }, BODY);
  // Every instance resolves (and caches) the victim first.
  let victimForwarded = (await Promise.all(urls.map((u) => proxied(u, victim.token)))).filter((r) => r.status === 200).length;
  const statuses = new Map<number, number>();
  /** Every answer to the budgeted token, warm-up included: what exactness is checked against. */
  const allStatuses = new Map<number, number>();
  const probeStatuses = new Map<number, number>();
  const inflight = new Set<Promise<unknown>>();
  const tally = (m: Map<number, number>, status: number) => m.set(status, (m.get(status) ?? 0) + 1);
  const load = async (seconds: number, count: boolean) => {
    const start = performance.now();
    for (let i = 0; performance.now() - start < seconds * 1000; i++) {
      const due = start + (i * 1000) / RATE;
      if (due > performance.now()) await sleep(due - performance.now());
      // A machine that cannot keep up slows the rate (the report gives the rate reached) rather than queue without end.
      while (inflight.size >= MAX_INFLIGHT) await Promise.race(inflight);
      const p = proxied(urls[i % urls.length]!, tok.token).then((r) => {
        tally(allStatuses, r.status);
        if (count) tally(statuses, r.status);
      });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    }
  };
  // Warm-up, not measured: every instance serves a few requests (its leases claimed, its caches filled).
  await load(Math.max(5, (3 * n) / RATE), false);
  const from = ops.length;
  const t0 = performance.now();
  // Half-way, revoke the victim through one instance; probe every instance until each refuses it.
  const revocation = (async () => {
    await sleep((SECONDS * 1000) / 2);
    await admin(urls[0]!, 'DELETE', `/v1/tokens/${victim.id}`, org.token);
    const at = performance.now();
    // Per instance: when the first probe it refused was sent, and when the last one it forwarded was sent.
    const seen = await Promise.all(urls.map(async (u) => {
      let lastForwarded = 0;
      while (performance.now() - at < 30_000) {
        const sent = performance.now() - at;
        const r = await proxied(u, victim.token);
        if (r.status === 401) return { refusedFrom: sent, refusedBy: performance.now() - at, lastForwarded };
        if (r.status === 200) {
          victimForwarded++;
          lastForwarded = sent;
        } else probeStatuses.set(r.status, (probeStatuses.get(r.status) ?? 0) + 1);
        await sleep(50);
      }
      return { refusedFrom: Infinity, refusedBy: Infinity, lastForwarded };
    }));
    const worst = {
      refusedFrom: Math.max(...seen.map((x) => x.refusedFrom)),
      refusedBy: Math.max(...seen.map((x) => x.refusedBy)),
      lastForwarded: Math.max(...seen.map((x) => x.lastForwarded)),
    };
    process.stderr.write(`  revocation: every instance refused by ${Math.round(worst.refusedBy)} ms after it (probes sent from ${Math.round(worst.refusedFrom)} ms); the last forwarded was sent after ${Math.round(worst.lastForwarded)} ms (other answers: ${JSON.stringify(Object.fromEntries(probeStatuses))})\n`);
    return worst;
  })();
  await load(SECONDS, true);
  const t1 = performance.now();
  process.stderr.write(`  load done: ${JSON.stringify(Object.fromEntries(statuses))}\n`);
  const revoked = await revocation;
  await Promise.all([...inflight]);
  const to = ops.length;
  const opsSeconds = (performance.now() - t0) / 1000;
  await stopWorkers(workers);
  process.stderr.write('  drained\n');
  // Exactness: the store (through a fresh instance) against what the provider received.
  const [check] = await startWorkers(1, env);
  const base = `http://127.0.0.1:${check!.ports[0]}`;
  const usage = await admin(base, 'GET', '/v1/usage', org.token);
  const token = await admin(base, 'GET', `/v1/tokens/${tok.id}`, org.token);
  await stopWorkers([check!]);
  const received = await up.received();
  up.close();
  return analyse({
    instances: n, rate: RATE, seconds: (t1 - t0) / 1000, opsSeconds, ops: ops.slice(from, to), t0, t1, statuses: Object.fromEntries(statuses), allStatuses: Object.fromEntries(allStatuses),
    revokedAllMs: revoked.refusedBy, lastForwardedMs: revoked.lastForwarded, received, victimForwarded, costMicros: COST_MICROS, worstMicros: WORST_MICROS, usage, tokenUsage: token.usage,
  });
}

async function main(): Promise<void> {
  const emulator = await startEmulator();
  const ops = recordOps(emulator.server);
  const providersDir = mkdtempSync(path.join(os.tmpdir(), 'keyward-scale-providers-'));
  cpSync(path.join(ROOT, 'test/support/providers/priced.js'), path.join(providersDir, 'priced.js'));
  const results: RunResult[] = [];
  for (const n of SIZES) {
    process.stderr.write(`scale: ${n} instances, ${RATE} requests/s for ${SECONDS} s\n`);
    results.push(await runSize(n, emulator.host, ops, providersDir));
    ops.length = 0;
    process.stdout.write(formatReport(results.slice(-1)) + '\n');
  }
  process.stdout.write('\n' + formatReport(results) + '\n');
  mkdirSync(path.join(BENCH, 'results'), { recursive: true });
  const file = path.join(BENCH, 'results', `scale-${new Date().toISOString().slice(0, 10)}${LABEL ? `-${LABEL}` : ''}.json`);
  const machine = { cpus: os.cpus().length, load: os.loadavg() };
  writeFileSync(file, JSON.stringify({ rate: RATE, seconds: SECONDS, perProcess: PER_PROCESS, machine, results }, null, 2));
  writeFileSync(file.replace(/\.json$/, '.md'), [
    `# scale, ${new Date().toISOString().slice(0, 16)}Z`,
    '',
    `One organisation, ${RATE} requests/s for ${SECONDS} s spread over N instances (${PER_PROCESS} per process) on one Firestore emulator; ${machine.cpus} cores, load average ${machine.load.map((l) => l.toFixed(1)).join(' / ')} at the end. Costs at Firestore's nam5 list prices (reads $${PRICES.read}, writes $${PRICES.write}, deletes $${PRICES.delete} per 100,000).`,
    '',
    formatReport(results),
    '',
    formatBreakdown(results),
    '',
  ].join('\n'));
  process.stderr.write(`written ${path.relative(ROOT, file)} and .md\n`);
  await emulator.stop();
  process.exit(0);
}

/** `npm run bench -- scale [--instances 1,10,50,100] [--rate 100] [--seconds 60] [--per-process 25] [--label x]`. */
export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: OPTIONS });
  SIZES = values.instances.split(',').map(Number);
  RATE = Number(values.rate);
  SECONDS = Number(values.seconds);
  PER_PROCESS = Number(values['per-process']);
  LABEL = values.label;
  await main();
}
