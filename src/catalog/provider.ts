/**
 * The provider contract: what a provider file (providers/*.ts, or a file in KEYWARD_PROVIDERS_DIR) declares.
 * Declared once, in the SDK (sdk/src/provider.ts: what outside authors import, and what the built-in providers
 * import as `@keyward/sdk`); the core reads the same types from there, so the contract and the core cannot
 * drift. Validated once at start (provider-check.ts): a malformed file stops start-up naming the file and the field.
 *
 * A new way to authenticate is a Signer (a built-in one in src/gateway/upstream/signers/, named by string, or an
 * object the provider file brings); a new usage shape is a UsageReaderFactory. Neither needs an edit anywhere else.
 */
import type { CredentialSecrets } from '../../sdk/src/provider.js';

export type {
  CredentialField, CredentialSecrets, CredentialSpec, HttpMethod, IncomingHeaders, OutgoingRequest, ProviderAuth, ProviderKind, ProviderPlugin,
  ProviderRoute, RealtimeProtocolName, SdkSetup, Signer, TokenPlacement, UsageReader, UsageReaderFactory, UsageReaders, UsageResponse,
  UsageShape, WebSocketRoute,
} from '../../sdk/src/provider.js';
export type { AudioPrice, BilledTool, LongContextPrice, ModelPrice, PriceDimension, TierPrice, TokenUsage } from '../pricing/price-types.js';

/** The plain flag that makes a credential federated: no secret at all, Keyward's own signed JWT exchanged at the cloud (docs/operate/identity.md). */
export const FEDERATED = 'federated';
export const isFederated = (credential: CredentialSecrets): boolean => credential.plain[FEDERATED] === 'true';
