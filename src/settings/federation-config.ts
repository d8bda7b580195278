/**
 * The variables of Keyward as each organisation's OIDC identity (docs/operate/identity.md), parsed once with
 * the rest of the config (config.ts spreads federationConfig into Config): the issuer's public URL,
 * the Cloud KMS key version that signs, and the clouds' token endpoints, each overridable for tests
 * under the variable its own SDKs read. Every endpoint is https; plain http only on a loopback host
 * (a test's fake), since a Keyward-signed JWT and the tokens it buys travel there.
 */
/** Throws config.ts's ConfigError for `variable` (config.ts imports this file, so it is handed in). */
type Fail = (variable: string, accepts: string, got: string) => never;

export interface FederationConfig {
  /**
   * KEYWARD_ISSUER_URL: the public base URL clouds fetch `<url>/.well-known/openid-configuration` from (the
   * gateway's own, or a static host `keyward keys export-discovery` fills). Unset: Keyward is no issuer: the
   * documents are not served and a federated credential cannot be stored.
   */
  issuerUrl: string | undefined;
  /** KEYWARD_PUBLIC_URL: the gateway's public base URL (single sign-on's callback is built on it); default KEYWARD_ISSUER_URL; unset: no single sign-on. */
  publicUrl: string | undefined;
  /** KEYWARD_KMS_SIGNING_KEY (with KEYWARD_KMS=gcp): the Cloud KMS key version whose AsymmetricSign signs; unset: a key generated once and wrapped by the KEK. */
  kmsSigningKey: string | undefined;
  /** AWS_ENDPOINT_URL_STS (the AWS SDKs' own variable); unset: STS's regional endpoint for the credential's region. */
  awsStsEndpoint: string | undefined;
  /** AZURE_AUTHORITY_HOST (the Azure SDKs' own variable), default https://login.microsoftonline.com. */
  azureAuthorityHost: string;
  /** KEYWARD_GOOGLE_STS_URI: Google STS's token endpoint, the full URL. */
  googleStsUri: string;
  /** KEYWARD_GOOGLE_IAM_CREDENTIALS_URI: the iamcredentials origin (generateAccessToken). */
  googleIamCredentialsUri: string;
  /** KEYWARD_MCP_TOKEN_TTL (default 1h): how long an access token Keyward issues for one of its MCP routes lives. */
  mcpTokenTtlMs: number;
}

const LOOPBACK = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * A cloud endpoint: an https URL (http on a loopback host) without user, query or fragment; `path: false` wants an
 * origin. Trailing slashes dropped. (KEYWARD_GOOGLE_TOKEN_URI too: a key's assertion travels there.)
 */
export function cloudEndpoint(name: string, raw: string, path: boolean, fail: Fail): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch { /* refused below */ }
  const scheme = url?.protocol === 'https:' || (url?.protocol === 'http:' && LOOPBACK.has(url.hostname));
  const shape = path ? 'an https URL without user, query or fragment (http only on 127.0.0.1, [::1] or localhost)' : 'an https origin (http only on 127.0.0.1, [::1] or localhost)';
  // Echo only what is no secret: a URL's user part or query could be one.
  if (!url || !scheme || url.username || url.password || url.search || url.hash || raw.includes('?') || raw.includes('#')) fail(name, shape, url ? url.origin : '<not a URL>');
  if (!path && url.pathname !== '/') fail(name, shape, url.href);
  return path ? url.origin + url.pathname.replace(/\/+$/, '') : url.origin;
}

/** KEYWARD_KMS_SIGNING_KEY's shape: one version of a Cloud KMS key. */
const KMS_KEY_VERSION = /^projects\/[^/]+\/locations\/[^/]+\/keyRings\/[^/]+\/cryptoKeys\/[^/]+\/cryptoKeyVersions\/[1-9][0-9]*$/;

/** `duration`: config.ts's duration reader (a name, its default), handed in as `fail` is. */
export function federationConfig(get: (name: string) => string | undefined, kms: string, fail: Fail, duration: (name: string, dflt: string, max?: number) => number): FederationConfig {
  const issuer = get('KEYWARD_ISSUER_URL');
  const kmsSigningKey = get('KEYWARD_KMS_SIGNING_KEY');
  if (kmsSigningKey !== undefined && !KMS_KEY_VERSION.test(kmsSigningKey)) {
    fail('KEYWARD_KMS_SIGNING_KEY', 'projects/…/locations/…/keyRings/…/cryptoKeys/…/cryptoKeyVersions/N', kmsSigningKey);
  }
  if (kmsSigningKey !== undefined && kms !== 'gcp') fail('KEYWARD_KMS_SIGNING_KEY', 'to be set only with KEYWARD_KMS=gcp', kmsSigningKey);
  const sts = get('AWS_ENDPOINT_URL_STS');
  const issuerUrl = issuer === undefined ? undefined : cloudEndpoint('KEYWARD_ISSUER_URL', issuer, true, fail);
  const publicUrl = get('KEYWARD_PUBLIC_URL');
  return {
    issuerUrl,
    publicUrl: publicUrl === undefined ? issuerUrl : cloudEndpoint('KEYWARD_PUBLIC_URL', publicUrl, true, fail),
    kmsSigningKey,
    awsStsEndpoint: sts === undefined ? undefined : cloudEndpoint('AWS_ENDPOINT_URL_STS', sts, true, fail),
    azureAuthorityHost: cloudEndpoint('AZURE_AUTHORITY_HOST', get('AZURE_AUTHORITY_HOST') ?? 'https://login.microsoftonline.com', false, fail),
    googleStsUri: cloudEndpoint('KEYWARD_GOOGLE_STS_URI', get('KEYWARD_GOOGLE_STS_URI') ?? 'https://sts.googleapis.com/v1/token', true, fail),
    googleIamCredentialsUri: cloudEndpoint('KEYWARD_GOOGLE_IAM_CREDENTIALS_URI', get('KEYWARD_GOOGLE_IAM_CREDENTIALS_URI') ?? 'https://iamcredentials.googleapis.com', false, fail),
    // At most a day: a refresh token (rotated on use) carries the grant on, not a long-lived access token.
    mcpTokenTtlMs: duration('KEYWARD_MCP_TOKEN_TTL', '1h', 86_400_000),
  };
}
