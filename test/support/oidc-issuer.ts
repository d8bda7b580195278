/**
 * Test support: a real OIDC issuer on 127.0.0.1 and a free port. Keys are generated here with jose;
 * it serves its discovery document and JWKS over plain HTTP (the gateway allows that only with
 * KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK=1) and signs tokens shaped like GitHub Actions' OIDC tokens.
 * It counts discovery and JWKS requests, the most JWKS requests in flight at once, and can delay
 * its JWKS answers (to make concurrent exchanges overlap one fetch) or rotate to a new key.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export interface TestIssuer {
  /** The issuer URL (`iss`), e.g. http://127.0.0.1:12345 */
  url: string;
  /** The key tokens are signed with by default (the newest). */
  readonly current: SigningKey;
  discoveryRequests: number;
  jwksRequests: number;
  maxJwksInFlight: number;
  /** Delay before each JWKS answer. */
  jwksDelayMs: number;
  /** While set, every request is answered 503 (counted still). */
  down: boolean;
  /** Signs `claims` (over the GitHub-shaped defaults) at `nowMs`, with the current key or `key`. */
  sign(nowMs: number, claims?: JWTPayload, options?: { key?: SigningKey; lifetimeS?: number }): Promise<string>;
  /** A new key with a new kid; the JWKS then publishes only it (the old key retired). */
  rotate(): Promise<SigningKey>;
  close(): Promise<void>;
}

export async function newSigningKey(): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = randomUUID();
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

export const GITHUB_SUBJECT = 'repo:acme/app:ref:refs/heads/main';

export async function startIssuer(): Promise<TestIssuer> {
  let current = await newSigningKey();
  let inFlight = 0;
  let server: Server | undefined;
  const issuer: TestIssuer = {
    url: '',
    get current() {
      return current;
    },
    discoveryRequests: 0,
    jwksRequests: 0,
    maxJwksInFlight: 0,
    jwksDelayMs: 0,
    down: false,
    async sign(nowMs, claims = {}, options = {}) {
      const now = Math.floor(nowMs / 1000);
      const key = options.key ?? current;
      return new SignJWT({
        jti: randomUUID(), sub: GITHUB_SUBJECT, aud: 'https://keyward.test', repository: 'acme/app', repository_owner: 'acme', ref: 'refs/heads/main',
        event_name: 'push', workflow: 'ci', iss: issuer.url, iat: now, nbf: now, exp: now + (options.lifetimeS ?? 300), ...claims,
      }).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' }).sign(key.privateKey);
    },
    async rotate() {
      current = await newSigningKey();
      return current;
    },
    close: () => new Promise<void>((resolve) => {
      server?.closeAllConnections();
      server?.close(() => resolve());
    }),
  };
  server = createServer((req, res) => {
    const send = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/.well-known/openid-configuration') {
      issuer.discoveryRequests++;
      if (issuer.down) return void res.writeHead(503).end();
      send({ issuer: issuer.url, jwks_uri: `${issuer.url}/jwks`, id_token_signing_alg_values_supported: ['RS256'] });
    } else if (req.url === '/jwks') {
      issuer.jwksRequests++;
      issuer.maxJwksInFlight = Math.max(issuer.maxJwksInFlight, ++inFlight);
      setTimeout(() => {
        inFlight--;
        send({ keys: [current.jwk] });
      }, issuer.jwksDelayMs);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  issuer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return issuer;
}
