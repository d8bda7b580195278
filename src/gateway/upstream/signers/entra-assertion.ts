/**
 * The `entra-assertion` signer (Azure OpenAI): a key credential's `api_key` goes as `api-key`, as
 * Azure takes it; a federated one (no secret) goes as `Authorization: Bearer <Entra access token>`,
 * the token from Entra ID's client-credentials grant with Keyward's JWT as the client assertion
 * (`aud` api://AzureADTokenExchange, the app's federated credential naming Keyward's issuer and
 * `sub` org:<org_id>) for the scope https://cognitiveservices.azure.com/.default, at
 * AZURE_AUTHORITY_HOST/<tenant>/oauth2/v2.0/token: the documented request
 * (https://learn.microsoft.com/entra/identity-platform/v2-oauth2-client-creds-grant-flow#third-case-access-token-request-with-a-federated-credential),
 * bounded in time and size. Minted tokens are cached and refreshed in the background
 * (minted-cache.ts) and masked in responses; a refusal (AADSTS…) is 502 upstream_auth_failed with
 * Entra's words, masked. Needs no body.
 */
import { isFederated, type CredentialSecrets, type OutgoingRequest, type Signer } from '../../../catalog/provider.js';
import type { Logger } from '../../../log.js';
import { identityToken, type FederationSettings } from './federation.js';
import { CredentialTokens, type Minted } from './minted-cache.js';
import { boundedFetch, boundedText, oauthRefusal, parseToken } from './token-fetch.js';

export const ENTRA_AUDIENCE = 'api://AzureADTokenExchange';
export const COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

async function mintFromEntra(settings: FederationSettings, credential: CredentialSecrets): Promise<Minted<string>> {
  const jwt = await identityToken(settings, credential, ENTRA_AUDIENCE);
  const url = `${settings.azureAuthorityHost}/${encodeURIComponent(credential.plain.tenant_id!)}/oauth2/v2.0/token`;
  const res = await boundedFetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      client_id: credential.plain.client_id!,
      scope: COGNITIVE_SERVICES_SCOPE,
      grant_type: 'client_credentials',
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: jwt,
    }).toString(),
  }, 'Entra ID');
  const text = await boundedText(res, 'Entra ID');
  if (res.status !== 200) throw oauthRefusal(text, res.status, 'Entra ID', [jwt]);
  return parseToken(text, 'Entra ID');
}

export function entraAssertionSigner(federation?: FederationSettings, log?: Logger): Signer {
  const tokens = new CredentialTokens<string>({
    now: () => federation?.clock.now() ?? Date.now(),
    log,
    what: 'an Entra ID access token',
    identity: (c) => `${c.owner?.orgId} ${c.owner?.credentialId} ${c.plain.tenant_id} ${c.plain.client_id}`,
    mint: (c) => mintFromEntra(federation!, c),
    masksOf: (token) => [token],
  });
  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void | Promise<void> {
      if (!isFederated(credential)) {
        request.headers['api-key'] = credential.secrets.api_key!;
        return;
      }
      return tokens.bearer(request, credential);
    },
    masks: (credential) => (isFederated(credential) ? tokens.masks(credential) : []),
  };
}
