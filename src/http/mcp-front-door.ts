/**
 * Keyward's MCP routes and the documents and pages around them, when MCP authorization is on (KEYWARD_ISSUER_URL
 * set, without a path): any method on `/v1/mcp/<credential id>` goes to the gateway with the credential fixed;
 * `GET /.well-known/oauth-protected-resource/v1/mcp/<credential id>` (RFC 9728) and `GET
 * /.well-known/oauth-authorization-server` (RFC 8414) are public JSON documents; `/v1/oauth/authorize` (GET, and
 * POST from its own forms) signs the principal in and asks for consent. The token, registration and revocation
 * endpoints are admin routes (src/api/mcp-oauth.ts). Refusals on the pages: a client or redirect URI that cannot
 * be trusted gets an error page (never a redirect); anything after that goes back to the client's redirect URI.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { clientAddress } from '../controls/client-address.js';
import { isId } from '../ids.js';
import type { Logger } from '../log.js';
import { AuthorizeRedirect, type AuthorizeRequest, type McpAuthorization } from '../identity/mcp-auth/authorization.js';
import { ClientRefusal } from '../identity/mcp-auth/clients.js';
import { SignInRefusal, type ConsentSignIn } from '../identity/mcp-auth/principals.js';
import { readRawBody } from './body.js';
import { consentPage, errorPage, signInPage, type PageRequest } from './consent-page.js';
import { sendError, sendJson } from './reply.js';
import { ApiError, Errors, toApiError } from '../errors.js';

export const MCP_PREFIX = '/v1/mcp/';
export const AUTHORIZE_PATH = '/v1/oauth/authorize';
export const TOKEN_PATH = '/v1/oauth/token';
export const REGISTER_PATH = '/v1/oauth/register';
export const REVOKE_PATH = '/v1/oauth/revoke';
const PR_PREFIX = '/.well-known/oauth-protected-resource';
const AS_PATH = '/.well-known/oauth-authorization-server';
/** The parameters an authorize request may carry back through the pages' forms. */
const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'state', 'code_challenge', 'code_challenge_method', 'resource', 'scope'];
const MAX_FORM = 64 * 1024;
/**
 * CORS, for MCP clients that run in a browser page: the metadata documents and the token, registration and
 * revocation endpoints may be read from any origin (they read no cookie, and credentials are never allowed). The
 * authorization page is navigated to, not fetched; admin routes get none of this.
 */
const CORS_POSTS = new Set([TOKEN_PATH, REGISTER_PATH, REVOKE_PATH]);
const preflightHeaders = (methods: string) => ({
  'access-control-allow-origin': '*', 'access-control-allow-methods': methods, 'access-control-allow-headers': 'content-type, mcp-protocol-version', 'access-control-max-age': '600',
});

/** The gateway's entry for an MCP route (src/gateway/entry/gateway.ts handleMcp). */
export interface McpProxy {
  handleMcp(req: IncomingMessage, res: ServerResponse, requestId: string, route: { credentialId: string; resource: string; metadataUrl: string }): void;
}

export class McpFrontDoor {
  constructor(
    private readonly issuer: string,
    private readonly auth: McpAuthorization,
    private readonly signIn: ConsentSignIn,
    private readonly proxy: McpProxy,
    private readonly log: Logger,
    /** KEYWARD_TRUSTED_PROXIES: the client address the audit trail records. */
    private readonly trustedProxies = 0,
  ) {}

  /** Whether this path is one of the front door's. */
  owns(path: string): boolean {
    return path.startsWith(MCP_PREFIX) || path.startsWith(PR_PREFIX) || path === AS_PATH || path === AUTHORIZE_PATH;
  }

  /**
   * The token, registration and revocation endpoints (the router serves them): their answers, refusals included,
   * readable from any origin, and their preflight answered here. True when it answered.
   */
  cors(req: IncomingMessage, res: ServerResponse, path: string): boolean {
    if (!CORS_POSTS.has(path)) return false;
    if (req.method !== 'OPTIONS') {
      res.setHeader('access-control-allow-origin', '*');
      return false;
    }
    req.resume();
    res.writeHead(204, preflightHeaders('POST'));
    res.end();
    return true;
  }

  metadataUrl(credentialId: string): string {
    return `${this.issuer}${PR_PREFIX}${MCP_PREFIX}${credentialId}`;
  }

  /** RFC 9728: the MCP route's resource URL and its one authorization server (this issuer). */
  protectedResource(credentialId: string): Record<string, unknown> {
    return { resource: this.auth.resourceOf(credentialId), authorization_servers: [this.issuer], bearer_methods_supported: ['header'], resource_name: 'Keyward MCP route' };
  }

  /** RFC 8414: the endpoints, PKCE S256 only, public clients, metadata documents and dynamic registration. */
  authorizationServer(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      authorization_endpoint: `${this.issuer}${AUTHORIZE_PATH}`,
      token_endpoint: `${this.issuer}${TOKEN_PATH}`,
      registration_endpoint: `${this.issuer}${REGISTER_PATH}`,
      revocation_endpoint: `${this.issuer}${REVOKE_PATH}`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    };
  }

  handle(req: IncomingMessage, res: ServerResponse, requestId: string, path: string, query: URLSearchParams): void {
    const method = req.method ?? 'GET';
    if (path.startsWith(MCP_PREFIX)) {
      const id = path.slice(MCP_PREFIX.length).replace(/\/$/, '');
      if (!isId('cred', id)) return this.refuse(req, res, requestId, Errors.notFound('No such MCP route: /v1/mcp/<credential id>.'));
      this.proxy.handleMcp(req, res, requestId, { credentialId: id, resource: this.auth.resourceOf(id), metadataUrl: this.metadataUrl(id) });
      return;
    }
    if (path === AUTHORIZE_PATH && (method === 'GET' || method === 'POST')) {
      void this.authorize(req, res, method === 'GET' ? query : undefined, requestId).catch((err: unknown) => this.failed(req, res, requestId, err));
      return;
    }
    if (method === 'OPTIONS' && (path === AS_PATH || path.startsWith(PR_PREFIX))) {
      req.resume();
      res.writeHead(204, { ...preflightHeaders('GET'), 'x-request-id': requestId });
      return void res.end();
    }
    if (method !== 'GET') return this.refuse(req, res, requestId, Errors.notFound('No such route.'));
    req.resume();
    const headers = { 'access-control-allow-origin': '*', 'x-request-id': requestId };
    if (path === AS_PATH) return sendJson(res, 200, this.authorizationServer(), headers);
    const id = path.slice(`${PR_PREFIX}${MCP_PREFIX}`.length);
    if (path.startsWith(`${PR_PREFIX}${MCP_PREFIX}`) && isId('cred', id)) return sendJson(res, 200, this.protectedResource(id), headers);
    sendError(res, Errors.notFound('No such protected resource.'), headers);
  }

  private refuse(req: IncomingMessage, res: ServerResponse, requestId: string, err: ApiError): void {
    req.resume();
    sendError(res, err, { 'x-request-id': requestId });
  }

  private failed(req: IncomingMessage, res: ServerResponse, requestId: string, err: unknown): void {
    if (!(err instanceof ApiError)) this.log.error({ err, request_id: requestId }, 'authorization page failed');
    if (!req.readableEnded) res.setHeader('connection', 'close');
    if (res.headersSent) return void res.destroy();
    const api = toApiError(err);
    errorPage(res, api.status, api.status >= 500 ? 'Keyward could not answer just now; try again.' : api.message);
  }

  /** GET: the request checked, then sign-in (or consent, for a principal signed in already). POST: the pages' forms. */
  private async authorize(req: IncomingMessage, res: ServerResponse, query: URLSearchParams | undefined, requestId: string): Promise<void> {
    let form: URLSearchParams | undefined;
    if (!query) {
      if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(req.headers['content-type'] ?? '')) throw Errors.invalidRequest('The authorization page posts a form.');
      form = new URLSearchParams((await readRawBody(req, MAX_FORM)).toString('utf8'));
    } else req.resume();
    const params = new URLSearchParams();
    for (const name of AUTHORIZE_PARAMS) for (const v of (query ?? form!).getAll(name)) params.append(name, v);
    let request: AuthorizeRequest;
    try {
      request = await this.auth.check(params);
    } catch (err) {
      if (err instanceof ClientRefusal) return errorPage(res, 400, err.message);
      if (err instanceof AuthorizeRedirect) return this.redirect(res, err.location);
      throw err;
    }
    const page: PageRequest = { clientName: request.client.name, clientId: request.client.id, resource: request.resource, params, action: AUTHORIZE_PATH };
    try {
      if (form?.get('step') === 'consent') {
        const allowed = form.get('decision') === 'allow' ? form.getAll('tools') : undefined;
        return this.redirect(res, await this.auth.decide(request, form.get('consent') ?? '', form.get('consent_secret') ?? '', allowed, { requestId, ip: clientAddress(req, this.trustedProxies) }));
      }
      let principal = await this.signIn.current(req.headers);
      if (!principal && form?.get('step') === 'signin') {
        try {
          principal = await this.signIn.fromForm({ token: form.get('token') ?? '' });
        } catch (err) {
          if (err instanceof SignInRefusal) return signInPage(res, page, err.message);
          throw err;
        }
      }
      if (!principal) return signInPage(res, page);
      const offer = await this.auth.offer(request, principal);
      consentPage(res, page, { id: offer.grantId, secret: offer.secret }, offer.tools, principal.shownAs);
    } catch (err) {
      if (err instanceof ClientRefusal) return errorPage(res, 400, err.message);
      if (err instanceof ApiError) throw err;
      // The upstream's tools/list failed: no consent can be asked without it.
      this.log.warn({ reason: (err as Error)?.message ?? 'unknown', credential_id: request.credentialId }, 'the MCP server\'s tools could not be listed for consent');
      errorPage(res, 502, 'The MCP server did not list its tools, so there is nothing to consent to yet. Try again later.');
    }
  }

  private redirect(res: ServerResponse, location: string): void {
    res.writeHead(303, { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer', 'content-length': '0' });
    res.end();
  }
}
