/**
 * `npm run bench [-- <row> [args…]]`: Keyward's benchmark, one entry for every row. With no row, the whole run
 * (the `default` row: every row of the side-by-side run, in order, one report); `npm run bench -- --list` lists
 * the rows, one line each. A row is a module under bench/rows/ that exports `run(args)`, registered in ROWS below;
 * the shared pieces (servers, load generator, fakes, report) are in bench/lib/. See bench/README.md.
 *
 * A row that runs the built server first builds dist/ (`npm run build`); BENCH_BUILD=0 skips that (when dist/ is
 * fresh, or the row is given other builds).
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { ROOT } from './lib/servers.js';
import { log } from './lib/settings.js';

interface Row {
  name: string;
  /** Its line in `--list`. */
  about: string;
  /** It runs the built server (dist/), so dist/ is built first (for these arguments). */
  build: boolean | ((args: string[]) => boolean);
  load: () => Promise<{ run(args: string[]): Promise<void> }>;
}

const ROWS: Row[] = [
  { name: 'default', about: 'the whole run (no row given): cold-start, latency, saturation, budget, federation, pool, mcp-call, soak, crowd, in that order on the same processes; bench/results/<date>.json', build: true, load: () => import('./rows/default.js') },
  { name: 'cold-start', about: 'spawn → first /readyz 200 of the built server on the embedded default: median of 5, the first boot apart', build: true, load: () => import('./rows/cold-start.js') },
  { name: 'latency', about: 'added latency over direct at c=1, 100 and 1,000 req/s and to the first SSE byte, every path (bare, floor, nginx, keyward)', build: true, load: () => import('./rows/latency.js') },
  { name: 'saturation', about: 'req/s, p99 and server CPU µs per request at 64 connections, every path', build: true, load: () => import('./rows/saturation.js') },
  { name: 'budget', about: '[dist…] budgeted, models-scoped and tokens_per_minute tokens against a plain one on one Keyward (per build named): req/s, c=1 p50', build: true, load: () => import('./rows/budget.js') },
  { name: 'federation', about: 'a federated Azure credential against a key one on one Keyward: CPU per request, Entra grants', build: true, load: () => import('./rows/federation.js') },
  { name: 'body-hooks', about: 'a no-op responseBody plugin and a no-op access plugin (the plugin boundary) against none, three Keywards of one build, JSON and SSE: CPU per request', build: true, load: () => import('./rows/body-hooks.js') },
  { name: 'pool', about: 'a pooled token (round robin over three keys) against a plain one on one Keyward: CPU per request', build: true, load: () => import('./rows/pool.js') },
  { name: 'mcp-call', about: 'an MCP tools/call through Keyward against one straight to the MCP server (official SDK both ends): added p50', build: true, load: () => import('./rows/mcp-call.js') },
  { name: 'soak', about: '1,000 concurrent SSE streams × 200 events through every path, each on a fresh process: wall, first event, peak RSS', build: true, load: () => import('./rows/soak.js') },
  { name: 'crowd', about: 'the soak-10k row opening 10,000 streams at 1,000 a second, then the realtime row (Keyward only), each on processes of its own', build: true, load: () => import('./rows/crowd.js') },
  { name: 'soak-10k', about: '10,000 concurrent SSE streams through one Keyward, an event a second each: all whole and in order, RSS, fds, event loop, an ordinary request meanwhile', build: true, load: () => import('./rows/soak-10k.js') },
  { name: 'realtime', about: '1,000 realtime WebSocket sessions × 10 messages a second through Keyward, then through the http-proxy-3 splice floor', build: true, load: () => import('./rows/realtime.js') },
  { name: 'mcp-scan', about: 'in process: the MCP body scan of a tools/call (one and a batch) and the tools/list filter, operations a second', build: false, load: () => import('./rows/mcp-scan.js') },
  { name: 'profile', about: '[diff | summary <profiles…> | show <file>] Keyward under --cpu-prof at saturation: self time by area and function (diff: per request against bare/floor/a plain token)', build: (args) => args[0] !== 'summary' && args[0] !== 'show', load: () => import('./rows/profile/index.js') },
  { name: 'alloc', about: 'bytes allocated per proxied request by the allocating function (V8 sampling heap profiler in Keyward or the floor), or against an earlier run', build: true, load: () => import('./rows/alloc.js') },
  { name: 'syscalls', about: '[bare | <dist>[:pool|:budget]…] system calls per proxied request (strace -f -c): the A/B number that hardly moves with the machine\'s load', build: true, load: () => import('./rows/syscalls.js') },
  { name: 'ab', about: '[<dist>[,VAR=value…] | floor:<parts>]… builds side by side with the bare proxy, interleaved: req/s, CPU µs per request, c=1 and first SSE byte p50 (or a soak)', build: true, load: () => import('./rows/ab.js') },
  { name: 'traces', about: 'what OpenTelemetry tracing costs: two Keywards, one exporting every span to a local OTLP sink, alternating rounds: req/s, CPU per request', build: true, load: () => import('./rows/traces.js') },
  { name: 'scale', about: '[--instances 1,10,50,100 --rate --seconds --per-process --label] N gateway instances on one Firestore emulator: document operations per request, lease claims, revocation time, exactness', build: true, load: () => import('./rows/scale/index.js') },
  { name: 'invalidation', about: '[--main <file>] deleting a credential with 10,000 of 50,000 cached tokens: another organisation\'s p50/p99 meanwhile, and the delete\'s time', build: true, load: () => import('./rows/invalidation.js') },
  { name: 'audit-flood', about: '100,000 refused requests while another organisation makes changes: audit records left, counts adding up, no change dropped', build: true, load: () => import('./rows/audit-flood.js') },
  { name: 'memory', about: 'eight 30 MB bodies at once, admin and proxied (model first, last, unscoped): peak RSS against its bound, a model-first body forwarded early', build: true, load: () => import('./rows/memory.js') },
  { name: 'admin-validation', about: 'in process: µs per admin body and query check against its compiled schema, good and refused', build: true, load: () => import('./rows/admin-validation.js') },
];

function list(out: NodeJS.WritableStream): void {
  const width = Math.max(...ROWS.map((r) => r.name.length));
  for (const r of ROWS) out.write(`${r.name.padEnd(width)}  ${r.about}\n`);
}

function build(): void {
  log('npm run build');
  const r = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`npm run build failed (${r.error?.message ?? `exit ${r.status}`})`);
}

async function main(): Promise<void> {
  const [name = 'default', ...args] = process.argv.slice(2);
  if (name === '--list' || name === '--help' || name === '-h') {
    process.stdout.write('npm run bench [-- <row> [args…]]   (no row: default)\n\n');
    list(process.stdout);
    return;
  }
  const row = ROWS.find((r) => r.name === name);
  if (!row) {
    process.stderr.write(`no row named ${JSON.stringify(name)}; the rows:\n`);
    list(process.stderr);
    process.exitCode = 2;
    return;
  }
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 24) throw new Error(`run through npm (Node 24 from devDependencies), not node ${process.version}`);
  const needsBuild = typeof row.build === 'function' ? row.build(args) : row.build;
  if (needsBuild && process.env.BENCH_BUILD !== '0') build();
  const loadAvg = os.loadavg()[0]!;
  if (loadAvg > os.availableParallelism()) log(`warning: load average ${loadAvg.toFixed(1)} on ${os.availableParallelism()} cores: other work is running, absolute numbers will be noisy (ratios less so)`);
  await (await row.load()).run(args);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
