/**
 * GET /.well-known/openid-configuration and GET /.well-known/jwks.json, served without a token when
 * Keyward is an OIDC issuer (KEYWARD_ISSUER_URL; identity/issuer.ts): what AWS, Entra ID and Google
 * fetch to verify the JWTs Keyward signs for its organisations. Public documents, cacheable for a
 * minute (a new signing key is published minutes before it signs). A store or KMS that cannot answer
 * is a 503, never a partial key set.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Errors } from '../errors.js';
import type { Issuer } from '../identity/issuer.js';
import type { Logger } from '../log.js';
import { sendError } from './reply.js';

export const DISCOVERY_PATH = '/.well-known/openid-configuration';
export const JWKS_PATH = '/.well-known/jwks.json';

type Handler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function json(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'public, max-age=60' });
  res.end(text);
}

export function discoveryRoutes(issuer: Issuer | undefined, log: Logger): Record<string, Handler> {
  if (!issuer) return {};
  return {
    [DISCOVERY_PATH]: async (_req, res) => json(res, issuer.discovery()),
    [JWKS_PATH]: async (_req, res) => {
      try {
        json(res, await issuer.jwks());
      } catch (err) {
        log.error({ reason: (err as Error)?.message ?? 'unknown' }, 'the OIDC signing keys could not be read');
        sendError(res, Errors.unavailable());
      }
    },
  };
}
