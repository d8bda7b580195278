/**
 * A fake Google STS and iamcredentials on one 127.0.0.1:0 server, trusting as a workload identity
 * pool does:
 * - `POST /v1/token` (KEYWARD_GOOGLE_STS_URI): an RFC 8693 token exchange whose `audience` must be a
 *   provider it knows; the subject token is verified like Google does (keyward-oidc.ts: the
 *   provider's issuer, discovery and JWKS over HTTP, RS256, its allowed audience, exp) and its
 *   attribute condition (`sub` equal to the one the provider admits) must hold; it answers a
 *   federated access token for principal://…/subject/<sub>.
 * - `POST /v1/projects/-/serviceAccounts/<email>:generateAccessToken` (KEYWARD_GOOGLE_IAM_CREDENTIALS_URI):
 *   the Bearer must be a federated token it issued and not expired, and its principal must hold
 *   roles/iam.workloadIdentityUser on that service account; it answers the account's token.
 * Refusals in Google's shapes (OAuth errors from STS, `{error: {code, message, status}}` from IAM).
 * Every token issued goes into the shared IssuedTokens the fake Vertex accepts.
 */
import type { ExecutionContext } from 'ava';
import type { ServerResponse } from 'node:http';
import type { Clock } from '../../../src/clock.js';
import type { IssuedTokens } from './google-auth.js';
import { listen, readBody, verifyKeywardJwt, type OidcFetchCount } from './keyward-oidc.js';

export interface PoolProvider {
  issuer: string;
  /** `attribute.condition`: the only `sub` this provider admits (docs/operate/identity.md makes one provider per organisation). */
  subject: string;
  /** Allowed audiences; default the provider's full name. */
  audiences?: string[];
}

export interface FakeGoogleSts {
  url: string;
  /** KEYWARD_GOOGLE_STS_URI */
  stsUri: string;
  /** Provider full name (//iam.googleapis.com/projects/…/providers/…) → its trust. */
  providers: Map<string, PoolProvider>;
  /** Service account email → the principals allowed to impersonate it. */
  serviceAccounts: Map<string, Set<string>>;
  /** Federated tokens issued → their principal and expiry (wall clock). */
  federated: Map<string, { principal: string; expiresAt: number }>;
  subjectTokens: string[];
  exchanges: number;
  impersonations: number;
  refusals: string[];
  fetched: OidcFetchCount;
  delayMs: number;
}

/** The principal Google gives a federated token: principal://iam.googleapis.com/<pool>/subject/<sub>. */
export const principalOf = (provider: string, subject: string): string =>
  `principal://iam.googleapis.com/${provider.replace(/^\/\/iam\.googleapis\.com\//, '').replace(/\/providers\/[^/]+$/, '')}/subject/${subject}`;

export async function startFakeGoogleSts(t: ExecutionContext, issued: IssuedTokens, clock?: Clock): Promise<FakeGoogleSts> {
  const g: FakeGoogleSts = {
    url: '', stsUri: '', providers: new Map(), serviceAccounts: new Map(), federated: new Map(), subjectTokens: [], exchanges: 0, impersonations: 0, refusals: [],
    fetched: { discovery: 0, jwks: 0 }, delayMs: 0,
  };
  const oauthError = (res: ServerResponse, error: string, description: string) => {
    g.refusals.push(`${error}: ${description}`);
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error, error_description: description }));
  };
  const apiError = (res: ServerResponse, code: number, status: string, message: string) => {
    g.refusals.push(`${status}: ${message}`);
    res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code, message, status } }));
  };
  g.url = await listen(t, async (req, res) => {
    const body = await readBody(req);
    if (g.delayMs > 0) await new Promise((r) => setTimeout(r, g.delayMs));
    if (req.method === 'POST' && req.url === '/v1/token') {
      g.exchanges++;
      const form = new URLSearchParams(body);
      const jwt = form.get('subject_token') ?? '';
      g.subjectTokens.push(jwt);
      if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:token-exchange') return oauthError(res, 'unsupported_grant_type', 'grant_type');
      if (form.get('subject_token_type') !== 'urn:ietf:params:oauth:token-type:jwt') return oauthError(res, 'invalid_request', 'subject_token_type must be urn:ietf:params:oauth:token-type:jwt');
      const name = form.get('audience') ?? '';
      const provider = g.providers.get(name);
      if (!provider) return oauthError(res, 'invalid_target', `The target service indicated by the "audience" parameters is invalid. This might either be because the pool or provider is disabled or deleted or because it doesn't exist.`);
      let claims;
      try {
        claims = await verifyKeywardJwt(jwt, [provider.issuer], provider.audiences ?? [name], clock, g.fetched);
      } catch (err) {
        return oauthError(res, 'invalid_grant', `The ID Token could not be verified: ${(err as Error).message}.`);
      }
      if (claims.sub !== provider.subject) return oauthError(res, 'unauthorized_client', 'The given credential is rejected by the attribute condition.');
      const token = issued.issue('fed');
      g.federated.set(token, { principal: principalOf(name, String(claims.sub)), expiresAt: Date.now() + 3600_000 });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        access_token: token, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600,
      }));
      return;
    }
    const sa = /^\/v1\/projects\/-\/serviceAccounts\/([^/:]+):generateAccessToken$/.exec(req.url ?? '');
    if (req.method === 'POST' && sa) {
      g.impersonations++;
      const email = decodeURIComponent(sa[1]!);
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      const fed = g.federated.get(bearer);
      if (!fed || Date.now() >= fed.expiresAt) return apiError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.');
      if (!g.serviceAccounts.get(email)?.has(fed.principal)) {
        return apiError(res, 403, 'PERMISSION_DENIED', 'Permission \'iam.serviceAccounts.getAccessToken\' denied on resource (or it may not exist).');
      }
      let request: { scope?: unknown; lifetime?: unknown } = {};
      try {
        request = JSON.parse(body);
      } catch { /* refused below */ }
      if (!Array.isArray(request.scope) || !request.scope.includes('https://www.googleapis.com/auth/cloud-platform')) return apiError(res, 400, 'INVALID_ARGUMENT', 'scope');
      const lifetimeS = Number(/^(\d+)s$/.exec(String(request.lifetime ?? '3600s'))?.[1] ?? 3600);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        accessToken: issued.issue('sa'), expireTime: new Date(Date.now() + lifetimeS * 1000).toISOString(),
      }));
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
  });
  g.stsUri = `${g.url}/v1/token`;
  return g;
}
