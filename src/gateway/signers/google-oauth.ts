/**
 * The `google-oauth` signer (Vertex AI): `Authorization: Bearer <access token>`
 * upstream, the token minted by the gateway (google-token.ts) from the
 * credential's `service_account` JSON key, or, for a credential with
 * `ambient: "true"`, from the metadata server. The key's own `token_uri` is
 * never followed: tokens come from KEYWARD_GOOGLE_TOKEN_URI (default Google's).
 * Needs no body. A cached token signs synchronously; only a (shared) mint waits.
 * What it masks besides the stored key: the private key as text, as a JSON
 * string and line by line, and the access tokens recently minted for that credential.
 */
import type { CredentialSecrets, OutgoingRequest, Signer } from '../../catalog/provider.js';
import { Errors } from '../../errors.js';
import { CachedToken, TokenCaches, mintFromMetadata, mintFromServiceAccount, type ServiceAccountKey } from './google-token.js';

export interface GoogleOAuthSettings {
  /** Where service-account tokens are minted (Config.googleTokenUri). */
  tokenUri: string;
  /** The metadata server's origin for ambient credentials (Config.gceMetadataHost). */
  metadataOrigin: string;
  /** Projects an ambient credential may act in with the gateway's own identity (Config.ambientProjects); default none. */
  ambientProjects?: readonly string[];
}

interface CredentialAuth {
  cache: CachedToken;
  /** The private key's text forms (empty for ambient). */
  keyMasks: readonly string[];
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

export function googleOAuthSigner(settings: GoogleOAuthSettings): GoogleOAuthSigner {
  const caches = new TokenCaches();
  // Per cached credential value: its key parsed once, never per request.
  const byCredential = new WeakMap<CredentialSecrets, CredentialAuth>();

  const authFor = (credential: CredentialSecrets): CredentialAuth => {
    let auth = byCredential.get(credential);
    if (auth) return auth;
    const json = credential.secrets.service_account;
    if (json === undefined) {
      if (credential.plain.ambient !== 'true') throw new Error('the credential has neither a service account key nor ambient: "true"');
      // The gateway's own identity spends where the operator said it may, never where any organisation asks.
      const project = credential.plain.project ?? '';
      if (!(settings.ambientProjects ?? []).includes(project)) {
        throw Errors.pathNotAllowed(`This gateway does not let ambient credentials act in project ${JSON.stringify(project)} (the operator's KEYWARD_AMBIENT_PROJECTS).`);
      }
      auth = { cache: caches.for(`ambient ${settings.metadataOrigin}`, () => mintFromMetadata(settings.metadataOrigin)), keyMasks: [] };
    } else {
      let sa: ServiceAccountKey;
      try {
        sa = JSON.parse(json) as ServiceAccountKey;
      } catch {
        throw new Error('the stored service account key is not JSON');
      }
      const key = { client_email: sa.client_email, private_key_id: sa.private_key_id, private_key: sa.private_key };
      auth = {
        cache: caches.for(`sa ${settings.tokenUri} ${json}`, () => mintFromServiceAccount(key, settings.tokenUri)),
        keyMasks: keyForms(key.private_key),
      };
    }
    byCredential.set(credential, auth);
    return auth;
  };

  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void | Promise<void> {
      const token = authFor(credential).cache.get();
      if (typeof token === 'string') {
        request.headers.authorization = `Bearer ${token}`;
        return;
      }
      return token.then((t) => {
        request.headers.authorization = `Bearer ${t}`;
      });
    },
    masks(credential: CredentialSecrets): readonly string[] {
      const auth = byCredential.get(credential);
      return auth ? [...auth.keyMasks, ...auth.cache.masks()] : [];
    },
    get mints() {
      return caches.mints;
    },
  };
}
