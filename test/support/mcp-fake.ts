/**
 * A fake remote MCP server built with the official SDK (its low-level Server and its Streamable HTTP server
 * transport, sessions on), on 127.0.0.1 port 0. It requires `Authorization: Bearer <the stored key>` (401
 * otherwise) and records every HTTP request (method, path, headers, body) and every tool call it ran, so a
 * test can say what never reached it. `json`: answers POSTs with JSON instead of an event stream. The tool
 * `echo_key` answers with the key itself (the gateway must mask it).
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

export const FAKE_TOOLS = ['get_issue', 'list_issues', 'list_pulls', 'delete_repo', 'echo_key'] as const;

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface FakeMcp {
  url: string;
  requests: RecordedRequest[];
  /** Tool names, in the order the server ran them. */
  calls: string[];
  close(): Promise<void>;
}

function mcpServer(key: string, calls: string[]): Server {
  const server = new Server({ name: 'fake-mcp', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    // The name after the schema, as real servers often order it: a filter must read each entry whole.
    tools: FAKE_TOOLS.map((name) => ({ inputSchema: { type: 'object' as const, properties: { n: { type: 'number' } } }, description: `the ${name} tool`, name })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    calls.push(request.params.name);
    const text = request.params.name === 'echo_key' ? `the key is ${key}` : `ran ${request.params.name} with ${JSON.stringify(request.params.arguments ?? {})}`;
    return { content: [{ type: 'text' as const, text }] };
  });
  return server;
}

export async function startFakeMcp(key: string, options: { json?: boolean } = {}): Promise<FakeMcp> {
  const requests: RecordedRequest[] = [];
  const calls: string[] = [];
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    requests.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
    if (req.headers.authorization !== `Bearer ${key}`) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end('{"error":"bad credentials"}');
      return;
    }
    let parsed: unknown;
    try {
      parsed = body === '' ? undefined : JSON.parse(body);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const sid = req.headers['mcp-session-id'];
    let transport = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (!transport && req.method === 'POST' && sid === undefined && isInitializeRequest(parsed)) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: options.json === true,
        onsessioninitialized: (id) => void sessions.set(id, created),
      });
      created.onclose = () => {
        if (created.sessionId) sessions.delete(created.sessionId);
      };
      await mcpServer(key, calls).connect(created);
      transport = created;
    }
    if (!transport) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}');
      return;
    }
    await transport.handleRequest(req, res, parsed);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    calls,
    close: async () => {
      for (const t of sessions.values()) await t.close().catch(() => {});
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface RecordingUpstream {
  url: string;
  /** Requests whose head arrived (a body that never completed included). */
  started: number;
  /** Complete requests. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * A plain upstream that records every complete request and answers with `answer(request)` (status 200 and a
 * content type and body), so a test controls the answer byte for byte (an event stream, an echoed key).
 */
export async function startRecordingUpstream(answer: (r: RecordedRequest) => { type: string; body: string; headers?: Record<string, string> }): Promise<RecordingUpstream> {
  const state = { started: 0, requests: [] as RecordedRequest[] };
  const server = http.createServer(async (req, res) => {
    state.started++;
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return;
    }
    if (!req.complete) return;
    const r = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
    state.requests.push(r);
    const a = answer(r);
    res.writeHead(200, { 'content-type': a.type, ...a.headers }).end(a.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get started() {
      return state.started;
    },
    requests: state.requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
