/**
 * An organisation's OpenID provider as a relying party sees it, with openid-client (the certified
 * library; nothing here builds PKCE, state, nonce or a JWT check itself): discovery, the authorization
 * URL (code flow, PKCE S256, `response_mode=query`), the code grant with `state`, `nonce` and the ID
 * token checked (its signature against the issuer's JWKS: non-repudiation checks on), and the device
 * authorization grant (RFC 8628) one poll at a time. Every request to the provider goes through the
 * SSRF rules of oidc-fetch.ts: https only (plain http on a loopback address only with
 * KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK), no redirect followed, a deadline and a bounded body. A
 * provider's configuration is kept ten minutes per issuer, client and secret version. Errors carry
 * fixed words or the provider's error code, never a token.
 */
import type { Configuration, IDToken } from 'openid-client';
import { ApiError, Errors } from '../errors.js';
import { DEFAULT_FETCH_LIMITS, fetchableUrl, OidcFetchError } from './oidc-fetch.js';

let library: Promise<typeof import('openid-client')> | undefined;
/** openid-client, loaded at the first sign-in (a gateway without single sign-on never pays its import). */
export const loadOidcClient = (): Promise<typeof import('openid-client')> => (library ??= import('openid-client'));

const CONFIG_TTL_MS = 10 * 60_000;
/** A provider's answer larger than this is refused (discovery documents and JWKS are a few kB). */
const MAX_BYTES = 256 * 1024;

export interface ProviderClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Changes when the configuration does (a new secret gets a new Configuration). */
  version: number;
}

/** What a verified ID token says of the person. */
export interface SignedInPerson {
  issuer: string;
  subject: string;
  claims: IDToken;
}

export interface DeviceStart {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  expiresIn: number;
  interval: number;
}

export class SsoClient {
  private readonly configs = new Map<string, { at: number; config: Promise<Configuration> }>();

  constructor(private readonly allowHttpLoopback: boolean, private readonly now: () => number) {}

  /** The provider's configuration for this client (discovery fetched under the SSRF rules); an unusable provider is 502 sso_unavailable. */
  async configuration(client: ProviderClient): Promise<Configuration> {
    const key = JSON.stringify([client.issuer, client.clientId, client.version]);
    const cached = this.configs.get(key);
    if (cached && this.now() - cached.at < CONFIG_TTL_MS) return cached.config;
    const config = this.discover(client);
    this.configs.set(key, { at: this.now(), config });
    config.catch(() => this.configs.delete(key));
    if (this.configs.size > 1000) this.configs.delete(this.configs.keys().next().value!);
    return config;
  }

  private async discover(client: ProviderClient): Promise<Configuration> {
    const oidc = await loadOidcClient();
    let url: URL;
    try {
      url = fetchableUrl(client.issuer, this.allowHttpLoopback);
    } catch (err) {
      throw Errors.invalidRequest(`\`issuer\`: ${(err as Error).message}.`, 'issuer');
    }
    try {
      const config = await oidc.discovery(url, client.clientId, { client_secret: client.clientSecret }, oidc.ClientSecretBasic(client.clientSecret), {
        [oidc.customFetch]: this.fetch,
        ...(url.protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : {}),
      });
      oidc.enableNonRepudiationChecks(config);
      return config;
    } catch (err) {
      throw Errors.ssoUnavailable(`The provider's discovery document at ${url.origin}${url.pathname} could not be used: ${describe(err)}.`);
    }
  }

  /** The provider's discovery document (what it offers: its device authorization endpoint, if any). */
  async metadata(client: ProviderClient): Promise<Record<string, unknown>> {
    return (await this.configuration(client)).serverMetadata() as Record<string, unknown>;
  }

  /** Where to send the browser: the provider's authorization endpoint with PKCE (S256), state, nonce and `response_mode=query`. */
  async authorizationUrl(client: ProviderClient, redirectUri: string, checks: { state: string; nonce: string; verifier: string }): Promise<URL> {
    const oidc = await loadOidcClient();
    const config = await this.configuration(client);
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri, scope: 'openid email profile', response_type: 'code', response_mode: 'query',
      state: checks.state, nonce: checks.nonce, code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier), code_challenge_method: 'S256',
    });
  }

  /** The callback: the code exchanged (with the PKCE verifier) and the ID token verified; any refusal is 400 sign_in_failed. */
  async completeCodeFlow(client: ProviderClient, callbackUrl: URL, checks: { state: string; nonce: string; verifier: string }): Promise<SignedInPerson> {
    const oidc = await loadOidcClient();
    const config = await this.configuration(client);
    try {
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: checks.verifier, expectedState: checks.state, expectedNonce: checks.nonce, idTokenExpected: true,
      });
      return person(tokens.claims());
    } catch (err) {
      throw refusal(err);
    }
  }

  /** RFC 8628: a device and user code from the provider; 400 when the provider offers no device grant. */
  async startDevice(client: ProviderClient): Promise<DeviceStart> {
    const oidc = await loadOidcClient();
    const config = await this.configuration(client);
    if (!config.serverMetadata().device_authorization_endpoint) {
      throw Errors.invalidRequest('The organisation\'s provider offers no device authorization grant (no `device_authorization_endpoint`).');
    }
    try {
      const d = await oidc.initiateDeviceAuthorization(config, { scope: 'openid email profile' });
      return {
        deviceCode: d.device_code, userCode: d.user_code, verificationUri: d.verification_uri,
        ...(d.verification_uri_complete ? { verificationUriComplete: d.verification_uri_complete } : {}),
        expiresIn: d.expires_in, interval: d.interval ?? 5,
      };
    } catch (err) {
      throw Errors.ssoUnavailable(`The provider refused to start a device sign-in: ${describe(err)}.`);
    }
  }

  /** One poll of the device grant: the verified person, or 400 authorization_pending (also for `slow_down`), or 400 sign_in_failed. */
  async pollDevice(client: ProviderClient, deviceCode: string): Promise<SignedInPerson> {
    const oidc = await loadOidcClient();
    const config = await this.configuration(client);
    try {
      const tokens = await oidc.genericGrantRequest(config, 'urn:ietf:params:oauth:grant-type:device_code', { device_code: deviceCode });
      const claims = tokens.claims();
      if (!claims) throw Errors.signInFailed('The provider answered without an ID token.');
      return person(claims);
    } catch (err) {
      const code = (err as { error?: unknown }).error;
      if (code === 'authorization_pending' || code === 'slow_down') throw Errors.authorizationPending();
      throw refusal(err);
    }
  }

  /** fetch under the SSRF rules: the URL checked, a deadline, no redirect, at most MAX_BYTES read. */
  private readonly fetch = async (url: string, options: { method: string; headers: Record<string, string>; body?: unknown; redirect?: 'manual'; signal?: AbortSignal }): Promise<Response> => {
    const target = fetchableUrl(url, this.allowHttpLoopback);
    const deadline = AbortSignal.timeout(DEFAULT_FETCH_LIMITS.timeoutMs);
    const res = await fetch(target, { ...options, body: options.body as RequestInit['body'], redirect: 'manual', signal: options.signal ? AbortSignal.any([options.signal, deadline]) : deadline });
    if (Number(res.headers.get('content-length') ?? '0') > MAX_BYTES) {
      await res.body?.cancel().catch(() => {});
      throw new OidcFetchError(`${target.origin}${target.pathname}: larger than ${MAX_BYTES} bytes`);
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body ?? []) {
      size += chunk.length;
      if (size > MAX_BYTES) {
        await res.body?.cancel().catch(() => {});
        throw new OidcFetchError(`${target.origin}${target.pathname}: larger than ${MAX_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    const body = [204, 304].includes(res.status) ? null : Buffer.concat(chunks);
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function person(claims: IDToken | undefined): SignedInPerson {
  if (!claims || typeof claims.sub !== 'string' || claims.sub === '') throw Errors.signInFailed('The ID token names no subject.');
  return { issuer: claims.iss, subject: claims.sub, claims };
}

/** A provider's or a check's refusal as 400 sign_in_failed, in fixed words or the provider's error code (never a token). */
function refusal(err: unknown): Error {
  if (err instanceof ApiError) return err;
  const code = (err as { error?: unknown }).error;
  if (typeof code === 'string' && /^[a-z_]{1,64}$/.test(code)) return Errors.signInFailed(`The provider refused the sign-in: ${code}.`);
  if (err instanceof OidcFetchError || (err instanceof Error && /fetch failed|timeout|aborted/i.test(err.message))) {
    return Errors.ssoUnavailable('The provider could not be reached to complete the sign-in.');
  }
  return Errors.signInFailed(`The sign-in could not be verified: ${describe(err)}.`);
}

/** openid-client's error in fixed words: its code and message name a check, never a token's value. */
function describe(err: unknown): string {
  if (err instanceof OidcFetchError) return err.message;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  let message = typeof e.message === 'string' ? e.message.slice(0, 200) : 'unknown error';
  // openid-client's own message is generic; its cause's (oauth4webapi's) names the check that failed (`"aud" (audience)`), never a value.
  const inner = (e.cause as { message?: unknown } | undefined)?.message;
  if (typeof inner === 'string' && inner !== message) message = `${message.replace(/\.$/, '')}: ${inner.slice(0, 200)}`;
  // oauth4webapi's messages name the check that failed ("unexpected JWT "aud" (audience) claim value"); they never quote a token.
  return message.replace(/[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]*/g, '<jwt>');
}
