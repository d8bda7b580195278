/**
 * A fake Azure OpenAI resource on 127.0.0.1:0 that refuses rather than trusts: every request must
 * carry exactly one credential, `api-key: <the stored key>` and no `authorization` (a caller's
 * Bearer or a second key would be a leak), or, for a federated credential, `Authorization: Bearer
 * <a token the fake Entra ID issued>` and no `api-key`; anything else is a 401 in Azure's shape. It answers
 * the deployments surface (`?api-version=` required, as Azure does), `openai/responses`, and the
 * version-less `openai/v1/` surface, in OpenAI shapes (JSON and SSE with usage), and records every
 * request. `x-fake-echo: 1` echoes the received headers in the body (to prove masking).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface AzureReceived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
}

export interface FakeAzure {
  url: string;
  received: AzureReceived[];
  /** Requests refused for their credential (each one is a failure of the gateway). */
  refused: AzureReceived[];
  close(): Promise<void>;
}

export const PIECES = ['Hel', 'lo', ' from', ' Azure'];
export const USAGE = { prompt_tokens: 9, completion_tokens: PIECES.length, total_tokens: 9 + PIECES.length };
export const EMBEDDING_TOKENS = 5;
export const RESPONSES_USAGE = { input_tokens: 21, output_tokens: 8, total_tokens: 29 };

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'apim-request-id': 'fake-azure-1' });
  res.end(text);
}

export async function startFakeAzure(storedKey: string, entraTokens: ReadonlySet<string> = new Set()): Promise<FakeAzure> {
  const received: AzureReceived[] = [];
  const refused: AzureReceived[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const record = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, rawHeaders: req.rawHeaders, body };
    received.push(record);
    const named = (name: string) => req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i]!.toLowerCase() === name).length;
    const byKey = named('api-key') === 1 && req.headers['api-key'] === storedKey && named('authorization') === 0;
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const byEntra = named('authorization') === 1 && bearer !== undefined && entraTokens.has(bearer) && named('api-key') === 0;
    if (!byKey && !byEntra) {
      refused.push(record);
      json(res, 401, { error: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint.' } });
      return;
    }
    await answer(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    refused,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function answer(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://fake');
  const path = url.pathname;
  let request: any = {};
  try {
    request = body ? JSON.parse(body) : {};
  } catch { /* not JSON */ }
  if (req.headers['x-fake-echo']) {
    json(res, 200, { method: req.method, url: req.url, headers: req.headers });
    return;
  }
  const deployment = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(path);
  const v1 = /^\/openai\/v1\/(chat\/completions|embeddings|responses|models)$/.exec(path);
  if (deployment && !url.searchParams.get('api-version')) {
    json(res, 404, { error: { code: '404', message: 'Resource not found' } });
    return;
  }
  const kind = deployment?.[2] ?? v1?.[1] ?? (path === '/openai/responses' ? 'responses' : undefined);
  const model = deployment?.[1] ?? request.model ?? 'unknown';
  if (req.method === 'GET' && kind === 'models') return json(res, 200, { object: 'list', data: [{ id: 'gpt-4o', object: 'model', created: 0, owned_by: 'system' }] });
  if (req.method !== 'POST' || !kind) return json(res, 404, { error: { code: '404', message: 'Resource not found' } });
  if (kind === 'embeddings') {
    return json(res, 200, { object: 'list', model, data: [{ object: 'embedding', index: 0, embedding: [0.25, -0.5, 1] }], usage: { prompt_tokens: EMBEDDING_TOKENS, total_tokens: EMBEDDING_TOKENS } });
  }
  if (kind === 'responses') {
    return json(res, 200, {
      id: 'resp_fake', object: 'response', created_at: 0, status: 'completed', model,
      output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: PIECES.join(''), annotations: [] }] }],
      usage: RESPONSES_USAGE,
    });
  }
  const created = 0;
  if (!request.stream) {
    return json(res, 200, {
      id: 'chatcmpl-az', object: 'chat.completion', created, model,
      choices: [{ index: 0, message: { role: 'assistant', content: PIECES.join('') }, finish_reason: 'stop', logprobs: null }], usage: USAGE,
    });
  }
  const chunk = (choices: unknown[], extra: object = {}) => `data: ${JSON.stringify({ id: 'chatcmpl-az', object: 'chat.completion.chunk', created, model, choices, ...extra })}\n\n`;
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
  for (const piece of PIECES) {
    res.write(chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
    await new Promise((r) => setTimeout(r, 2));
  }
  res.write(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]));
  if (request.stream_options?.include_usage) res.write(chunk([], { usage: USAGE }));
  res.end('data: [DONE]\n\n');
}
