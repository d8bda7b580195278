/**
 * Keyward as an OpenID Connect issuer for its organisations (KEYWARD_ISSUER_URL): the discovery
 * document and the JWKS clouds fetch (served without a token, or written for a static host by
 * `keyward keys export-discovery`), and the short-lived JWTs a federated credential's signer exchanges
 * at a cloud: RS256, `kid` in the header, `iss` the issuer URL, `sub` = `org:<org_id>` (what a role,
 * app or pool trusts, so one organisation's token is refused where another's is trusted), `aud` the
 * cloud's audience, the credential's id as `keyward_credential`, five minutes of life. A JWT is a
 * secret like the tokens it buys: handed to the signer that asked, never logged or stored.
 *
 * The keys are signing-keys.ts's ring. A local key signs through jose; a Cloud KMS key version signs
 * with AsymmetricSign over the JWS signing input (the private key is never here), the compact form
 * put together with jose's base64url.
 */
import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import type { Clock } from '../clock.js';
import { loadJose } from './jose.js';
import type { SigningKeyRing } from './signing-keys.js';

/** A JWT's life: long enough for one exchange at a cloud, short enough that a leaked one is soon useless. */
export const ASSERTION_LIFETIME_S = 300;

export interface AssertionRequest {
  orgId: string;
  credentialId: string;
  /** The cloud's audience: `sts.amazonaws.com`, `api://AzureADTokenExchange`, a workload identity pool provider's full name. */
  audience: string;
}

/** The subject an organisation's JWTs carry (and a cloud's trust names). */
export const subjectOf = (orgId: string): string => `org:${orgId}`;

export class Issuer {
  constructor(readonly url: string, private readonly ring: SigningKeyRing, private readonly clock: Clock) {}

  get jwksUri(): string {
    return `${this.url}/.well-known/jwks.json`;
  }

  /** `<issuer>/.well-known/openid-configuration`: what AWS, Entra ID and Google read (Kubernetes' issuer documents have the same shape). */
  discovery(): Record<string, unknown> {
    return {
      issuer: this.url,
      jwks_uri: this.jwksUri,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      claims_supported: ['iss', 'sub', 'aud', 'exp', 'iat', 'nbf', 'jti', 'keyward_credential'],
    };
  }

  /** The keys clouds verify with: every key that signs now, will sign soon, or signed a token that has not expired. */
  async jwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await this.ring.published()).map((k) => ({ ...k.jwk })) };
  }

  /** A fresh JWT for the organisation, signed by the ring's current key. */
  async assertion(request: AssertionRequest): Promise<string> {
    const now = Math.floor(this.clock.now() / 1000);
    const payload = {
      iss: this.url, sub: subjectOf(request.orgId), aud: request.audience, iat: now, nbf: now, exp: now + ASSERTION_LIFETIME_S,
      jti: randomBytes(16).toString('base64url'), keyward_credential: request.credentialId,
    };
    const active = await this.ring.signer();
    const header = { alg: 'RS256', typ: 'JWT', kid: active.key.kid } as const;
    const jose = await loadJose();
    if (active.privateKey) return new jose.SignJWT(payload).setProtectedHeader(header).sign(active.privateKey);
    // jose signs only with a key it holds; KMS holds this one. RFC 7515's compact form: the signature is over the
    // ASCII of base64url(header) "." base64url(payload).
    const input = `${jose.base64url.encode(JSON.stringify(header))}.${jose.base64url.encode(JSON.stringify(payload))}`;
    return `${input}.${jose.base64url.encode(await active.kmsSign(Buffer.from(input, 'ascii')))}`;
  }
}
