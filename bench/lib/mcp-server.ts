/**
 * The bench's fake remote MCP server, in its own process (startMcpServer in bench/lib/upstreams.ts starts it): the official SDK's
 * McpServer behind its Streamable HTTP server transport, sessions on (`Mcp-Session-Id`, one McpServer per
 * session, as the SDK's examples and most TypeScript servers run), on 127.0.0.1 port 0; prints `ready <port>`.
 *
 * It answers only `Authorization: Bearer <BENCH_MCP_KEY>` (401 otherwise), so a call that reached it through
 * Keyward proves the proxy token was swapped for the stored key. Tools: `get_issue` (a small text result that
 * names its arguments, so a caller can check it got its own answer), `list_issues` and `delete_repo` (listed
 * only, for a `tools` scope to filter). BENCH_MCP_JSON=1 answers POSTs with JSON instead of an event stream.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { issueText } from './upstreams.js';

const key = process.env.BENCH_MCP_KEY ?? '';
if (key === '') throw new Error('BENCH_MCP_KEY is required');
const json = process.env.BENCH_MCP_JSON === '1';

function mcpServer(): McpServer {
  const server = new McpServer({ name: 'bench-mcp', version: '1.0.0' });
  const repoArgs = { owner: z.string(), repo: z.string() };
  server.registerTool('get_issue', { description: 'Get an issue of a repository', inputSchema: { ...repoArgs, issue_number: z.number().int() } },
    async ({ owner, repo, issue_number }) => ({ content: [{ type: 'text', text: issueText(owner, repo, issue_number) }] }));
  server.registerTool('list_issues', { description: 'List the issues of a repository', inputSchema: repoArgs },
    async ({ owner, repo }) => ({ content: [{ type: 'text', text: JSON.stringify([issueText(owner, repo, 1)]) }] }));
  server.registerTool('delete_repo', { description: 'Delete a repository', inputSchema: repoArgs }, async () => ({ content: [{ type: 'text', text: 'deleted' }], isError: true }));
  return server;
}

const sessions = new Map<string, StreamableHTTPServerTransport>();
const httpServer = http.createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (req.headers.authorization !== `Bearer ${key}`) {
    res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"bad credentials"}');
    return;
  }
  let body: unknown;
  try {
    body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    return;
  }
  const sid = req.headers['mcp-session-id'];
  let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
  if (!transport && sid === undefined && req.method === 'POST' && isInitializeRequest(body)) {
    const created = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: json,
      onsessioninitialized: (id) => void sessions.set(id, created),
    });
    created.onclose = () => {
      if (created.sessionId) sessions.delete(created.sessionId);
    };
    await mcpServer().connect(created);
    transport = created;
  }
  if (!transport) {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
    return;
  }
  await transport.handleRequest(req, res, body);
});
httpServer.keepAliveTimeout = 65_000;
httpServer.listen(0, '127.0.0.1', () => console.log(`ready ${(httpServer.address() as AddressInfo).port}`));
process.on('SIGTERM', () => {
  for (const t of sessions.values()) void t.close();
  httpServer.closeAllConnections();
  httpServer.close(() => process.exit(0));
});
