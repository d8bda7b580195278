/**
 * The official MCP SDK's client against a Keyward MCP route with no token at all, as a new user's client starts:
 * it takes the 401's resource_metadata, discovers Keyward as the authorization server, registers itself
 * (dynamic registration: the SDK sends a metadata document's URL only when it is https) and sends the person to
 * the authorization page. There, in Chromium, the person signs in with the organisation token and leaves two of
 * the five tools ticked; the redirect's code goes back to the SDK, which redeems it (PKCE) and connects:
 * tools/list shows the two tools, one is called, a third is refused with a JSON-RPC error that never reaches the
 * server. No byte of the org token or of the access token reaches the MCP server; the stored key does, only there.
 */
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { launchBrowser } from '../support/browser.js';
import { startMcpAuth } from './fixture.js';

/** A client's callback: the code the browser is redirected back with. */
async function callbackServer(t: import('ava').ExecutionContext): Promise<{ url: string; code: Promise<string> }> {
  let resolve!: (code: string) => void;
  const code = new Promise<string>((r) => (resolve = r));
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    res.writeHead(200, { 'content-type': 'text/plain' }).end('You may close this window.');
    const c = url.searchParams.get('code');
    if (c) resolve(c);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, code };
}

class MemoryProvider implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;

  constructor(readonly redirectUrl: string) {}

  get clientMetadata() {
    return { client_name: 'SDK test client', redirect_uris: [this.redirectUrl], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }

  clientInformation() { return this.client; }
  saveClientInformation(info: OAuthClientInformationMixed) { this.client = info; }
  tokens() { return this.saved; }
  saveTokens(tokens: OAuthTokens) { this.saved = tokens; }
  redirectToAuthorization(url: URL) { this.authorizationUrl = url; }
  saveCodeVerifier(v: string) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
}

test('the MCP SDK client: discovery from the 401, registration, consent in Chromium, token, filtered tools/list, a call, a refused call', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const f = await startMcpAuth(t);
  const callback = await callbackServer(t);
  const provider = new MemoryProvider(callback.url);
  const mcpUrl = new URL(f.resource);

  const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  await t.throwsAsync(new Client({ name: 'sdk-test', version: '1.0.0' }).connect(first), { instanceOf: UnauthorizedError });
  t.regex(String(provider.client?.client_id), /^mcpc_/, 'the SDK registered itself');
  const authorizationUrl = provider.authorizationUrl!;
  t.is(authorizationUrl.origin + authorizationUrl.pathname, `${f.issuer}/v1/oauth/authorize`);
  t.is(authorizationUrl.searchParams.get('resource'), f.resource, 'the SDK asked for this route as its resource');
  t.is(authorizationUrl.searchParams.get('code_challenge_method'), 'S256');

  // The person, in a browser: sign in, untick all but two tools, allow.
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await page.goto(authorizationUrl.href);
  t.regex(await page.locator('main').innerText(), /SDK test client/);
  await page.fill('#token', f.org.token);
  await page.click('button[type=submit]');
  await page.waitForSelector('input[name=tools]');
  const offered = await page.locator('input[name=tools]').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
  t.deepEqual(offered, ['get_issue', 'list_issues', 'list_pulls', 'delete_repo', 'echo_key'], 'the consent page lists the upstream\'s tools/list');
  for (const tool of ['list_pulls', 'delete_repo', 'echo_key']) await page.uncheck(`input[name=tools][value=${tool}]`);
  await page.click('button[value=allow]');
  const code = await callback.code;
  t.false((await page.content()).includes(f.org.token), 'the org token is not on the page after sign-in');

  await first.finishAuth(code);
  t.truthy(provider.saved?.access_token);
  t.truthy(provider.saved?.refresh_token);
  const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
  const client = new Client({ name: 'sdk-test', version: '1.0.0' });
  await client.connect(transport);
  const listed = await client.listTools();
  t.deepEqual(listed.tools.map((x) => x.name), ['get_issue', 'list_issues'], 'tools/list is filtered to the consented tools');
  const result = await client.callTool({ name: 'get_issue', arguments: { n: 3 } });
  t.is((result as { content: Array<{ text: string }> }).content[0]!.text, 'ran get_issue with {"n":3}');
  const refused = await t.throwsAsync(client.callTool({ name: 'delete_repo', arguments: {} }), { instanceOf: McpError });
  t.is(refused.code, -32602);
  await client.close();

  t.deepEqual(f.fake.calls, ['get_issue'], 'the refused call never reached the server');
  for (const r of f.fake.requests) {
    t.is(r.headers.authorization, `Bearer ${f.key}`, 'the server saw the stored key');
    t.false(JSON.stringify(r).includes(provider.saved!.access_token) || JSON.stringify(r).includes(f.org.token), 'no token of Keyward\'s reached the server');
  }
  t.false(f.app.logText().includes(provider.saved!.access_token) || f.app.logText().includes(provider.saved!.refresh_token!) || f.app.logText().includes(code), 'no token or code in the logs');
});
