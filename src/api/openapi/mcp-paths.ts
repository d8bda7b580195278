/**
 * The paths of Keyward's MCP routes that are not admin routes (those are the token, registration and revocation
 * endpoints, documented from the route table): the MCP route itself, its protected-resource metadata (RFC 9728),
 * the authorization server's metadata (RFC 8414) and the authorization page. Served when KEYWARD_ISSUER_URL is set
 * without a path.
 */
import { errorResponse, ref } from './responses.js';
import type { PathItem } from './operations.js';

const CREDENTIAL = { name: 'credential_id', in: 'path', required: true, description: 'An MCP server credential\'s id (`cred_…`).', schema: { type: 'string', pattern: '^cred_[0-9A-Za-z]{24}$' } } as const;
const none: Array<Record<string, string[]>> = [];
const document = (description: string) => ({ description, headers: { 'access-control-allow-origin': { schema: { type: 'string', const: '*' } } }, content: { 'application/json': { schema: { type: 'object' } } } });

function mcpOperation(method: string): Record<string, unknown> {
  return {
    operationId: `mcp${method[0]!.toUpperCase()}${method.slice(1)}`,
    summary: `${method.toUpperCase()} an MCP server (Streamable HTTP) through its own route`,
    description: [
      'The credential\'s MCP server, at the endpoint its provider declares (GitHub\'s `mcp/`), with the stored key injected, under the same stages as `/v1/proxy/…` (tools scope, tools/list filtered, each tools/call counted).',
      'Takes `Authorization: Bearer` with an OAuth access token whose audience is exactly this route (from `/v1/oauth/token`), or a `ptok_` of this credential. Without one: 401 with `WWW-Authenticate: Bearer realm="keyward", resource_metadata="<issuer>/.well-known/oauth-protected-resource/v1/mcp/<credential id>"`, where an MCP client starts its sign-in.',
    ].join('\n\n'),
    tags: ['mcp-authorization'],
    security: [{ proxyBearer: [] }],
    responses: {
      default: { description: 'The MCP server\'s answer (JSON or an event stream), masked.', content: { 'application/json': { schema: {} }, 'text/event-stream': { schema: { type: 'string' } } } },
      '401': errorResponse(['invalid_token'], 'No token accepted for this route; the challenge names its protected-resource metadata.', { 'www-authenticate': ref('headers', 'WwwAuthenticate') }),
      '403': errorResponse(['path_not_allowed'], 'The credential is not an MCP server\'s.', {}),
      '404': errorResponse(['not_found'], 'The path names no credential id.', {}),
    },
  };
}

export function mcpPaths(): Record<string, PathItem> {
  return {
    '/v1/mcp/{credential_id}': { parameters: [CREDENTIAL], get: mcpOperation('get'), post: mcpOperation('post'), delete: mcpOperation('delete') },
    '/.well-known/oauth-protected-resource/v1/mcp/{credential_id}': {
      get: {
        operationId: 'mcpProtectedResource', summary: 'An MCP route\'s protected-resource metadata (RFC 9728)', tags: ['mcp-authorization'], security: none, parameters: [CREDENTIAL],
        responses: { '200': document('`resource` (the route\'s URL, an access token\'s audience) and `authorization_servers` (this issuer).') },
      },
    },
    '/.well-known/oauth-authorization-server': {
      get: {
        operationId: 'mcpAuthorizationServer', summary: 'The authorization server\'s metadata (RFC 8414)', tags: ['mcp-authorization'], security: none,
        responses: { '200': document('The endpoints; `code_challenge_methods_supported: ["S256"]`, public clients only, `client_id_metadata_document_supported: true`.') },
      },
    },
    '/v1/oauth/authorize': {
      get: {
        operationId: 'mcpAuthorize', summary: 'The authorization page: sign in, then consent to the tools the token will allow', tags: ['mcp-authorization'], security: none,
        description: 'Query: `response_type=code`, `client_id` (a registered `mcpc_…` or a Client ID Metadata Document\'s https URL), `redirect_uri` (one the client lists), `code_challenge` with `code_challenge_method=S256`, `resource` (`<issuer>/v1/mcp/<credential id>`), `state`. The person signs in with the organisation token or an admin or minter key; the page lists the MCP server\'s tools (its own tools/list, asked with the stored key), each ticked; Allow redirects with `code`, `state` and `iss`. Consent is asked at every authorization.',
        responses: {
          '200': { description: 'The sign-in or consent page.', content: { 'text/html': { schema: { type: 'string' } } } },
          '303': { description: 'A refusal after the client and redirect URI were checked (`error=invalid_target`, `invalid_request`, `unsupported_response_type`, `access_denied`), sent to the redirect URI; or, from the consent form, the code.' },
          '400': { description: 'An unknown client, a metadata document that cannot be used (not https, a private address, another `client_id`), or a redirect URI the client does not list: an error page, never a redirect.', content: { 'text/html': { schema: { type: 'string' } } } },
        },
      },
      post: {
        operationId: 'mcpAuthorizeForm', summary: 'The authorization page\'s forms (sign in, consent)', tags: ['mcp-authorization'], security: none,
        requestBody: { required: true, content: { 'application/x-www-form-urlencoded': { schema: { type: 'object' } } } },
        responses: {
          '200': { description: 'The consent page.', content: { 'text/html': { schema: { type: 'string' } } } },
          '303': { description: 'To the redirect URI: the code, or the refusal.' },
          '400': { description: 'An error page.', content: { 'text/html': { schema: { type: 'string' } } } },
          '401': { description: 'The sign-in page again: the token was not accepted.', content: { 'text/html': { schema: { type: 'string' } } } },
        },
      },
    },
  };
}
