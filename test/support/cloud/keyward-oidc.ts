/**
 * What the fake clouds share to trust Keyward as an OpenID Connect issuer the way AWS, Entra ID and
 * Google do: the issuer's discovery document fetched over HTTP from `<iss>/.well-known/openid-configuration`
 * (its `issuer` must be exactly `iss`), then its `jwks_uri`, fetched anew for every token (so a key
 * Keyward stops publishing is refused at once), and the JWT checked with jose: RS256 only, `iss`,
 * `aud`, `exp`/`nbf` on the test's clock, and a `sub`. Any failure is a Refusal with the reason.
 *
 * And the front: a plain HTTP relay bound before the gateway starts, so KEYWARD_ISSUER_URL can name
 * a port the gateway does not know yet (as a load balancer stands in front of Cloud Run).
 */
import type { ExecutionContext } from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import type { Clock } from '../../../src/clock.js';

export class Refusal extends Error {}

export interface OidcFetchCount {
  discovery: number;
  jwks: number;
}

/** Fetches a JSON document over HTTP (bounded), or refuses. */
async function fetchJson(url: string): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000), redirect: 'error' });
  } catch {
    throw new Refusal(`could not fetch ${url}`);
  }
  if (res.status !== 200) throw new Refusal(`${url} answered ${res.status}`);
  try {
    return await res.json() as Record<string, unknown>;
  } catch {
    throw new Refusal(`${url} is not JSON`);
  }
}

/**
 * Verifies `jwt` against the issuer it names, which must be one of `trustedIssuers`, for `audience`; returns its claims.
 * `fetched` counts the documents read.
 */
export async function verifyKeywardJwt(jwt: string, trustedIssuers: readonly string[], audience: string | readonly string[], clock: Clock | undefined, fetched?: OidcFetchCount): Promise<JWTPayload> {
  let iss: unknown;
  try {
    iss = decodeJwt(jwt).iss;
  } catch {
    throw new Refusal('not a JWT');
  }
  if (typeof iss !== 'string' || !trustedIssuers.includes(iss)) throw new Refusal(`no trusted identity provider for issuer ${String(iss)}`);
  const discovery = await fetchJson(`${iss}/.well-known/openid-configuration`);
  if (fetched) fetched.discovery++;
  if (discovery.issuer !== iss || typeof discovery.jwks_uri !== 'string') throw new Refusal('discovery document does not match the issuer');
  const jwks = await fetchJson(discovery.jwks_uri);
  if (fetched) fetched.jwks++;
  try {
    const { payload } = await jwtVerify(jwt, createLocalJWKSet(jwks as never), {
      issuer: iss, audience: audience as string | string[], algorithms: ['RS256'], requiredClaims: ['sub', 'exp', 'iat'],
      ...(clock ? { currentDate: new Date(clock.now()) } : {}),
    });
    return payload;
  } catch (err) {
    throw new Refusal((err as { code?: string }).code ?? 'invalid token');
  }
}

export interface IssuerFront {
  url: string;
  /** Where requests go from now on (the gateway's URL). */
  point(target: string): void;
  /** Requests relayed so far, by path. */
  paths: string[];
}

export async function startIssuerFront(t: ExecutionContext): Promise<IssuerFront> {
  let target: URL | undefined;
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(req.url ?? '');
    if (!target) return void res.writeHead(503).end();
    const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: { ...req.headers, host: target.host } }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    point: (to) => (target = new URL(to)),
    paths,
  };
}

/** Reads a request's body whole. */
export function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Listens on 127.0.0.1:0; the URL and a teardown that closes every connection. */
export async function listen(t: ExecutionContext, handler: http.RequestListener): Promise<string> {
  const server = http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => {
    server.closeAllConnections();
    server.close(() => r());
  }));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
