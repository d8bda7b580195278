/**
 * CORS for MCP clients in a browser page: the metadata documents and the token, registration and revocation
 * endpoints answer any origin (preflight, answers and refusals alike), never with credentials allowed; the
 * authorization page and every admin route answer none.
 */
import test from 'ava';
import { api } from '../support/app.js';
import { authorizeQuery, pkce, registerClient, startMcpAuth } from './fixture.js';

const ORIGIN = 'https://mcp-client.example';

test('the metadata, token, registration and revocation endpoints are readable from any origin; admin routes and the page are not', async (t) => {
  const f = await startMcpAuth(t);
  const metadata = [`/.well-known/oauth-protected-resource/v1/mcp/${f.credential}`, '/.well-known/oauth-authorization-server'];
  for (const path of metadata) {
    const pre = await fetch(`${f.issuer}${path}`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' } });
    t.is(pre.status, 204, path);
    t.is(pre.headers.get('access-control-allow-origin'), '*');
    t.regex(pre.headers.get('access-control-allow-headers') ?? '', /mcp-protocol-version/);
    const doc = await fetch(`${f.issuer}${path}`, { headers: { origin: ORIGIN } });
    await doc.text();
    t.is(doc.headers.get('access-control-allow-origin'), '*', path);
  }

  for (const path of ['/v1/oauth/token', '/v1/oauth/register', '/v1/oauth/revoke']) {
    const pre = await fetch(`${f.issuer}${path}`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    t.is(pre.status, 204, path);
    t.is(pre.headers.get('access-control-allow-origin'), '*');
    t.is(pre.headers.get('access-control-allow-methods'), 'POST');
    t.regex(pre.headers.get('access-control-allow-headers') ?? '', /content-type/);
    t.is(pre.headers.get('access-control-allow-credentials'), null, 'credentials are never allowed');
  }
  const registered = await fetch(`${f.issuer}/v1/oauth/register`, {
    method: 'POST', headers: { origin: ORIGIN, 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'browser client', redirect_uris: ['http://127.0.0.1:47123/callback'], token_endpoint_auth_method: 'none' }),
  });
  t.is(registered.status, 201);
  t.is(registered.headers.get('access-control-allow-origin'), '*');
  await registered.text();
  const refused = await fetch(`${f.issuer}/v1/oauth/token`, { method: 'POST', headers: { origin: ORIGIN }, body: new URLSearchParams({ grant_type: 'password' }) });
  t.is(refused.status, 400);
  t.is(refused.headers.get('access-control-allow-origin'), '*', 'a refusal is readable too');
  t.is((await refused.json() as { error: string }).error, 'unsupported_grant_type');
  const revoked = await fetch(`${f.issuer}/v1/oauth/revoke`, { method: 'POST', headers: { origin: ORIGIN }, body: new URLSearchParams({ token: 'unknown' }) });
  await revoked.text();
  t.is(revoked.headers.get('access-control-allow-origin'), '*');

  // None elsewhere: admin routes (answers and preflights), the authorization page.
  const audit = await api(f.issuer, 'GET', '/v1/audit', { token: f.org.token, headers: { origin: ORIGIN } });
  t.is(audit.status, 200);
  t.is(audit.headers.get('access-control-allow-origin'), null);
  for (const path of ['/v1/tokens', '/v1/credentials', '/v1/admin-keys']) {
    const pre = await fetch(`${f.issuer}${path}`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST' } });
    await pre.text();
    t.is(pre.headers.get('access-control-allow-origin'), null, path);
  }
  const clientId = await registerClient(f);
  const page = await fetch(`${f.issuer}/v1/oauth/authorize?${authorizeQuery({ clientId, redirectUri: 'http://127.0.0.1:47123/callback', challenge: pkce().challenge, resource: f.resource })}`, { headers: { origin: ORIGIN } });
  await page.text();
  t.is(page.status, 200);
  t.is(page.headers.get('access-control-allow-origin'), null, 'the page is navigated to, never read cross-origin');
});
