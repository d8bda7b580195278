/**
 * A fake Entra ID token endpoint on 127.0.0.1:0 (`POST /<tenant>/oauth2/v2.0/token`, as
 * AZURE_AUTHORITY_HOST names it) that grants client credentials only against a federated
 * credential, as Entra does: the app (client_id) must exist in that tenant and hold a federated
 * credential whose issuer, subject and audience match the client assertion, which it verifies
 * (keyward-oidc.ts: discovery and JWKS over HTTP, RS256, exp). Refusals are Entra's shape
 * (`error`, `error_description` with an AADSTS code, `error_codes`). Access tokens it issues go into
 * a set the fake Azure OpenAI accepts as Bearer. It keeps every assertion received.
 */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Clock } from '../../../src/clock.js';
import { listen, readBody, verifyKeywardJwt, type OidcFetchCount } from './keyward-oidc.js';

export interface FederatedIdentityCredential {
  issuer: string;
  subject: string;
  audiences: string[];
}

export interface EntraApp {
  tenant: string;
  federated: FederatedIdentityCredential[];
}

export interface FakeEntra {
  url: string;
  /** client_id → the app registration. */
  apps: Map<string, EntraApp>;
  /** Access tokens issued (the fake Azure OpenAI accepts these). */
  tokens: Set<string>;
  assertions: string[];
  calls: number;
  refusals: string[];
  fetched: OidcFetchCount;
  delayMs: number;
  /** Makes each access token (default: a random one). */
  issue: () => string;
}

export async function startFakeEntra(t: ExecutionContext, clock?: Clock): Promise<FakeEntra> {
  const entra: FakeEntra = {
    url: '', apps: new Map(), tokens: new Set(), assertions: [], calls: 0, refusals: [], fetched: { discovery: 0, jwks: 0 }, delayMs: 0,
    issue: () => `eyAz.${randomBytes(32).toString('base64url')}`,
  };
  const refuse = (res: ServerResponse, status: number, error: string, code: number, description: string) => {
    entra.refusals.push(`${error}: AADSTS${code}`);
    const body = JSON.stringify({ error, error_description: `AADSTS${code}: ${description} Trace ID: ${randomBytes(8).toString('hex')}`, error_codes: [code], timestamp: new Date().toISOString() });
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(body);
  };
  entra.url = await listen(t, async (req, res) => {
    const m = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(req.url ?? '');
    const form = new URLSearchParams(await readBody(req));
    if (!m || req.method !== 'POST') return void res.writeHead(404).end();
    entra.calls++;
    if (entra.delayMs > 0) await new Promise((r) => setTimeout(r, entra.delayMs));
    const assertion = form.get('client_assertion') ?? '';
    entra.assertions.push(assertion);
    if (form.get('grant_type') !== 'client_credentials') return refuse(res, 400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return refuse(res, 400, 'invalid_request', 900144, 'client_assertion_type is invalid.');
    if (form.get('scope') !== 'https://cognitiveservices.azure.com/.default') return refuse(res, 400, 'invalid_scope', 1002012, 'The provided value for scope is not valid.');
    const app = entra.apps.get(form.get('client_id') ?? '');
    if (!app || app.tenant !== decodeURIComponent(m[1]!)) {
      return refuse(res, 400, 'unauthorized_client', 700016, `Application with identifier '${form.get('client_id')}' was not found in the directory '${m[1]}'.`);
    }
    let claims;
    try {
      claims = await verifyKeywardJwt(assertion, app.federated.map((f) => f.issuer), 'api://AzureADTokenExchange', clock, entra.fetched);
    } catch (err) {
      return refuse(res, 401, 'invalid_client', 700211, `The client assertion could not be verified: ${(err as Error).message}.`);
    }
    const match = app.federated.find((f) => f.issuer === claims.iss && f.subject === claims.sub && f.audiences.includes(String(claims.aud)));
    if (!match) {
      return refuse(res, 400, 'invalid_client', 700213, `No matching federated identity record found for presented assertion subject '${String(claims.sub)}'. Please check your federated identity credential Subject, Audience and Issuer against the presented assertion.`);
    }
    const token = entra.issue();
    entra.tokens.add(token);
    const body = JSON.stringify({ token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: token });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(body);
  });
  return entra;
}
