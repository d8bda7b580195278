/**
 * The upstreams Keyward talks to in the side rows besides the fake provider: a stub Entra token endpoint (the
 * federation row) and a fake remote MCP server (the mcp-call row, bench/lib/mcp-server.ts in its own process),
 * with the environment that points Keyward at each.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { LIB, startReadyLine, type Proc } from './servers.js';

export interface EntraStub {
  url: string;
  grants(): number;
  close(): void;
}

/**
 * A stub Entra token endpoint (AZURE_AUTHORITY_HOST), in this process: it answers every grant with a fresh one-hour
 * token and counts them, so the federation row also shows how many mints its load caused.
 */
export async function startEntraStub(): Promise<EntraStub> {
  let grants = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      grants++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token_type: 'Bearer', expires_in: 3599, access_token: `bench-entra-token-${grants}-${'t'.repeat(40)}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, grants: () => grants, close: () => server.close() };
}

/** What Keyward needs for the federation row: itself as an issuer, the stub as Entra, the fake provider as Azure. */
export const federationEnv = (entraUrl: string, upstreamPort: number): Record<string, string> => ({
  KEYWARD_ISSUER_URL: 'http://127.0.0.1:9',
  AZURE_AUTHORITY_HOST: entraUrl,
  KEYWARD_UPSTREAM_AZURE: `http://127.0.0.1:${upstreamPort}`,
});

/** The key the fake MCP server answers to (stored as the github-mcp credential; a GitHub PAT's shape). */
export const MCP_KEY = `ghp_bench${'m'.repeat(31)}`;

/** The text the fake's `get_issue` answers (bench/lib/mcp-server.ts answers with it; every result is checked against it). */
export const issueText = (owner: string, repo: string, n: number): string =>
  JSON.stringify({ number: n, title: `Issue ${n} of ${owner}/${repo}`, state: 'open', user: { login: 'octocat' }, labels: ['bug'], comments: 3, body: 'Steps to reproduce: run the bench.' });

/** Starts the fake MCP server as a child; `json`: POSTs answered with JSON rather than an event stream (the SDK's default). */
export async function startMcpServer(o: { json?: boolean } = {}): Promise<McpServerProc> {
  const json = o.json === true;
  return { ...await startReadyLine('mcp', path.join(LIB, 'mcp-server.ts'), { BENCH_MCP_KEY: MCP_KEY, BENCH_MCP_JSON: json ? '1' : '0' }, ['--import', 'tsx']), json };
}

export interface McpServerProc extends Proc {
  json: boolean;
}

/** What Keyward needs for the mcp-call row: its github-mcp provider's origin on the fake. */
export const mcpEnv = (mcpPort: number): Record<string, string> => ({ KEYWARD_UPSTREAM_GITHUB_MCP: `http://127.0.0.1:${mcpPort}` });
