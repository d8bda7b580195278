/**
 * The official MCP SDK's client against a Keyward MCP route with no token at all, as a new user's client starts:
 * it takes the 401's resource_metadata, discovers Keyward as the authorization server, registers itself
 * (dynamic registration: the SDK sends a metadata document's URL only when it is https) and sends the person to
 * the authorization page. There, in Chromium, the person consents leaving two of the five tools ticked: a member
 * signed in to the console by single sign-on in the same browser (the page names the member and asks for no
 * key; the token and the audit are the member's), or a person pasting the organisation token. The redirect's code
 * goes back to the SDK, which redeems it (PKCE) and connects: tools/list shows the two tools, one is called, a
 * third is refused with a JSON-RPC error that never reaches the server. No byte of the org token or of the access
 * token reaches the MCP server; the stored key does, only there.
 */
import test, { type ExecutionContext } from 'ava';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { Page } from 'playwright-core';
import { api } from '../support/app.js';
import { launchBrowser } from '../support/browser.js';
import { eventually } from '../support/wait.js';
import { callbackServer, startMcpAuth, type McpAuthFixture, memberSignedIn } from './fixture.js';

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

/**
 * The SDK client's whole flow on `page` (a Chromium page): the first connect refused with the authorization URL,
 * `signIn` run on the authorization page (a person who is not signed in yet pastes a key there), two tools left
 * ticked, the code redeemed, the filtered tools/list, an allowed call and a refused one. The tokens and the code.
 */
async function sdkFlow(t: ExecutionContext, f: McpAuthFixture, page: Page, signIn: (page: Page) => Promise<void>): Promise<{ tokens: OAuthTokens; code: string }> {
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

  // The person, in the browser the SDK's redirectToAuthorization sends them to: sign in if asked, untick all but two tools, allow.
  await page.goto(authorizationUrl.href);
  t.regex(await page.locator('main').innerText(), /SDK test client/);
  await signIn(page);
  await page.waitForSelector('input[name=tools]');
  const offered = await page.locator('input[name=tools]').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value));
  t.deepEqual(offered, ['get_issue', 'list_issues', 'list_pulls', 'delete_repo', 'echo_key'], 'the consent page lists the upstream\'s tools/list');
  for (const tool of ['list_pulls', 'delete_repo', 'echo_key']) await page.uncheck(`input[name=tools][value=${tool}]`);
  await page.click('button[value=allow]');
  const code = await callback.code;

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
  const tokens = provider.saved!;
  for (const r of f.fake.requests) {
    t.is(r.headers.authorization, `Bearer ${f.key}`, 'the server saw the stored key');
    t.false(JSON.stringify(r).includes(tokens.access_token) || JSON.stringify(r).includes(f.org.token), 'no token of Keyward\'s reached the server');
  }
  t.false(f.app.logText().includes(tokens.access_token) || f.app.logText().includes(tokens.refresh_token!) || f.app.logText().includes(code), 'no token or code in the logs');
  return { tokens, code };
}

test('the MCP SDK client with a member signed in by single sign-on: discovery from the 401, registration, consent in Chromium naming the member, token, filtered tools/list, a call, a refused call', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const f = await startMcpAuth(t, { KEYWARD_AUDIT_TOOL_CALLS: '1' });
  // Grace signs in to the console first; the SDK then sends her browser to the authorization page.
  const { page, member } = await memberSignedIn(t, f);

  const { tokens } = await sdkFlow(t, f, page, async (p) => {
    await p.waitForSelector('input[name=tools]');
    t.is(await p.locator('#token').count(), 0, 'signed in already: no key asked for');
    t.is(await p.locator('main .who').innerText(), 'Signed in as grace@acme.test.', 'the consent page names the member');
  });

  // The SDK's access token and the grant behind it are Grace's, and so is the audited call.
  const listed = (await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data as Array<{ created_by?: string; member_id?: string }>;
  t.like(listed.find((x) => x.created_by === member.id), { member_id: member.id }, 'the access token carries the member');
  const audit = async () => (await api(f.app, 'GET', '/v1/audit', { token: f.org.token })).body.data as Array<Record<string, string>>;
  t.like((await audit()).find((e) => e.action === 'mcp_grant.consent'), { actor: member.id }, 'the member gave the consent');
  // Written after the answer (the audit write is not on the request's path).
  await eventually(async () => (await audit()).some((e) => e.action === 'mcp.tool_call'), 'the tool call is audited');
  t.like((await audit()).find((e) => e.action === 'mcp.tool_call'), { target: 'github-mcp:get_issue', member_id: member.id, member_email: 'grace@acme.test' });
  t.false(JSON.stringify(await audit()).includes(tokens.access_token), 'no token in the audit');
});

test('the MCP SDK client with the organisation token pasted on the authorization page: the same flow, and the token is not on the page after', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const f = await startMcpAuth(t);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  await sdkFlow(t, f, page, async (p) => {
    await p.fill('#token', f.org.token);
    await p.click('button[type=submit]');
    await p.waitForSelector('input[name=tools]');
    t.is(await p.locator('main .who').count(), 0, 'a pasted key names no member');
  });
  t.false((await page.content()).includes(f.org.token), 'the org token is not on the page after sign-in');
});
