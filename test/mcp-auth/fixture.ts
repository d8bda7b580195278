/**
 * Test support for MCP authorization: a gateway that is its own authorization server (KEYWARD_ISSUER_URL names a
 * relay bound before the gateway starts, so the issuer's port is known up front), a fake MCP server holding the
 * stored key, an organisation and its github-mcp credential; and the authorization flow driven over plain HTTP
 * (the page's forms posted as a browser posts them), for the refusal tests; a client's callback server for the
 * browser flows.
 */
import type { ExecutionContext } from 'ava';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, createCredential, createOrg, startApp, type Org, type StartOptions, type TestApp } from '../support/app.js';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { startIssuerFront } from '../support/cloud/keyward-oidc.js';
import { startProvider } from '../support/openid-provider.js';
import { startFakeMcp, type FakeMcp } from '../support/mcp-fake.js';
import { canaryKey } from '../support/proxy-fixture.js';

export interface McpAuthFixture {
  app: TestApp;
  /** The issuer (the relay in front of the gateway): every URL a client uses. */
  issuer: string;
  fake: FakeMcp;
  key: string;
  org: Org;
  credential: string;
  resource: string;
}

/** `clocks`: a ManualClock as `clock` and/or `timers` (startApp's), for what runs on them. */
export async function startMcpAuth(t: ExecutionContext, env: Record<string, string> = {}, clocks: Pick<StartOptions, 'clock' | 'timers'> = {}): Promise<McpAuthFixture> {
  const key = canaryKey('ghmcp');
  const fake = await startFakeMcp(key);
  t.teardown(() => fake.close());
  const front = await startIssuerFront(t);
  const app = await startApp(t, { env: { KEYWARD_ISSUER_URL: front.url, KEYWARD_UPSTREAM_GITHUB_MCP: fake.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', ...env }, ...clocks });
  front.point(app.url);
  const org = await createOrg(app);
  const credential = await createCredential(app, org, 'github-mcp', key);
  return { app, issuer: front.url, fake, key, org, credential, resource: `${front.url}/v1/mcp/${credential}` };
}

export const pkce = (): { verifier: string; challenge: string } => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

export async function registerClient(f: McpAuthFixture, redirectUri = 'http://127.0.0.1:47123/callback'): Promise<string> {
  const res = await api(f.issuer, 'POST', '/v1/oauth/register', { body: { client_name: 'test client', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' } });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${res.text}`);
  return res.body.client_id as string;
}

/** A client's callback on 127.0.0.1: the code the browser is redirected back with. */
export async function callbackServer(t: ExecutionContext): Promise<{ url: string; code: Promise<string> }> {
  let resolve!: (code: string) => void;
  const code = new Promise<string>((r) => (resolve = r));
  const server = http.createServer((req, res) => {
    const c = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('code');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.');
    if (c) resolve(c);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, code };
}

export interface AuthorizeParams {
  clientId: string;
  redirectUri: string;
  challenge: string;
  resource: string;
  state?: string;
}

export const authorizeQuery = (p: AuthorizeParams): URLSearchParams => new URLSearchParams({
  response_type: 'code', client_id: p.clientId, redirect_uri: p.redirectUri, code_challenge: p.challenge, code_challenge_method: 'S256', resource: p.resource, state: p.state ?? 'st-1',
});

const hiddenValue = (html: string, name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? '';

/**
 * The page's steps as a browser takes them: GET the authorize URL, post the sign-in form with `token`, post the
 * consent form allowing `tools` (undefined: every tool offered; null: the request denied). The last answer (a 303 to the redirect URI, or a page).
 */
export async function authorizeOverHttp(f: McpAuthFixture, p: AuthorizeParams, token: string, tools?: string[] | null): Promise<{ status: number; location: string | null; html: string }> {
  const q = authorizeQuery(p);
  const first = await fetch(`${f.issuer}/v1/oauth/authorize?${q}`, { redirect: 'manual' });
  if (first.status !== 200) return { status: first.status, location: first.headers.get('location'), html: await first.text() };
  await first.text();
  const signIn = new URLSearchParams(q);
  signIn.set('step', 'signin');
  signIn.set('token', token);
  const consent = await fetch(`${f.issuer}/v1/oauth/authorize`, { method: 'POST', body: signIn, redirect: 'manual' });
  const html = await consent.text();
  if (consent.status !== 200) return { status: consent.status, location: consent.headers.get('location'), html };
  const offered = [...html.matchAll(/name="tools" value="([^"]*)"/g)].map((m) => m[1]!);
  const answer = new URLSearchParams(q);
  answer.set('step', 'consent');
  answer.set('consent', hiddenValue(html, 'consent'));
  answer.set('consent_secret', hiddenValue(html, 'consent_secret'));
  answer.set('decision', tools === null ? 'deny' : 'allow');
  for (const tool of tools ?? (tools === null ? [] : offered)) answer.append('tools', tool);
  const done = await fetch(`${f.issuer}/v1/oauth/authorize`, { method: 'POST', body: answer, redirect: 'manual' });
  return { status: done.status, location: done.headers.get('location'), html: await done.text() };
}

export async function tokenRequest(f: McpAuthFixture, form: Record<string, string>): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${f.issuer}/v1/oauth/token`, { method: 'POST', body: new URLSearchParams(form) });
  return { status: res.status, body: await res.json() as Record<string, unknown> };
}

/** A client, a consent for `tools`, and the code redeemed: the token response and what it took. */
export async function authorizedTokens(f: McpAuthFixture, tools?: string[]): Promise<{ clientId: string; access: string; refresh: string; code: string; verifier: string; redirectUri: string }> {
  const redirectUri = 'http://127.0.0.1:47123/callback';
  const clientId = await registerClient(f, redirectUri);
  const { verifier, challenge } = pkce();
  const done = await authorizeOverHttp(f, { clientId, redirectUri, challenge, resource: f.resource }, f.org.token, tools);
  const code = new URL(done.location!).searchParams.get('code')!;
  const res = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, client_id: clientId, resource: f.resource });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${JSON.stringify(res.body)}`);
  return { clientId, access: res.body.access_token as string, refresh: res.body.refresh_token as string, code, verifier, redirectUri };
}

/** A JSON-RPC tools/list on an MCP route with this bearer token: the HTTP status (a session is not needed for the gate). */
export async function mcpStatus(url: string, token: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
  });
  await res.text();
  return res.status;
}

/**
 * Grace, a member of the fixture's organisation signed in to the console by single sign-on (oidc-provider as the
 * organisation's OpenID provider) in a fresh Chromium page, which rests on the console once she is in.
 */
export async function memberSignedIn(t: ExecutionContext, f: McpAuthFixture): Promise<{ page: Page; member: { id: string; email: string } }> {
  const provider = await startProvider({ redirectUri: `${f.issuer}/v1/sso/callback` });
  t.teardown(() => provider.close());
  const sso = await api(f.app, 'PUT', '/v1/orgs/self/sso', {
    token: f.org.token, body: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret, allowed_domains: ['acme.test'] },
  });
  t.is(sso.status, 200, sso.text);
  provider.nextPerson = { sub: 'grace', email: 'grace@acme.test', name: 'Grace', groups: ['engineers'] };
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.goto(`${f.issuer}/v1/sso/start?org=${f.org.id}`);
  await page.waitForURL(/\/console\//);
  // The console's page settles (its heading focused) before a test sends the browser on.
  await page.locator('h1:focus').waitFor();
  const members = (await api(f.app, 'GET', '/v1/members', { token: f.org.token })).body.data as Array<{ id: string; email: string }>;
  const member = members.find((m) => m.email === 'grace@acme.test')!;
  t.truthy(member);
  return { page, member };
}
