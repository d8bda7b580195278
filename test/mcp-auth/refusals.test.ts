/**
 * Keyward's authorization server for its MCP routes, driven over HTTP as a browser and a client drive it: the 401
 * challenge and the metadata documents; a consent that limits the tools; and every refusal the contract names:
 * a wrong `resource`, a PKCE mismatch, a redirect URI the client does not list (an error page, never a redirect),
 * a client metadata document on a private address, a replayed code (which revokes the token already issued from
 * it), a token used on another route (or on /v1/proxy); refresh rotation, a reused refresh token revoking its
 * family, RFC 7009 revocation, and revokePrincipal ending every grant and token of a principal.
 */
import test from 'ava';
import { api, createCredential, mintToken } from '../support/app.js';
import { canaryKey } from '../support/proxy-fixture.js';
import { listen } from '../support/cloud/keyward-oidc.js';
import { authorizedTokens, authorizeOverHttp, authorizeQuery, mcpStatus, pkce, registerClient, startMcpAuth, tokenRequest } from './fixture.js';

test('the MCP route answers 401 naming its protected-resource metadata; the metadata documents name Keyward as the authorization server', async (t) => {
  const f = await startMcpAuth(t);
  const res = await fetch(f.resource, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.is(res.status, 401);
  const challenge = res.headers.get('www-authenticate') ?? '';
  t.regex(challenge, /^Bearer realm="keyward", resource_metadata="/);
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
  t.is(metadataUrl, `${f.issuer}/.well-known/oauth-protected-resource/v1/mcp/${f.credential}`);
  const pr = await (await fetch(metadataUrl)).json() as Record<string, unknown>;
  t.deepEqual(pr.resource, f.resource);
  t.deepEqual(pr.authorization_servers, [f.issuer]);
  const as = await (await fetch(`${f.issuer}/.well-known/oauth-authorization-server`)).json() as Record<string, unknown>;
  t.is(as.issuer, f.issuer);
  t.deepEqual(as.code_challenge_methods_supported, ['S256']);
  t.is(as.client_id_metadata_document_supported, true);
  t.is(as.revocation_endpoint, `${f.issuer}/v1/oauth/revoke`);
  t.is((await fetch(`${f.issuer}/v1/mcp/not-a-credential`)).status, 404);
});

test('a consented token lists and calls only the consented tools, at its own route alone; a ptok of the credential works there too', async (t) => {
  const f = await startMcpAuth(t);
  const tokens = await authorizedTokens(f, ['get_issue', 'list_issues']);
  t.regex(tokens.access, /^ptok_/);
  const list = await fetch(f.resource, { method: 'POST', headers: { authorization: `Bearer ${tokens.access}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) });
  t.is(list.status, 200);
  await list.text();
  // The access token is recorded with its principal (the org token's id) and the consented tools.
  const listed = await api(f.app, 'GET', '/v1/tokens', { token: f.org.token });
  const record = listed.body.data.find((x: { name?: string }) => x.name === 'MCP test client');
  t.truthy(record, 'the access token is listed under its client\'s name');
  t.is(await mcpStatus(`${f.issuer}/v1/proxy/mcp/`, tokens.access), 401, 'an OAuth token is not accepted on /v1/proxy');
  const ptok = await mintToken(f.app, f.org, f.credential, '15m');
  t.is(await mcpStatus(f.resource, ptok.token), 200, 'a ptok of the credential is accepted on its MCP route');
  t.is(await mcpStatus(`${f.issuer}/v1/proxy/mcp/`, ptok.token), 200, '/v1/proxy works with a ptok as before');
});

test('a token for another route is refused there, whatever the route', async (t) => {
  const f = await startMcpAuth(t);
  const other = await createCredential(f.app, f.org, 'github-mcp', canaryKey('ghmcp2'));
  const tokens = await authorizedTokens(f);
  t.is(await mcpStatus(`${f.issuer}/v1/mcp/${other}`, tokens.access), 401, 'another credential\'s route refuses it');
  const otherPtok = await mintToken(f.app, f.org, other, '15m');
  t.is(await mcpStatus(f.resource, otherPtok.token), 401, 'a ptok of another credential is refused');
  t.is(await mcpStatus(f.resource, tokens.access), 200);
});

test('a wrong resource is refused: at the authorization (invalid_target to the redirect URI) and at the token endpoint', async (t) => {
  const f = await startMcpAuth(t);
  const redirectUri = 'http://127.0.0.1:47123/callback';
  const clientId = await registerClient(f, redirectUri);
  const { challenge } = pkce();
  for (const resource of ['https://elsewhere.example/v1/mcp/' + f.credential, `${f.issuer}/v1/proxy/mcp/`, `${f.issuer}/v1/mcp/cred_x`]) {
    const res = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri, challenge, resource })}`, { redirect: 'manual' });
    t.is(res.status, 303, resource);
    const location = new URL(res.headers.get('location')!);
    t.is(location.origin + location.pathname, redirectUri);
    t.is(location.searchParams.get('error'), 'invalid_target');
    t.is(location.searchParams.get('state'), 'st-1');
  }
  const tokens = await authorizedTokens(f);
  const refreshed = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: tokens.refresh, client_id: tokens.clientId, resource: `${f.issuer}/v1/mcp/cred_4kT9bQ2mXw7Zr1sVc8NpL3aY` });
  t.is(refreshed.status, 400);
  t.is(refreshed.body.error, 'invalid_target');
});

test('PKCE: a wrong verifier is refused, plain and missing challenges never reach the consent page', async (t) => {
  const f = await startMcpAuth(t);
  const redirectUri = 'http://127.0.0.1:47123/callback';
  const clientId = await registerClient(f, redirectUri);
  const { challenge } = pkce();
  const done = await authorizeOverHttp(f, { clientId, redirectUri, challenge, resource: f.resource }, f.org.token);
  const code = new URL(done.location!).searchParams.get('code')!;
  const wrong = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: pkce().verifier, redirect_uri: redirectUri, client_id: clientId });
  t.is(wrong.status, 400);
  t.is(wrong.body.error, 'invalid_grant');
  t.regex(String(wrong.body.error_description), /PKCE/);
  const q = authorizeQuery({ clientId, redirectUri, challenge, resource: f.resource });
  q.set('code_challenge_method', 'plain');
  const plain = await fetch(`${f.issuer}/v1/oauth/authorize?${q}`, { redirect: 'manual' });
  t.is(plain.status, 303);
  t.is(new URL(plain.headers.get('location')!).searchParams.get('error'), 'invalid_request');
});

test('a redirect URI the client does not list gets an error page, never a redirect', async (t) => {
  const f = await startMcpAuth(t);
  const clientId = await registerClient(f, 'http://127.0.0.1:47123/callback');
  const { challenge } = pkce();
  for (const redirectUri of ['https://attacker.example/cb', 'http://127.0.0.1:47123/other']) {
    const res = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri, challenge, resource: f.resource })}`, { redirect: 'manual' });
    t.is(res.status, 400, redirectUri);
    t.is(res.headers.get('location'), null);
    t.regex(await res.text(), /not one the client lists/);
  }
  // A loopback redirect URI may name another port (RFC 8252 §7.3).
  const other = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri: 'http://127.0.0.1:5999/callback', challenge, resource: f.resource })}`, { redirect: 'manual' });
  t.is(other.status, 200);
  await other.text();
  const bad = await api(f.issuer, 'POST', '/v1/oauth/register', { body: { redirect_uris: ['javascript:alert(1)'] } });
  t.is(bad.status, 400);
  t.is(bad.body.error, 'invalid_redirect_uri');
});

test('client metadata documents: one on loopback (test setting) is used; one on a private address is refused before any connection', async (t) => {
  const f = await startMcpAuth(t);
  let docUrl = '';
  docUrl = await listen(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ client_id: `${docUrl}/client.json`, client_name: 'Doc Client', redirect_uris: ['http://127.0.0.1:47124/cb'], token_endpoint_auth_method: 'none' }));
  });
  const clientId = `${docUrl}/client.json`;
  const { verifier, challenge } = pkce();
  const done = await authorizeOverHttp(f, { clientId, redirectUri: 'http://127.0.0.1:47124/cb', challenge, resource: f.resource }, f.org.token, ['get_issue']);
  t.is(done.status, 303);
  const code = new URL(done.location!).searchParams.get('code')!;
  const res = await tokenRequest(f, { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:47124/cb', client_id: clientId });
  t.is(res.status, 200);
  for (const privateDoc of ['https://10.0.0.7/client.json', 'https://192.168.1.20/c.json', 'https://[fd00::1]/c.json', 'https://169.254.169.254/latest/c.json', 'http://10.0.0.7/client.json']) {
    const page = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId: privateDoc, redirectUri: 'https://app.example/cb', challenge, resource: f.resource })}`, { redirect: 'manual' });
    t.is(page.status, 400, privateDoc);
    t.is(page.headers.get('location'), null);
    t.regex(await page.text(), /not a public address|https only/, privateDoc);
  }
});

test('a replayed code is refused and revokes the token already issued from it', async (t) => {
  const f = await startMcpAuth(t);
  const tokens = await authorizedTokens(f);
  t.is(await mcpStatus(f.resource, tokens.access), 200);
  const replay = await tokenRequest(f, { grant_type: 'authorization_code', code: tokens.code, code_verifier: tokens.verifier, redirect_uri: tokens.redirectUri, client_id: tokens.clientId });
  t.is(replay.status, 400);
  t.is(replay.body.error, 'invalid_grant');
  t.is(await mcpStatus(f.resource, tokens.access), 401, 'the first redemption\'s access token is revoked');
  const refresh = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: tokens.refresh, client_id: tokens.clientId });
  t.is(refresh.body.error, 'invalid_grant', 'and its refresh token');
});

test('refresh tokens rotate; a spent one revokes its family; RFC 7009 revokes; revokePrincipal ends every grant of a principal', async (t) => {
  const f = await startMcpAuth(t);
  const first = await authorizedTokens(f);
  const second = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: first.refresh, client_id: first.clientId, resource: f.resource });
  t.is(second.status, 200);
  t.not(second.body.refresh_token, first.refresh);
  t.is(await mcpStatus(f.resource, second.body.access_token as string), 200);
  const reuse = await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: first.refresh, client_id: first.clientId });
  t.is(reuse.body.error, 'invalid_grant');
  t.is(await mcpStatus(f.resource, second.body.access_token as string), 401, 'the family is revoked');
  t.is(await mcpStatus(f.resource, first.access), 401);
  t.is((await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: second.body.refresh_token as string })).body.error, 'invalid_grant');

  const other = await authorizedTokens(f);
  const revoked = await fetch(`${f.issuer}/v1/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token: other.access }) });
  t.is(revoked.status, 200);
  t.is(await mcpStatus(f.resource, other.access), 401, 'RFC 7009 revoked the access token');
  t.is((await fetch(`${f.issuer}/v1/oauth/revoke`, { method: 'POST', body: new URLSearchParams({ token: 'whatever' }) })).status, 200, 'an unknown token is answered the same');

  const third = await authorizedTokens(f);
  const auth = f.app.server.mcpAuthorization!;
  const principal = (await api(f.app, 'GET', '/v1/orgs/self', { token: f.org.token })).body;
  t.truthy(principal);
  const listed = await api(f.app, 'GET', '/v1/tokens', { token: f.org.token });
  const creator = listed.body.data.find((x: { name?: string }) => x.name === 'MCP test client')?.created_by as string;
  t.regex(creator, /^otk_/, 'the token records the principal that consented');
  t.true(await auth.revokePrincipal(creator) >= 1);
  t.is(await mcpStatus(f.resource, third.access), 401, 'the principal\'s access tokens end');
  t.is((await tokenRequest(f, { grant_type: 'refresh_token', refresh_token: third.refresh })).body.error, 'invalid_grant', 'and its refresh tokens');
});

test('sign-in refusals stay on the page: a wrong token, a viewer key', async (t) => {
  const f = await startMcpAuth(t);
  const redirectUri = 'http://127.0.0.1:47123/callback';
  const clientId = await registerClient(f, redirectUri);
  const { challenge } = pkce();
  const wrong = await authorizeOverHttp(f, { clientId, redirectUri, challenge, resource: f.resource }, 'otok_wrong');
  t.is(wrong.status, 401);
  t.regex(wrong.html, /not a valid organisation token/);
  const viewer = await api(f.app, 'POST', '/v1/admin-keys', { token: f.org.token, body: { name: 'ro', role: 'viewer' } });
  const asViewer = await authorizeOverHttp(f, { clientId, redirectUri, challenge, resource: f.resource }, viewer.body.token);
  t.is(asViewer.status, 401);
  t.regex(asViewer.html, /viewer key may not/);
  t.false(asViewer.html.includes(viewer.body.token), 'the presented key is never echoed');
});

test('with MCP authorization on, /v1/openapi.json documents the MCP route, its documents, the page and the token endpoints', async (t) => {
  const f = await startMcpAuth(t);
  const doc = await (await fetch(`${f.issuer}/v1/openapi.json`)).json() as { paths: Record<string, Record<string, { security?: unknown[]; tags?: string[] }>> };
  for (const [path, methods] of Object.entries({
    '/v1/mcp/{credential_id}': ['get', 'post', 'delete'], '/.well-known/oauth-protected-resource/v1/mcp/{credential_id}': ['get'],
    '/.well-known/oauth-authorization-server': ['get'], '/v1/oauth/authorize': ['get', 'post'], '/v1/oauth/token': ['post'], '/v1/oauth/register': ['post'], '/v1/oauth/revoke': ['post'],
  })) {
    for (const m of methods) t.deepEqual(doc.paths[path]?.[m]?.tags, ['mcp-authorization'], `${m} ${path}`);
  }
  t.deepEqual(doc.paths['/v1/oauth/token']!.post!.security, []);
});
