/**
 * The mcp-call row: what a `tools/call` through Keyward adds over calling the MCP server straight.
 * A fake remote MCP server (bench/lib/mcp-server.ts: the official SDK's McpServer over Streamable HTTP, in its own
 * process) stands in for GitHub's; Keyward's `github-mcp` provider points at it (KEYWARD_UPSTREAM_GITHUB_MCP).
 * The official SDK client opens two sessions from this process, one through Keyward (`/v1/proxy/mcp/`, the ptok
 * as bearer, a `tools` scope on it so the body scan and the tools/list filter are on the path) and one straight
 * to the fake with the key; then, in interleaved rounds (the order alternating), each runs a warm-up and N
 * sequential `get_issue` calls at concurrency 1, each timed around `client.callTool` (the SDK's own work is in
 * both, so it cancels in the difference). Every result is checked against the text the fake answers for its
 * arguments; a call that errs or answers anything else counts as failed and is left out of the timings.
 * The goal: Keyward adds ≤ 1 ms p50.
 *
 * Alone: `npm run bench -- mcp-call`, on one fresh Keyward set up as the whole run's; exits 1 if a call failed
 * or tools/list was not filtered. BENCH_MCP_ROUNDS (the side rows' rounds), BENCH_MCP_CALLS (500 timed calls per
 * path per round), BENCH_MCP_WARMUP (100), BENCH_MCP_SSE=1 (the fake answers with event streams, the SDK's default,
 * instead of JSON), BENCH_KEYWARD_FLAGS (extra node flags for Keyward, e.g. `--cpu-prof --cpu-prof-dir=<dir>`).
 */
import os from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { stats, type Stats } from '../lib/load.js';
import { startSideKeyward } from '../lib/paths.js';
import type { Goal } from '../lib/report.js';
import { ADMIN_TOKEN, cpuSeconds, postJson as post, type Proc } from '../lib/servers.js';
import { D, QUICK, log } from '../lib/settings.js';
import { standaloneSide } from '../lib/standalone.js';
import { MCP_KEY, issueText, type McpServerProc } from '../lib/upstreams.js';

/** The scope the bench's ptok carries: get_issue is allowed, the fake's delete_repo is not. */
export const MCP_TOOLS = ['get_issue', 'list_*'];

/** A new organisation, a github-mcp credential holding `key`, and a ptok scoped to `tools`. */
export async function provisionMcp(base: string, key = MCP_KEY, tools = MCP_TOOLS): Promise<string> {
  const org = await post(`${base}/v1/orgs`, ADMIN_TOKEN, { name: 'bench-mcp' });
  const cred = await post(`${base}/v1/credentials`, org.token, { provider: 'github-mcp', api_key: key });
  return (await post(`${base}/v1/tokens`, org.token, { credential_id: cred.id, ttl: '1d', tools })).token as string;
}

export interface McpOptions {
  rounds: number;
  /** Timed calls per path per round. */
  calls: number;
  /** Untimed calls per path before each round's timed ones (and 4× that once before the first round). */
  warmup: number;
}

export interface McpRow {
  rounds: number;
  callsPerRound: number;
  /** The fake answered POSTs with JSON (else with an event stream). */
  json: boolean;
  /** Every timed call's latency over all rounds, ms. */
  direct: Stats;
  keyward: Stats;
  /** Median over rounds of (Keyward's p50 − direct's p50), ms. */
  addedP50Ms: number;
  addedP50RoundsMs: number[];
  /** Keyward's CPU (user + system) per timed call through it, µs. */
  keywardCpuUsPerCall: number;
  /** Calls (timed and warm-up) that erred or did not return the tool's result. */
  failed: { direct: number; keyward: number };
  /** tools/list through Keyward named only the scope's tools (and straight, every tool). */
  listFiltered: boolean;
  /** addedP50Ms ≤ 1 and no call through Keyward failed. */
  met: boolean;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function connect(url: string, bearer: string): Promise<Client> {
  const client = new Client({ name: 'keyward-bench', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  return client;
}

/** `count` sequential get_issue calls; the good ones' latencies (ms) and how many failed. */
async function calls(client: Client, count: number, from: number): Promise<{ samples: number[]; failed: number }> {
  const samples: number[] = [];
  let failed = 0;
  for (let i = 0; i < count; i++) {
    const n = from + i;
    const t0 = performance.now();
    try {
      const r = await client.callTool({ name: 'get_issue', arguments: { owner: 'octocat', repo: 'hello-world', issue_number: n } });
      const ms = performance.now() - t0;
      const content = r.content as Array<{ type: string; text?: string }> | undefined;
      if (r.isError || content?.[0]?.text !== issueText('octocat', 'hello-world', n)) failed++;
      else samples.push(ms);
    } catch {
      failed++;
    }
  }
  return { samples, failed };
}

/**
 * Runs the row against a running Keyward started with `mcpEnv(mcp.port)` in its environment (and the admin
 * token of servers.ts), provisioning its own organisation, credential and ptok.
 */
export async function mcpRow(keyward: Proc, mcp: McpServerProc, o: McpOptions, log: (m: string) => void): Promise<McpRow> {
  const ptok = await provisionMcp(`http://127.0.0.1:${keyward.port}`);
  const clients = {
    direct: await connect(`http://127.0.0.1:${mcp.port}/mcp/`, MCP_KEY),
    keyward: await connect(`http://127.0.0.1:${keyward.port}/v1/proxy/mcp/`, ptok),
  };
  try {
    const listed = {
      direct: (await clients.direct.listTools()).tools.map((t) => t.name).sort().join(','),
      keyward: (await clients.keyward.listTools()).tools.map((t) => t.name).sort().join(','),
    };
    const listFiltered = listed.direct === 'delete_repo,get_issue,list_issues' && listed.keyward === 'get_issue,list_issues';
    if (!listFiltered) log(`mcp: tools/list direct [${listed.direct}], through Keyward [${listed.keyward}]`);
    const order = ['direct', 'keyward'] as const;
    const failed = { direct: 0, keyward: 0 };
    const samples = { direct: [] as number[], keyward: [] as number[] };
    const p50s = { direct: [] as number[], keyward: [] as number[] };
    let cpuS = 0;
    let timed = 0;
    let n = 1; // issue numbers, each call its own
    const run = async (name: 'direct' | 'keyward', count: number) => {
      const r = await calls(clients[name], count, n);
      n += count;
      failed[name] += r.failed;
      return r;
    };
    for (const name of order) await run(name, o.warmup * 4);
    for (let round = 0; round < o.rounds; round++) {
      for (let j = 0; j < order.length; j++) {
        const name = order[(j + round) % order.length]!;
        await run(name, o.warmup);
        const before = cpuSeconds(keyward.pids());
        const r = await run(name, o.calls);
        if (name === 'keyward') {
          cpuS += cpuSeconds(keyward.pids()) - before;
          timed += r.samples.length;
        }
        samples[name].push(...r.samples);
        const s = stats(r.samples);
        p50s[name].push(s.p50);
        log(`mcp       ${name.padEnd(8)} tools/call p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms  (${s.n} calls, ${r.failed} failed)`);
      }
    }
    const addedP50RoundsMs = p50s.keyward.map((k, i) => k - p50s.direct[i]!);
    const addedP50Ms = median(addedP50RoundsMs);
    return {
      rounds: o.rounds, callsPerRound: o.calls, json: mcp.json,
      direct: stats(samples.direct), keyward: stats(samples.keyward),
      addedP50Ms, addedP50RoundsMs,
      keywardCpuUsPerCall: timed === 0 ? NaN : (cpuS * 1e6) / timed,
      failed, listFiltered,
      met: addedP50Ms <= 1 && failed.keyward === 0,
    };
  } finally {
    await Promise.all([clients.direct.close(), clients.keyward.close()]);
  }
}

/** One line for a log or the bench's tables. */
export const mcpSummary = (r: McpRow): string =>
  `MCP tools/call (official SDK client and server, ${r.json ? 'JSON' : 'event-stream'} answers, c=1, ${r.rounds} rounds of ${r.callsPerRound}): direct p50 ${r.direct.p50.toFixed(3)} ms `
  + `p90 ${r.direct.p90.toFixed(3)} p99 ${r.direct.p99.toFixed(3)}; through Keyward p50 ${r.keyward.p50.toFixed(3)} ms p90 ${r.keyward.p90.toFixed(3)} p99 ${r.keyward.p99.toFixed(3)}; `
  + `added p50 ${r.addedP50Ms.toFixed(3)} ms (target ≤ 1 ms: ${r.met ? 'met' : 'NOT met'}), Keyward ${r.keywardCpuUsPerCall.toFixed(0)} µs CPU/call, `
  + `${r.failed.keyward} failed through Keyward, ${r.failed.direct} direct; tools/list ${r.listFiltered ? 'filtered' : 'NOT filtered'} (load average ${os.loadavg()[0]!.toFixed(1)})`;

export const mcpTargets = (r: McpRow): Goal[] => [
  { target: 'MCP tools/call through Keyward adds ≤ 1 ms p50 over direct', value: `${r.addedP50Ms.toFixed(3)} ms`, met: r.met },
];

/** The row's settings: the side rows' rounds, 500 timed calls after 100 warm-up ones per path per round (a quick run: 100 and 20). */
export const mcpOptions = (): McpOptions => ({
  rounds: Number(process.env.BENCH_MCP_ROUNDS ?? D.sideRounds),
  calls: Number(process.env.BENCH_MCP_CALLS ?? (QUICK ? 100 : 500)),
  warmup: Number(process.env.BENCH_MCP_WARMUP ?? (QUICK ? 20 : 100)),
});

/** `npm run bench -- mcp-call`: the row alone. */
export async function run(): Promise<void> {
  let ok = true;
  await standaloneSide('mcp-call', async (s, up) => {
    const keyward = await startSideKeyward(s, up, { nodeFlags: (process.env.BENCH_KEYWARD_FLAGS ?? '').split(' ').filter(Boolean) });
    const mcp = await mcpRow(keyward, up.mcp, mcpOptions(), log);
    ok = mcp.failed.keyward + mcp.failed.direct === 0 && mcp.listFiltered;
    return { fields: { mcp }, lines: [mcpSummary(mcp)], targets: mcpTargets(mcp) };
  }, { mcpJson: process.env.BENCH_MCP_SSE !== '1' });
  if (!ok) process.exitCode = 1;
}
