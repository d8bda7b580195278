/**
 * Turns a provider's `auth` into the Signer the upstream leg runs, once per
 * provider at start: `header` and `query` are built in; `signer` is the file's
 * own object, or the name of a built-in signer module of this folder, whose
 * factory checks its options and may refuse them. An unknown name stops start-up
 * naming the provider file.
 */
import type { Signer } from '../../../catalog/provider.js';
import { ProviderLoadError, type Provider } from '../../../catalog/registry.js';
import type { Clock } from '../../../clock.js';
import type { Logger } from '../../../log.js';
import { entraAssertionSigner } from './entra-assertion.js';
import type { FederationSettings } from './federation.js';
import { googleOAuthSigner, type GoogleOAuthSettings } from './google-oauth.js';
import { headerSigner } from './header.js';
import { querySigner } from './query.js';
import { sigv4Signer } from './sigv4.js';
import { upstreamOAuthSigner, type UpstreamOAuthSettings } from './upstream-oauth.js';
import { isOAuthCredential } from '../../../vault/oauth-credential.js';

/** What built-in signers take from the gateway (not from a provider file). */
export interface SignerSettings {
  google?: GoogleOAuthSettings;
  /** Keyward's own identity and the clouds' token endpoints, for federated credentials (federation.ts). */
  federation?: FederationSettings;
  /** Where a failed mint is logged (masked). */
  log?: Logger;
  /** The injected clock minted tokens expire by. */
  clock?: Clock;
  /** Upstream OAuth connections (a `kind: oauth` credential of an MCP or tool provider; upstream-oauth.ts). */
  oauth?: UpstreamOAuthSettings;
}

/** A built-in signer module: its options from the provider file → a signer, or a thrown Error naming the bad option. */
export type SignerFactory = (options: Readonly<Record<string, unknown>>, provider: Provider, settings: SignerSettings) => Signer;

/**
 * Built-in signers by name (`auth: { kind: 'signer', signer: '<name>', options }`): `sigv4` (AWS, over the
 * final request and its body hash), `google-oauth` (a minted, cached Google access token) and
 * `entra-assertion` (Azure: the key as `api-key`, or a federated credential's Entra token).
 */
const BUILT_IN: Readonly<Record<string, SignerFactory>> = Object.freeze({
  // Vertex AI: a Google access token minted from the credential's service account, the metadata server's, or Google STS's.
  'google-oauth': (_options, _provider, settings) =>
    googleOAuthSigner(settings.google ?? { tokenUri: 'https://oauth2.googleapis.com/token', metadataOrigin: 'http://169.254.169.254' }, settings.federation, settings.log, settings.clock),
  // AWS Bedrock: SigV4 over the final request and its body hash (a stored key pair or STS's temporary one), or a Bedrock API key as Bearer.
  sigv4: (options, _provider, settings) => sigv4Signer(options, settings.federation, settings.log),
  // Azure OpenAI: `api-key`, or Bearer with an Entra token minted with Keyward's own identity.
  'entra-assertion': (_options, _provider, settings) => entraAssertionSigner(settings.federation, settings.log),
});

/**
 * Built-in signers made with the same federation settings, by provider: the proxy's upstream leg and the realtime
 * relay ask for theirs separately and get the same one, so a token minted for a credential serves both.
 */
const shared = new WeakMap<FederationSettings, Map<string, Signer>>();

export function signerFor(provider: Provider, settings: SignerSettings = {}): Signer {
  const federation = settings.federation;
  if (!federation) return makeSigner(provider, settings);
  let byProvider = shared.get(federation);
  if (!byProvider) shared.set(federation, (byProvider = new Map()));
  let signer = byProvider.get(provider.id);
  if (!signer) byProvider.set(provider.id, (signer = makeSigner(provider, settings)));
  return signer;
}

function makeSigner(provider: Provider, settings: SignerSettings): Signer {
  const own = providerSigner(provider, settings);
  if (!settings.oauth || (provider.kind !== 'mcp' && provider.kind !== 'tool')) return own;
  // An MCP or tool provider's credential may be an upstream OAuth one: its connection's access token instead of the provider's own auth.
  const oauth = upstreamOAuthSigner(provider.id, settings.oauth, settings.log, settings.clock);
  return {
    needsBody: own.needsBody,
    sign: (request, credential) => (isOAuthCredential(credential.plain) ? oauth.sign(request, credential) : own.sign(request, credential)),
    masks: (credential) => (isOAuthCredential(credential.plain) ? oauth.masks!(credential) : own.masks?.(credential) ?? []),
  };
}

function providerSigner(provider: Provider, settings: SignerSettings): Signer {
  const auth = provider.auth;
  switch (auth.kind) {
    case 'header':
      return headerSigner(auth, provider.mainSecret);
    case 'query':
      return querySigner(auth, provider.mainSecret);
    case 'signer': {
      if (typeof auth.signer !== 'string') return auth.signer;
      const factory = Object.hasOwn(BUILT_IN, auth.signer) ? BUILT_IN[auth.signer] : undefined;
      if (!factory) throw new ProviderLoadError(provider.file, `\`auth.signer\` ${JSON.stringify(auth.signer)} is no built-in signer (built in: ${Object.keys(BUILT_IN).join(', ') || 'none yet'})`);
      try {
        return factory(auth.options ?? {}, provider, settings);
      } catch (err) {
        throw new ProviderLoadError(provider.file, `\`auth.options\`: ${(err as Error).message}`);
      }
    }
  }
}
