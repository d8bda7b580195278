/**
 * What the federated signers share (aws-web-identity.ts, entra-assertion.ts, google-sts.ts): the
 * settings the composition root hands them, and Keyward's own JWT for a credential's organisation,
 * the one thing a federated credential presents to its cloud. A gateway that is no issuer
 * (KEYWARD_ISSUER_URL unset) refuses such a credential's requests with 502 upstream_auth_failed; a
 * signing key it cannot use (store or KMS down, a KMS version it may not sign with) is 503, the
 * operator's to fix, and logged by the caller's mint.
 */
import type { CredentialSecrets } from '../../../catalog/provider.js';
import type { Clock } from '../../../clock.js';
import { ApiError, BackendUnavailable, Errors } from '../../../errors.js';
import type { AssertionRequest } from '../../../identity/issuer.js';
import type { Logger } from '../../../log.js';

export interface FederationSettings {
  /** Keyward's JWT for an organisation's credential (identity/issuer.ts); undefined: this gateway is no issuer. */
  assertion: ((request: AssertionRequest) => Promise<string>) | undefined;
  clock: Clock;
  log: Logger;
  /** Config.awsStsEndpoint … googleIamCredentialsUri (federation-config.ts). */
  awsStsEndpoint: string | undefined;
  azureAuthorityHost: string;
  googleStsUri: string;
  googleIamCredentialsUri: string;
}

/** Keyward's JWT for the credential's organisation and `audience` (a secret: only ever sent to the cloud). */
export async function identityToken(settings: FederationSettings | undefined, credential: CredentialSecrets, audience: string): Promise<string> {
  if (!settings?.assertion) {
    throw Errors.upstreamAuthFailed('This gateway is not an OpenID Connect issuer (KEYWARD_ISSUER_URL is unset), so it cannot use a federated credential.');
  }
  const owner = credential.owner;
  if (!owner) throw new Error('a federated credential reached its signer without its owner');
  try {
    return await settings.assertion({ orgId: owner.orgId, credentialId: owner.credentialId, audience });
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // A KMS version that cannot sign, a ring that cannot be read: the operator's to fix; the caller may retry later.
    if (!(err instanceof BackendUnavailable)) settings.log.error({ reason: (err as Error)?.message ?? 'unknown' }, 'Keyward could not sign its OIDC identity token');
    throw Errors.unavailable();
  }
}
