/**
 * The query signer: one secret field in one query parameter (an API whose only
 * way to take a key is `?key=`). Needs no body. The caller's copy of that
 * parameter was stripped before (every key-carrying parameter is), so upstream
 * sees exactly one.
 */
import type { CredentialSecrets, OutgoingRequest, ProviderAuth, Signer } from '../../../catalog/provider.js';

export function querySigner(auth: Extract<ProviderAuth, { kind: 'query' }>, mainSecret: string): Signer {
  const field = auth.field ?? mainSecret;
  const name = encodeURIComponent(auth.param);
  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void {
      const pair = `${name}=${encodeURIComponent(credential.secrets[field]!)}`;
      request.query = request.query === '' ? pair : `${request.query}&${pair}`;
    },
  };
}
