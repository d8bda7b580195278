/**
 * An MCP server's tools as its own `tools/list` gives them, asked with the vault's credential: what Keyward's
 * consent page lists. A short Streamable HTTP session of its own (initialize, notifications/initialized,
 * tools/list with each next cursor, up to ten pages, then DELETE), each request made as the proxy makes it (the
 * credential's origin, the provider's MCP endpoint, its signer). Bounded: 1 MiB per answer, 10 s in all; an
 * answer in JSON or in an event stream. Any failure is an Error whose message names no secret.
 */
import type { CredentialSecrets, Signer } from '../../../catalog/provider.js';
import type { Provider } from '../../../catalog/registry.js';
import { credentialWire, outgoingRequest, requestTarget } from '../../upstream/outgoing.js';

export interface UpstreamTool {
  name: string;
  description?: string;
}

const MAX_ANSWER = 1024 * 1024;
const MAX_PAGES = 10;
const PROTOCOL_VERSION = '2025-06-18';

/** The JSON-RPC answer with `id` from a JSON body or an event stream's `data:` lines. */
function answerOf(text: string, contentType: string, id: number): Record<string, unknown> | undefined {
  const candidates = contentType.includes('text/event-stream')
    ? text.split(/\r?\n\r?\n/).map((event) => event.split(/\r?\n/).filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trimStart()).join('\n'))
    : [text];
  for (const c of candidates) {
    try {
      const value = JSON.parse(c) as unknown;
      for (const m of Array.isArray(value) ? value : [value]) if (m && typeof m === 'object' && (m as { id?: unknown }).id === id) return m as Record<string, unknown>;
    } catch { /* not this one */ }
  }
  return undefined;
}

export async function listUpstreamTools(provider: Provider, credential: CredentialSecrets, signer: Signer, timeoutMs = 10_000): Promise<UpstreamTool[]> {
  if (provider.kind !== 'mcp' || provider.mcpEndpoint === undefined) throw new Error(`${provider.id} is not an MCP server`);
  if (signer.needsBody) throw new Error(`${provider.id}'s signer reads bodies: its tools cannot be listed here`);
  const wire = credentialWire(provider, credential);
  const signal = AbortSignal.timeout(timeoutMs);
  const mask = (text: string): string => wire.maskStrings.reduce((out, secret) => out.replaceAll(secret, '*'.repeat(secret.length)), text);
  let session: string | undefined;
  let nextId = 1;
  const send = async (method: string, message: Record<string, unknown> | undefined): Promise<{ status: number; text: string; type: string }> => {
    const headers: Record<string, string | string[]> = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': PROTOCOL_VERSION };
    if (message) headers['content-type'] = 'application/json';
    if (session) headers['mcp-session-id'] = session;
    const request = outgoingRequest(method, wire, provider.mcpEndpoint!, '', headers);
    await signer.sign(request, credential);
    const res = await fetch(`${request.origin}${requestTarget(request)}`, { method, headers: request.headers as Record<string, string>, body: message ? JSON.stringify(message) : null, redirect: 'manual', signal });
    session = res.headers.get('mcp-session-id') ?? session;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > MAX_ANSWER) {
        await res.body?.cancel().catch(() => {});
        throw new Error('the MCP server\'s answer is larger than 1 MiB');
      }
      chunks.push(chunk);
    }
    return { status: res.status, text: Buffer.concat(chunks).toString('utf8'), type: res.headers.get('content-type') ?? '' };
  };
  const call = async (method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> => {
    const id = nextId++;
    const res = await send('POST', { jsonrpc: '2.0', id, method, params });
    if (res.status !== 200) throw new Error(`the MCP server answered ${method} with status ${res.status}`);
    const answer = answerOf(res.text, res.type, id);
    if (!answer || typeof answer.result !== 'object' || answer.result === null) throw new Error(`the MCP server gave no result for ${method}`);
    return answer.result as Record<string, unknown>;
  };
  try {
    await call('initialize', { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'keyward-consent', version: '1' } });
    await send('POST', { jsonrpc: '2.0', method: 'notifications/initialized' });
    const tools: UpstreamTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const result = await call('tools/list', cursor === undefined ? {} : { cursor });
      for (const t of Array.isArray(result.tools) ? result.tools : []) {
        const tool = t as { name?: unknown; description?: unknown };
        if (typeof tool.name === 'string' && tool.name.length > 0 && tool.name.length <= 128) {
          // Masked as every answer is: a server that echoes the key shows asterisks on the page.
          tools.push({ name: mask(tool.name), ...(typeof tool.description === 'string' ? { description: mask(tool.description).slice(0, 300) } : {}) });
        }
      }
      cursor = typeof result.nextCursor === 'string' ? result.nextCursor : undefined;
      if (cursor === undefined) break;
    }
    return tools;
  } finally {
    if (session) await send('DELETE', undefined).catch(() => {});
  }
}
