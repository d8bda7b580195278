/**
 * The header signer: one secret field in one header, as most providers take a
 * key (`Authorization: Bearer <key>`, `x-api-key: <key>`, Azure's `api-key`).
 * Needs no body; replaces any value the header had.
 */
import type { CredentialSecrets, OutgoingRequest, ProviderAuth, Signer } from '../../../catalog/provider.js';

export function headerSigner(auth: Extract<ProviderAuth, { kind: 'header' }>, mainSecret: string): Signer {
  const field = auth.field ?? mainSecret;
  const format = auth.format ?? (auth.header === 'authorization' ? (key: string) => `Bearer ${key}` : (key: string) => key);
  return {
    needsBody: false,
    sign(request: OutgoingRequest, credential: CredentialSecrets): void {
      request.headers[auth.header] = format(credential.secrets[field]!);
    },
  };
}
