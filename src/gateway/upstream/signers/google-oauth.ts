/**
 * The `google-oauth` signer (Vertex AI): `Authorization: Bearer <access token>`
 * upstream, the token minted by the gateway from the credential's
 * `service_account` JSON key (google-token.ts); for a credential with
 * `ambient: "true"`, from the metadata server; for a `federated: "true"` one,
 * from Google STS in exchange for Keyward's own JWT, as a service account when
 * it names one (google-sts.ts). The key's own `token_uri` is never followed:
 * tokens come from KEYWARD_GOOGLE_TOKEN_URI (default Google's). Needs no body. A
 * cached token signs synchronously; only a (shared) mint waits; a refused mint
 * is 502 upstream_auth_failed with Google's words. What it masks besides the
 * stored key: the private key as text, as a JSON string and line by line, and
 * the access tokens recently minted for that credential.
 */
import { isFederated, type CredentialSecrets, type OutgoingRequest, type Signer } from '../../../catalog/provider.js';
import type { Clock } from '../../../clock.js';
import { Errors } from '../../../errors.js';
import type { Logger } from '../../../log.js';
import type { FederationSettings } from './federation.js';
import { mintFromGoogleSts } from './google-sts.js';
import { mintFromMetadata, mintFromServiceAccount, type ServiceAccountKey } from './google-token.js';
import { CredentialTokens, type Minted } from './minted-cache.js';

export interface GoogleOAuthSettings {
  /** Where service-account tokens are minted (Config.googleTokenUri). */
  tokenUri: string;
  /** The metadata server's origin for ambient credentials (Config.gceMetadataHost). */
  metadataOrigin: string;
  /** Projects an ambient credential may act in with the gateway's own identity (Config.ambientProjects); default none. */
  ambientProjects?: readonly string[];
}

/**
 * The private key's text forms to mask: the PEM, its JSON-escaped form, and each base64 line of
 * its body on its own, so a copy escaped or re-wrapped any other way is still masked line by line.
 */
function keyForms(pem: unknown): string[] {
  if (typeof pem !== 'string' || pem.length === 0) return [];
  const lines = pem.split(/\r?\n/).filter((l) => l.length >= 16 && !l.startsWith('-----'));
  return [pem, JSON.stringify(pem).slice(1, -1), ...lines];
}

export interface GoogleOAuthSigner extends Signer {
  /** Tokens minted so far (tests count them). */
  readonly mints: number;
}

/** The stored key, parsed (a credential value is parsed once, not per mint). */
function serviceAccountKey(json: string): ServiceAccountKey {
  let sa: ServiceAccountKey;
  try {
    sa = JSON.parse(json) as ServiceAccountKey;
  } catch {
    throw new Error('the stored service account key is not JSON');
  }
  return { client_email: sa.client_email, private_key_id: sa.private_key_id, private_key: sa.private_key };
}

export function googleOAuthSigner(settings: GoogleOAuthSettings, federation?: FederationSettings, log?: Logger, clock?: Clock): GoogleOAuthSigner {
  const keyMasks = new WeakMap<CredentialSecrets, readonly string[]>();
  // The minted tokens' ages and the service-account assertion's dates, on the injected clock.
  const now = (): number => (clock ?? federation?.clock)?.now() ?? Date.now();
  const tokens = new CredentialTokens<string>({
    now,
    log,
    what: 'a Google access token',
    // The same key (or the one ambient identity, or the same pool provider and account for one credential) shares one token.
    identity: (c) => {
      if (isFederated(c)) return `federated ${c.owner?.credentialId} ${c.plain.workload_identity_provider} ${c.plain.service_account ?? ''}`;
      return c.secrets.service_account === undefined ? `ambient ${settings.metadataOrigin}` : `sa ${settings.tokenUri} ${c.secrets.service_account}`;
    },
    mint: (c): Promise<Minted<string>> => {
      if (isFederated(c)) return mintFromGoogleSts(federation!, c);
      const json = c.secrets.service_account;
      return json === undefined ? mintFromMetadata(settings.metadataOrigin) : mintFromServiceAccount(serviceAccountKey(json), settings.tokenUri, now);
    },
    masksOf: (token) => [token],
  });

  /** Refuses what may never mint here; the credential's key forms are kept for masking. */
  const admit = (credential: CredentialSecrets): void => {
    if (keyMasks.has(credential)) return;
    const json = credential.secrets.service_account;
    if (json === undefined && !isFederated(credential)) {
      if (credential.plain.ambient !== 'true') throw new Error('the credential has neither a service account key nor ambient: "true"');
      // The gateway's own identity spends where the operator said it may, never where any organisation asks.
      const project = credential.plain.project ?? '';
      if (!(settings.ambientProjects ?? []).includes(project)) {
        throw Errors.pathNotAllowed(`This gateway does not let ambient credentials act in project ${JSON.stringify(project)} (the operator's KEYWARD_AMBIENT_PROJECTS).`);
      }
    }
    keyMasks.set(credential, json === undefined ? [] : keyForms(serviceAccountKey(json).private_key));
  };

  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void | Promise<void> {
      admit(credential);
      return tokens.bearer(request, credential);
    },
    masks(credential: CredentialSecrets): readonly string[] {
      const key = keyMasks.get(credential) ?? [];
      const minted = tokens.masks(credential);
      return key.length === 0 ? minted : [...key, ...minted];
    },
    get mints() {
      return tokens.mints;
    },
  };
}
