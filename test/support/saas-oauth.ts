/**
 * A stand-in SaaS for upstream OAuth credentials, on 127.0.0.1 port 0: an OAuth authorization server (one
 * registered client; authorization code with PKCE S256 only, its consent given at once; refresh tokens,
 * rotated on use when `rotate` is set, an old one refused as `invalid_grant`) and an MCP server that
 * accepts only a current access token (issued here and not expired on the test's clock), as GitHub's,
 * Linear's or Notion's do. Everything it issued is kept, so a test can look for any of it where it must
 * not be. `hold()` keeps refresh answers back until `release()` (to see concurrent requests share one).
 */
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../../src/clock.js';

export interface SaasOptions {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  clock: Clock;
  /** Access token lifetime, seconds. */
  accessTtlS: number;
  /** A refresh answers a new refresh token and retires the one used. */
  rotate?: boolean;
}

export interface Saas {
  url: string;
  /** Every access token, refresh token and code issued (for the leak checks). */
  issued: string[];
  counts: { codes: number; refreshes: number; refused: number; mcpAccepted: number; mcpRefused: number };
  /** The bearer tokens the MCP server was shown, in order. */
  presented: string[];
  /** Every refresh token refused from now on (the user revoked the app). */
  revokeRefreshTokens(): void;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

const b64 = (n: number) => randomBytes(n).toString('base64url');

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startSaas(o: SaasOptions): Promise<Saas> {
  const codes = new Map<string, { challenge: string; redirectUri: string; scope: string }>();
  const access = new Map<string, number>();
  const refresh = new Set<string>();
  const issued: string[] = [];
  const presented: string[] = [];
  const counts = { codes: 0, refreshes: 0, refused: 0, mcpAccepted: 0, mcpRefused: 0 };
  let held: Array<() => void> | undefined;

  const tokens = (withRefresh: boolean) => {
    const at = `saas_at_${b64(24)}`;
    access.set(at, o.clock.now() + o.accessTtlS * 1000);
    issued.push(at);
    const out: Record<string, unknown> = { access_token: at, token_type: 'bearer', expires_in: o.accessTtlS, scope: 'repo' };
    if (withRefresh) {
      const rt = `saas_rt_${b64(24)}`;
      refresh.add(rt);
      issued.push(rt);
      out.refresh_token = rt;
    }
    return out;
  };
  const json = (res: http.ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));

  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://saas');
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const q = url.searchParams;
      if (q.get('client_id') !== o.clientId || q.get('redirect_uri') !== o.redirectUri || q.get('response_type') !== 'code'
        || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge') || !q.get('state')) {
        return json(res, 400, { error: 'invalid_request', query: Object.fromEntries([...q.keys()].map((k) => [k, k === 'state' ? '…' : q.get(k)])) });
      }
      const code = `saas_code_${b64(16)}`;
      issued.push(code);
      codes.set(code, { challenge: q.get('code_challenge')!, redirectUri: q.get('redirect_uri')!, scope: q.get('scope') ?? '' });
      const back = new URL(o.redirectUri);
      back.searchParams.set('code', code);
      back.searchParams.set('state', q.get('state')!);
      return res.writeHead(302, { location: back.href }).end();
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams(await readBody(req));
      if (form.get('client_id') !== o.clientId || form.get('client_secret') !== o.clientSecret) return json(res, 401, { error: 'invalid_client' });
      if (form.get('grant_type') === 'authorization_code') {
        const c = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (!c || c.redirectUri !== form.get('redirect_uri') || createHash('sha256').update(verifier).digest('base64url') !== c.challenge) {
          return json(res, 400, { error: 'invalid_grant', error_description: 'bad code or verifier' });
        }
        counts.codes++;
        return json(res, 200, tokens(true));
      }
      if (form.get('grant_type') === 'refresh_token') {
        counts.refreshes++;
        if (held) await new Promise<void>((resolve) => held!.push(resolve));
        const rt = form.get('refresh_token') ?? '';
        if (!refresh.has(rt)) {
          counts.refused++;
          return json(res, 400, { error: 'invalid_grant', error_description: 'The refresh token is invalid or was revoked.' });
        }
        if (o.rotate) refresh.delete(rt);
        return json(res, 200, tokens(o.rotate === true));
      }
      return json(res, 400, { error: 'unsupported_grant_type' });
    }
    // The MCP server: JSON-RPC over POST, answered as JSON, only with a current access token.
    if (url.pathname.startsWith('/mcp')) {
      const body = await readBody(req);
      const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (token !== undefined) presented.push(token);
      const until = token === undefined ? undefined : access.get(token);
      if (until === undefined || o.clock.now() >= until) {
        counts.mcpRefused++;
        return res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer error="invalid_token"' }).end('{"error":"invalid_token"}');
      }
      counts.mcpAccepted++;
      let rpc: { id?: unknown; method?: string; params?: { name?: string } } = {};
      try {
        rpc = JSON.parse(body);
      } catch { /* answered as an empty call */ }
      const result = rpc.method === 'tools/list'
        ? { tools: [{ name: 'whoami', description: 'who', inputSchema: { type: 'object' } }, { name: 'echo_token', description: 'echo', inputSchema: { type: 'object' } }] }
        : { content: [{ type: 'text', text: rpc.params?.name === 'echo_token' ? `you sent ${token}` : 'octocat' }] };
      return json(res, 200, { jsonrpc: '2.0', id: rpc.id ?? null, result });
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    issued,
    counts,
    presented,
    revokeRefreshTokens: () => refresh.clear(),
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const r of waiting) r();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
