/**
 * `npm run bench:mcp-call`: the MCP row (bench/mcp.ts) alone: the fake MCP server and one fresh Keyward
 * (embedded default) whose github-mcp provider points at it, then a `tools/call` through Keyward against one
 * straight to the fake, in interleaved rounds. Prints the row and one summary line; writes nothing unless
 * BENCH_MCP_OUT=<file> asks (the row as JSON). BENCH_MCP_ROUNDS (5), BENCH_MCP_CALLS (500 timed calls per path
 * per round), BENCH_MCP_WARMUP (100), BENCH_MCP_SSE=1 (the fake answers with event streams, the SDK's default,
 * instead of JSON), BENCH_KEYWARD_FLAGS (extra node flags for Keyward, e.g. `--cpu-prof --cpu-prof-dir=<dir>`).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startKeyward, type Proc } from './lib/servers.js';
import { mcpEnv, mcpRow, mcpSummary, startMcpServer } from './mcp.js';

const log = (m: string) => process.stderr.write(`${m}\n`);
const tmp = mkdtempSync(path.join(os.tmpdir(), 'keyward-bench-mcp-'));
const procs: Proc[] = [];
try {
  const load = os.loadavg()[0]!;
  if (load > os.availableParallelism()) log(`warning: load average ${load.toFixed(1)} on ${os.availableParallelism()} cores: other work is running`);
  const mcp = await startMcpServer({ json: process.env.BENCH_MCP_SSE !== '1' });
  procs.push(mcp);
  // No OpenAI upstream is called: its origin is the fake MCP server's only because startKeyward needs one.
  const keyward = await startKeyward(path.join(tmp, 'data'), mcp.port, path.join(tmp, 'keyward.log'), {
    env: mcpEnv(mcp.port),
    nodeFlags: (process.env.BENCH_KEYWARD_FLAGS ?? '').split(' ').filter(Boolean),
  });
  procs.push(keyward);
  const row = await mcpRow(keyward, mcp, {
    rounds: Number(process.env.BENCH_MCP_ROUNDS ?? 5),
    calls: Number(process.env.BENCH_MCP_CALLS ?? 500),
    warmup: Number(process.env.BENCH_MCP_WARMUP ?? 100),
  }, log);
  console.log(JSON.stringify(row, null, 1));
  console.log(mcpSummary(row));
  if (process.env.BENCH_MCP_OUT) writeFileSync(process.env.BENCH_MCP_OUT, JSON.stringify({ date: new Date().toISOString(), loadAvg: os.loadavg(), ...row }, null, 2) + '\n');
  if (row.failed.keyward + row.failed.direct > 0 || !row.listFiltered) process.exitCode = 1;
} finally {
  for (const p of procs.reverse()) await p.stop().catch(() => {});
  rmSync(tmp, { recursive: true, force: true });
}
