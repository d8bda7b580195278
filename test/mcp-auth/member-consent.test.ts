/**
 * A member signed in by single sign-on consents on the authorization page, in Chromium, with nothing pasted: the
 * console's session cookie names the member, the grant and its access token are the member's (`member_id`), and
 * removing the member ends them at once: its access token is refused on the MCP route and its refresh token at
 * the token endpoint. An admin key's grants end the same way when the key is deleted, by the API or by the CLI
 * (`keyward admin-keys delete` on the server's store: the vault's core ends them, with no MCP authorization built).
 */
import test, { type ExecutionContext } from 'ava';
import { api } from '../support/app.js';
import { cli } from '../support/cli.js';
import { eventually } from '../support/wait.js';
import { authorizeOverHttp, authorizeQuery, callbackServer, mcpStatus, pkce, registerClient, startMcpAuth, tokenRequest, memberSignedIn } from './fixture.js';

test('a signed-in member consents in Chromium; its tool calls are audited with its name; removing it refuses its access and refresh tokens', async (t) => {
  t.timeout(180_000, 'a browser session on a shared machine');
  const f = await startMcpAuth(t, { KEYWARD_AUDIT_TOOL_CALLS: '1' });
  // The person signs in to the console first (the provider answers at once for `grace`).
  const { page, member } = await memberSignedIn(t, f);

  // Then an MCP client sends them to the authorization page: consent is asked at once, no token field.
  const callback = await callbackServer(t);
  const clientId = await registerClient(f, callback.url);
  const { verifier, challenge } = pkce();
  await page.goto(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri: callback.url, challenge, resource: f.resource })}`);
  await page.waitForSelector('input[name=tools]');
  t.is(await page.locator('#token').count(), 0, 'signed in already: no token asked for');
  for (const tool of ['list_pulls', 'delete_repo', 'echo_key']) await page.uncheck(`input[name=tools][value=${tool}]`);
  await page.click('button[value=allow]');
  const code = await callback.code;
  const tokens = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: callback.url, client_id: clientId, resource: f.resource });
  t.is(tokens.status, 200, JSON.stringify(tokens.body));
  const access = tokens.body.access_token as string;
  const refresh = tokens.body.refresh_token as string;
  t.is(await mcpStatus(f.resource, access), 200);

  // The access token is the member's.
  const listed = (await api(f.app, 'GET', '/v1/tokens', { token: f.org.token })).body.data as Array<{ created_by?: string; member_id?: string }>;
  const record = listed.find((x) => x.created_by === member.id);
  t.is(record?.member_id, member.id, 'the access token carries the member');

  // A tool call with it: the audit entry names the person behind the token.
  const rpc = (body: unknown, session?: string) => fetch(f.resource, {
    method: 'POST', body: JSON.stringify(body),
    headers: { authorization: `Bearer ${access}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session ? { 'mcp-session-id': session } : {}) },
  });
  const init = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  await init.text();
  const session = init.headers.get('mcp-session-id') ?? undefined;
  const called = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get_issue', arguments: { n: 1 } } }, session);
  t.is(called.status, 200, await called.text());
  const audited = async () => ((await api(f.app, 'GET', '/v1/audit', { token: f.org.token })).body.data as Array<Record<string, string>>)
    .find((e) => e.action === 'mcp.tool_call');
  // Written after the answer (the audit write is not on the request's path).
  await eventually(async () => (await audited()) !== undefined, 'the tool call is audited');
  const entry = await audited();
  t.like(entry, { target: 'github-mcp:get_issue', member_id: member.id, member_email: 'grace@acme.test' });
  t.regex(entry!.actor!, /^tok_/);

  t.is((await api(f.app, 'DELETE', `/v1/members/${member.id}`, { token: f.org.token })).status, 200);
  t.is(await mcpStatus(f.resource, access), 401, 'the access token dies with the member');
  const renewed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId, resource: f.resource });
  t.is(renewed.status, 400);
  t.is(renewed.body.error, 'invalid_grant', 'and its refresh token');
  t.like(await audited(), { member_id: member.id }, 'a removed member is still named by its id');

  // The browser's session died with the member: the page asks for a sign-in again.
  const again = pkce();
  await page.goto(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri: callback.url, challenge: again.challenge, resource: f.resource })}`);
  t.is(await page.locator('#token').count(), 1, 'the removed member\'s cookie counts for nothing');
});

/** A minter admin key consents over HTTP: its grant's tokens, working on the MCP route. */
async function adminKeyGrant(t: ExecutionContext) {
  const f = await startMcpAuth(t);
  const key = await api(f.app, 'POST', '/v1/admin-keys', { token: f.org.token, body: { role: 'minter' } });
  t.is(key.status, 201, key.text);
  const redirectUri = 'http://127.0.0.1:47123/callback';
  const clientId = await registerClient(f, redirectUri);
  const { verifier, challenge } = pkce();
  const done = await authorizeOverHttp(f, { clientId, redirectUri, challenge, resource: f.resource }, key.body.token as string);
  const code = new URL(done.location!).searchParams.get('code')!;
  const tokens = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, client_id: clientId, resource: f.resource });
  t.is(tokens.status, 200);
  t.is(await mcpStatus(f.resource, tokens.body.access_token as string), 200);
  return { f, key, clientId, tokens };
}

test('an admin key\'s MCP grants end when the key is deleted: access and refresh tokens refused', async (t) => {
  const { f, key, clientId, tokens } = await adminKeyGrant(t);

  t.is((await api(f.app, 'DELETE', `/v1/admin-keys/${key.body.id}`, { token: f.org.token })).status, 200);
  t.is(await mcpStatus(f.resource, tokens.body.access_token as string), 401);
  const renewed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, client_id: clientId });
  t.is(renewed.body.error, 'invalid_grant');
});

test('an admin key deleted with the CLI on the same store ends its MCP grants too: the refresh token at once, the access token on the running server', async (t) => {
  const { f, key, clientId, tokens } = await adminKeyGrant(t);

  const removed = await cli(['admin-keys', 'delete', key.body.id as string, '--org', f.org.id], { env: { KEYWARD_DATA_DIR: f.app.dataDir } });
  t.is(removed.code, 0, removed.stderr);
  const renewed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token as string, client_id: clientId });
  t.is(renewed.body.error, 'invalid_grant', 'the grant ended in the store');
  // The running server hears of the revoked access token through its change feed (within a second, as any revocation).
  await eventually(async () => (await mcpStatus(f.resource, tokens.body.access_token as string)) === 401, 'the access token refused', 10_000, 50);
  t.is(await mcpStatus(f.resource, tokens.body.access_token as string), 401, 'and stays refused');
});
