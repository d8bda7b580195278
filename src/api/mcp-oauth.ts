/**
 * The JSON endpoints of Keyward's authorization server for its MCP routes (the pages and metadata are the front
 * door's, src/http/mcp-front-door.ts): POST /v1/oauth/token, /v1/oauth/register (RFC 7591), /v1/oauth/revoke
 * (RFC 7009). No org token: PKCE, the code and the refresh token are the proof. Form or JSON bodies, refusals in
 * RFC 6749's shape. Registered only when MCP authorization is on.
 */
import type { Router } from '../http/router.js';
import type { McpAuthorization } from '../identity/mcp-auth/authorization.js';
import type { McpClients } from '../identity/mcp-auth/clients.js';
import { MCP_REGISTRATION, MCP_REVOCATION, MCP_TOKEN, McpClientInformation, McpRevocationResponse, McpTokenResponse } from './schemas/mcp-oauth.js';

export function registerMcpOAuth(router: Router, auth: McpAuthorization, clients: McpClients): void {
  router.add('POST', '/v1/oauth/token', {
    auth: 'none', body: MCP_TOKEN, forms: true, errorFormat: 'oauth',
    operationId: 'mcpToken', tag: 'mcp-authorization', summary: 'Redeem an authorization code or a refresh token for an MCP route\'s access token',
    description: [
      'authorization_code: the code (60 s, once), its redirect_uri, the PKCE code_verifier (S256) and the client_id it was issued to. A code used a second time revokes every token issued from it.',
      'refresh_token: the newest refresh token of the grant; it is spent and a new one returned. Presenting a spent one revokes the grant and every token from it.',
      'The access token is accepted only at its MCP route and allows only the consented tools.',
    ].join('\n\n'),
    response: { status: 200, schema: McpTokenResponse, description: 'An access token and the next refresh token.' },
  }, async (r) => ({ status: 200, body: await auth.token(await r.body() as Record<string, unknown>, r) }));

  router.add('POST', '/v1/oauth/register', {
    auth: 'none', body: MCP_REGISTRATION, errorFormat: 'oauth', action: 'mcp_client.register',
    operationId: 'mcpRegisterClient', tag: 'mcp-authorization', summary: 'Register an MCP client (RFC 7591 dynamic registration)',
    description: 'For clients without a Client ID Metadata Document (which Keyward prefers: a `client_id` that is the document\'s https URL needs no registration). Every client is public: no secret is issued.',
    response: { status: 201, schema: McpClientInformation, description: 'The client\'s id and metadata.' },
  }, async (r) => {
    const c = await clients.register(await r.body() as Record<string, unknown>);
    return {
      status: 201,
      // On the audit trail of no organisation (registration is anonymous): the client's id.
      target: c.id,
      body: {
        client_id: c.id, client_id_issued_at: Math.floor(c.createdAt / 1000), client_name: c.name, redirect_uris: c.redirectUris,
        token_endpoint_auth_method: 'none' as const, grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      },
    };
  });

  router.add('POST', '/v1/oauth/revoke', {
    auth: 'none', body: MCP_REVOCATION, forms: true, errorFormat: 'oauth',
    operationId: 'mcpRevoke', tag: 'mcp-authorization', summary: 'Revoke an MCP route\'s access token or a refresh token (RFC 7009)',
    description: 'A refresh token revokes its whole grant (every access token from it). An unknown or spent token is answered the same.',
    response: { status: 200, schema: McpRevocationResponse, description: 'Revoked, or nothing to revoke.' },
  }, async (r) => {
    await auth.revoke(await r.body() as Record<string, unknown>, r);
    return { status: 200, body: {} };
  });
}
