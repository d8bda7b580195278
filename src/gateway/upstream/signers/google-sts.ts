/**
 * Google access tokens for a federated Vertex credential: Google STS exchanges Keyward's JWT (`aud`
 * the workload identity pool provider's full name) for a federated token, then, when the credential
 * names a `service_account`, iamcredentials `generateAccessToken` turns that into the service
 * account's token (one hour). google-auth-library's IdentityPoolClient does both (it honours any
 * token URL and impersonation URL: KEYWARD_GOOGLE_STS_URI, KEYWARD_GOOGLE_IAM_CREDENTIALS_URI), with
 * Keyward's JWT as its subject-token supplier; it is loaded on the first federated mint. A fresh client
 * per mint: the caching is minted-cache.ts's, on the injected clock. A refusal from either step is
 * 502 upstream_auth_failed with Google's words, masked; a request that reached neither is unreachable.
 */
import type { CredentialSecrets } from '../../../catalog/provider.js';
import { identityToken, type FederationSettings } from './federation.js';
import { CLOUD_PLATFORM_SCOPE } from './google-token.js';
import type { Minted } from './minted-cache.js';
import { cloudWords, TOKEN_SHAPE, TokenMintError } from './token-fetch.js';

let library: Promise<typeof import('google-auth-library')> | undefined;
const loadGoogleAuth = () => (library ??= import('google-auth-library'));

/**
 * Who refused and with what words: iamcredentials answers Google's API error (`{error: {status, message}}`); STS
 * answers an OAuth error, which the library words as `Error code <error>: <error_description>`. No response: unreachable.
 */
function googleRefusal(err: unknown): { by: string | undefined; words: string } {
  const e = err as { message?: unknown; response?: { status?: unknown; data?: unknown } };
  const message = typeof e?.message === 'string' ? e.message : '';
  const status = e?.response?.status;
  if (typeof status !== 'number') return { by: undefined, words: message || 'no answer' };
  const error = (e.response!.data as { error?: unknown } | undefined)?.error as { message?: unknown; status?: unknown } | undefined;
  if (error && typeof error === 'object' && typeof error.message === 'string') {
    return { by: 'Google iamcredentials', words: `HTTP ${status} ${String(error.status ?? '')}: ${error.message}` };
  }
  return { by: 'Google STS', words: `HTTP ${status} ${message}` };
}

export async function mintFromGoogleSts(settings: FederationSettings, credential: CredentialSecrets): Promise<Minted<string>> {
  const audience = credential.plain.workload_identity_provider!;
  const serviceAccount = credential.plain.service_account;
  const jwt = await identityToken(settings, credential, audience);
  const { IdentityPoolClient } = await loadGoogleAuth();
  const client = new IdentityPoolClient({
    type: 'external_account',
    audience,
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: settings.googleStsUri,
    ...(serviceAccount !== undefined
      ? { service_account_impersonation_url: `${settings.googleIamCredentialsUri}/v1/projects/-/serviceAccounts/${encodeURIComponent(serviceAccount)}:generateAccessToken` }
      : {}),
    scopes: [CLOUD_PLATFORM_SCOPE],
    subject_token_supplier: { getSubjectToken: async () => jwt },
    transporterOptions: { timeout: 10_000 },
  });
  const startedWall = Date.now();
  let token: string | null | undefined;
  try {
    token = (await client.getAccessToken()).token;
  } catch (err) {
    const { by, words } = googleRefusal(err);
    throw by !== undefined
      ? new TokenMintError(`${by} refused: ${cloudWords(words, [jwt])}`, true)
      : new TokenMintError(`Google STS or iamcredentials could not be reached (${cloudWords(words, [jwt])})`);
  }
  const expiry = client.credentials.expiry_date;
  if (typeof token !== 'string' || !TOKEN_SHAPE.test(token)) throw new TokenMintError('Google answered without a usable access token');
  if (typeof expiry !== 'number' || !Number.isFinite(expiry)) throw new TokenMintError('Google answered without an expiry');
  // The library dates the expiry by the wall clock: the lifetime is counted from when this mint began.
  return { value: token, lifetimeMs: expiry - startedWall };
}
