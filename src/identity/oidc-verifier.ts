/**
 * Verifies a workload's OIDC token (a JWT) for the token exchange, with jose: the issuer must be
 * one the operator allows (KEYWARD_OIDC_ISSUERS), the signature must verify with that issuer's
 * published keys (issuer-keys.ts) under an asymmetric algorithm (never `none`, never HMAC: an HMAC
 * "key" taken from a public JWKS is no secret), and `iss`, `exp` (required), `nbf` and `iat` are
 * checked against this gateway's clock with at most CLOCK_SKEW_S of skew; `sub` and `aud` must be
 * present (the trust policies match on them). Every refusal is an OAuthError `invalid_grant` whose
 * description is fixed text: never the token, never a claim's value.
 */
import type { JWSAlgorithm, JWTPayload } from 'jose';
import { loadJose } from './jose.js';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { OAuthError } from '../errors.js';
import type { Logger } from '../log.js';
import { Symbols } from '../symbols.js';
import { IssuerKeys } from './issuer-keys.js';
import { DEFAULT_FETCH_LIMITS, OidcFetchError } from './oidc-fetch.js';

export const CLOCK_SKEW_S = 60;
/** A compact JWT longer than this is refused unread (OIDC tokens are a few kB). */
export const MAX_JWT_LENGTH = 16 * 1024;
const ALGORITHMS: JWSAlgorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** A verified token's identity: what trust policies match and the audit names. */
export interface WorkloadIdentity {
  issuer: string;
  subject: string;
  audiences: string[];
  claims: JWTPayload;
}

const refuse = (description: string) => new OAuthError('invalid_grant', description);

@injectable()
export class OidcVerifier {
  private readonly issuers = new Map<string, IssuerKeys>();

  constructor(
    @inject(Symbols.Config) config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) log: Logger,
  ) {
    const limits = { ...DEFAULT_FETCH_LIMITS, allowHttpLoopback: config.oidcAllowHttpLoopback };
    for (const issuer of config.oidcIssuers) this.issuers.set(issuer, new IssuerKeys(issuer, limits, clock, log));
  }

  async verify(jwt: string): Promise<WorkloadIdentity> {
    if (jwt.length > MAX_JWT_LENGTH || !COMPACT_JWS.test(jwt)) throw refuse('`subject_token` is not a signed JWT.');
    const { decodeJwt, errors, jwtVerify } = await loadJose();
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(jwt);
    } catch {
      throw refuse('`subject_token` is not a signed JWT.');
    }
    const keys = typeof unverified.iss === 'string' ? this.issuers.get(unverified.iss) : undefined;
    if (!keys) throw refuse('The token\'s issuer is not one this gateway trusts (KEYWARD_OIDC_ISSUERS).');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(jwt, keys.getKey, {
        issuer: keys.issuer,
        algorithms: ALGORITHMS,
        clockTolerance: CLOCK_SKEW_S,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['exp', 'sub', 'aud'],
      }));
    } catch (err) {
      throw refuse(reason(err, errors));
    }
    // iat in the future beyond the skew: jose checks it only with maxTokenAge, so here.
    if (typeof payload.iat === 'number' && payload.iat * 1000 > this.clock.now() + CLOCK_SKEW_S * 1000) throw refuse('The token was issued in the future.');
    const audiences = (Array.isArray(payload.aud) ? payload.aud : [payload.aud]).filter((a): a is string => typeof a === 'string');
    if (typeof payload.sub !== 'string' || payload.sub === '' || audiences.length === 0) throw refuse('The token has no subject or audience.');
    return { issuer: keys.issuer, subject: payload.sub, audiences, claims: payload };
  }
}

/** What went wrong, in fixed words (a jose message can quote a claim). */
function reason(err: unknown, errors: typeof import('jose').errors): string {
  if (err instanceof OidcFetchError) return 'The issuer\'s signing keys could not be fetched; try again later.';
  if (err instanceof errors.JWTExpired) return 'The token has expired.';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === 'nbf') return 'The token is not valid yet.';
    return `The token's \`${err.claim}\` claim is missing or not acceptable.`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed) return 'The token\'s signing algorithm is not accepted (asymmetric algorithms only).';
  if (err instanceof errors.JWKSNoMatchingKey) return 'The token\'s signing key is not among the issuer\'s published keys.';
  if (err instanceof errors.JWSSignatureVerificationFailed) return 'The token\'s signature does not verify.';
  return 'The token could not be verified.';
}
