/**
 * One OIDC issuer's signing keys, as jose's key resolver for jwtVerify. Loaded on first use from
 * the issuer's discovery document (`<issuer>/.well-known/openid-configuration`, whose `issuer`
 * must be exactly the configured one) → `jwks_uri` → the JWKS, through the bounded fetcher
 * (oidc-fetch.ts). Then cached: refreshed when older than MAX_AGE_MS, or when a token names a
 * `kid` the cached set lacks (an issuer's key rotation, picked up without a restart), but never
 * within COOLDOWN_MS of the last attempt, so a flood of tokens with made-up `kid`s costs the issuer
 * one fetch per cool-down. At most one load runs at a time: concurrent callers share it. While the
 * issuer cannot be reached, cached keys serve up to MAX_STALE_MS after their load.
 * Only public signature keys (RSA, EC, OKP) are kept: a symmetric `oct` key published in a JWKS
 * would let anyone forge HMAC tokens.
 */
import type { CryptoKey, FlattenedJWSInput, JSONWebKeySet, JWK, JWSHeaderParameters, LocalJWKSet } from 'jose';
import { loadJose } from './jose.js';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import { fetchableUrl, fetchJsonObject, OidcFetchError, type FetchLimits } from './oidc-fetch.js';

/** Cached keys are refreshed (on the next token) after this long. */
export const MAX_AGE_MS = 10 * 60_000;
/** No new load sooner than this after the last attempt, whatever tokens arrive. */
export const COOLDOWN_MS = 30_000;
/** While the issuer cannot be reached, cached keys keep verifying this long after they were loaded, then no longer (a key the issuer withdrew must not live forever here). */
export const MAX_STALE_MS = 60 * 60_000;
/** A JWKS holding more keys than this is refused (issuers publish a handful). */
const MAX_KEYS = 64;
const SIGNATURE_KEY_TYPES = new Set(['RSA', 'EC', 'OKP']);

export class IssuerKeys {
  private keys: { set: LocalJWKSet; loadedAt: number } | undefined;
  private loading: Promise<void> | undefined;
  private lastAttempt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly issuer: string,
    private readonly limits: FetchLimits,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** jose's key resolver: the key the token's header names, loading or refreshing the set as the header says above. */
  readonly getKey = async (header: JWSHeaderParameters, token: FlattenedJWSInput): Promise<CryptoKey> => {
    if (!this.keys) {
      await this.refresh();
    } else if (this.clock.now() - this.keys.loadedAt >= MAX_AGE_MS) {
      // Stale keys still verify while the issuer cannot be reached: the refresh is retried after the cool-down.
      await this.refresh().catch(() => {});
    }
    const keys = this.keys;
    if (!keys || this.clock.now() - keys.loadedAt >= MAX_STALE_MS) throw new OidcFetchError(`the signing keys of ${this.issuer} could not be loaded`);
    try {
      return await keys.set(header, token);
    } catch (err) {
      if (!(err instanceof (await loadJose()).errors.JWKSNoMatchingKey)) throw err;
      await this.refresh().catch(() => {});
      if (this.keys === keys) throw err;
      return this.keys!.set(header, token);
    }
  };

  /** Joins the load in flight, or starts one unless the last attempt was within the cool-down. */
  private refresh(): Promise<void> {
    if (this.loading) return this.loading;
    if (this.clock.now() - this.lastAttempt < COOLDOWN_MS) return Promise.resolve();
    this.lastAttempt = this.clock.now();
    this.loading = this.load().finally(() => (this.loading = undefined));
    return this.loading;
  }

  private async load(): Promise<void> {
    try {
      const discovery = await fetchJsonObject(`${this.issuer}/.well-known/openid-configuration`, this.limits);
      if (discovery.issuer !== this.issuer) throw new OidcFetchError(`the discovery document of ${this.issuer} names another issuer`);
      if (typeof discovery.jwks_uri !== 'string') throw new OidcFetchError(`the discovery document of ${this.issuer} has no jwks_uri`);
      fetchableUrl(discovery.jwks_uri, this.limits.allowHttpLoopback);
      const jwks = await fetchJsonObject(discovery.jwks_uri, this.limits);
      if (!Array.isArray(jwks.keys) || jwks.keys.length > MAX_KEYS) throw new OidcFetchError(`the JWKS of ${this.issuer} is not a key set of at most ${MAX_KEYS} keys`);
      const keys = (jwks.keys as unknown[]).filter((k): k is JWK => typeof k === 'object' && k !== null && SIGNATURE_KEY_TYPES.has(String((k as JWK).kty))
        && ((k as JWK).use === undefined || (k as JWK).use === 'sig'));
      const { createLocalJWKSet } = await loadJose();
      this.keys = { set: createLocalJWKSet({ keys } as JSONWebKeySet), loadedAt: this.clock.now() };
      this.log.info({ issuer: this.issuer, keys: keys.length }, 'OIDC issuer keys loaded');
    } catch (err) {
      this.log.warn({ issuer: this.issuer, reason: err instanceof Error ? err.message : 'unknown' }, 'OIDC issuer keys could not be loaded');
      throw err;
    }
  }
}
