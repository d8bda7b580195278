/**
 * What a signer mints and keeps in memory only (a cloud access token, AWS temporary credentials):
 * minted on first use; one mint at a time whoever asks (single flight: any number of concurrent
 * requests wait on the same one); handed out synchronously while fresh; refreshed in the background
 * from REFRESH_BEFORE_MS before expiry while requests keep the current one (none waits at steady
 * state); never handed out within SEND_MARGIN_MS of expiry, or the margin its owner sets (then requests
 * wait for the next). A value minted earlier (`issuedAt`, e.g. read back from the vault) ages from then. A failed
 * mint answers every request waiting on it, and the next request tries again; a failed background
 * refresh is tried again BACKGROUND_RETRY_MS later while the current value still serves. Times come
 * from the injected clock. Nothing here is stored or logged.
 */
import { createHash } from 'node:crypto';
import type { ApiError } from '../../../errors.js';
import type { CredentialSecrets } from '../../../catalog/provider.js';
import type { Logger } from '../../../log.js';
import { withTimeout } from '../../../timeout.js';
import { mintFailure, ShortLivedError, type Minted } from './token-fetch.js';

export const REFRESH_BEFORE_MS = 5 * 60_000;
export const SEND_MARGIN_MS = 60_000;
export const BACKGROUND_RETRY_MS = 5_000;
/** A mint (every request it makes, retries included) gives up after this long. */
export const MINT_TIMEOUT_MS = 20_000;
/** Identities whose minted values are kept at once (one per credential); the oldest is dropped first. */
const MAX_IDENTITIES = 10_000;

export { ShortLivedError, type Minted };

/** Whether a value minted with this lifetime can be sent at all (it lives past twice the send margin). */
export const sendable = (lifetimeMs: number): boolean => lifetimeMs > SEND_MARGIN_MS * 2;

/** How long before expiry a value stops being sent, from its lifetime (default: SEND_MARGIN_MS whatever the lifetime). */
export type SendMargin = (lifetimeMs: number) => number;
const FIXED_MARGIN: SendMargin = () => SEND_MARGIN_MS;

export class MintedCache<T> {
  private current: { value: T; refreshAt: number; sendUntil: number } | undefined;
  private inflight: Promise<T> | undefined;
  /** No background refresh before this (one just failed). */
  private retryAt = Number.NEGATIVE_INFINITY;
  /** The values handed out recently (the current one and the one before), for masking an echo. */
  private recent: T[] = [];
  mints = 0;

  constructor(
    private readonly mint: () => Promise<Minted<T>>,
    private readonly now: () => number,
    /** A background refresh failed (the current value still serves until its margin). */
    private readonly onBackgroundFailure: (err: unknown) => void = () => {},
    private readonly sendMargin: SendMargin = FIXED_MARGIN,
  ) {}

  /** The current value at once, or the mint every concurrent caller shares. */
  get(): T | Promise<T> {
    const now = this.now();
    const cur = this.current;
    if (cur && now < cur.sendUntil) {
      if (now >= cur.refreshAt && !this.inflight && now >= this.retryAt) this.start().catch(this.onBackgroundFailure);
      return cur.value;
    }
    return this.inflight ?? this.start();
  }

  /** Values to mask in a response: those handed out recently. */
  masks(): readonly T[] {
    return this.recent;
  }

  private start(): Promise<T> {
    const flight = this.refresh().finally(() => {
      if (this.inflight === flight) this.inflight = undefined;
    });
    this.inflight = flight;
    return flight;
  }

  private async refresh(): Promise<T> {
    const started = this.now();
    this.mints++;
    try {
      const { value, lifetimeMs, issuedAt = started } = await withTimeout(this.mint(), MINT_TIMEOUT_MS);
      const margin = this.sendMargin(lifetimeMs);
      if (lifetimeMs <= margin * 2) throw new ShortLivedError('the minted credential', lifetimeMs, margin * 2);
      const expiresAt = issuedAt + lifetimeMs;
      // Five minutes early, or half-way through a short life.
      this.current = { value, refreshAt: Math.max(expiresAt - REFRESH_BEFORE_MS, issuedAt + lifetimeMs / 2), sendUntil: expiresAt - margin };
      this.retryAt = Number.NEGATIVE_INFINITY;
      this.recent = [value, ...this.recent.filter((v) => v !== value)].slice(0, 2);
      return value;
    } catch (err) {
      this.retryAt = this.now() + BACKGROUND_RETRY_MS;
      throw err;
    }
  }
}

/** Minted caches by identity (hashed), bounded: the oldest is dropped first. */
export class MintedCaches<T> {
  private readonly byIdentity = new Map<string, MintedCache<T>>();

  constructor(
    private readonly now: () => number, private readonly onBackgroundFailure?: (err: unknown) => void, private readonly max = MAX_IDENTITIES,
    private readonly sendMargin?: SendMargin,
  ) {}

  for(identity: string, mint: () => Promise<Minted<T>>): MintedCache<T> {
    const id = createHash('sha256').update(identity).digest('hex');
    let cache = this.byIdentity.get(id);
    if (!cache) {
      if (this.byIdentity.size >= this.max) this.byIdentity.delete(this.byIdentity.keys().next().value!);
      cache = new MintedCache(mint, this.now, this.onBackgroundFailure, this.sendMargin);
      this.byIdentity.set(id, cache);
    }
    return cache;
  }

  /** Mints so far, over every identity (tests count them). */
  get mints(): number {
    let n = 0;
    for (const c of this.byIdentity.values()) n += c.mints;
    return n;
  }
}

/**
 * One signer's minted values per credential: the bounded caches by the credential's identity (its organisation,
 * id and the fields that decide what is minted), found again per request through the credential value itself.
 * A failed mint reaches the caller as an ApiError (token-fetch.ts's mintFailure) and is logged once, masked; so does
 * one too short-lived to send (502 upstream_auth_failed: the minted token is unusable).
 */
export class CredentialTokens<T> {
  private readonly caches: MintedCaches<T>;
  private readonly byCredential = new WeakMap<CredentialSecrets, MintedCache<T>>();
  private readonly maskMemo = new WeakMap<readonly T[], readonly string[]>();

  constructor(
    private readonly options: {
      now: () => number;
      log: Logger | undefined;
      /** What is minted, for the log line, e.g. "AWS STS temporary credentials". */
      what: string;
      /** The identity minted values are shared by: two credential values with the same identity share one cache. */
      identity(credential: CredentialSecrets): string;
      mint(credential: CredentialSecrets): Promise<Minted<T>>;
      /** The strings of a minted value to mask in a response. */
      masksOf(value: T): readonly string[];
      /** Default SEND_MARGIN_MS (MintedCache). */
      sendMargin?: SendMargin;
    },
  ) {
    // A failed background refresh was logged by the mint itself; the current value keeps serving.
    this.caches = new MintedCaches<T>(options.now, undefined, MAX_IDENTITIES, options.sendMargin);
  }

  get(credential: CredentialSecrets): T | Promise<T> {
    let cache = this.byCredential.get(credential);
    if (!cache) {
      cache = this.caches.for(this.options.identity(credential), async () => {
        try {
          const minted = await this.options.mint(credential);
          // Checked here too (the cache would refuse it anyway): the caller's answer names what was minted, and it is logged once.
          const margin = (this.options.sendMargin ?? FIXED_MARGIN)(minted.lifetimeMs);
          if (minted.lifetimeMs <= margin * 2) throw new ShortLivedError(this.options.what, minted.lifetimeMs, margin * 2);
          return minted;
        } catch (err) {
          throw this.failed(credential, err);
        }
      });
      this.byCredential.set(credential, cache);
    }
    return cache.get();
  }

  /** Sets `Authorization: Bearer <token>` with the credential's token: at once when it is cached, else once it is minted. */
  bearer(this: CredentialTokens<string>, request: { headers: Record<string, string | string[]> }, credential: CredentialSecrets): void | Promise<void> {
    const token = this.get(credential);
    if (typeof token === 'string') {
      request.headers.authorization = `Bearer ${token}`;
      return;
    }
    return token.then((t) => {
      request.headers.authorization = `Bearer ${t}`;
    });
  }

  /** The values minted recently for this credential, as strings to mask (none before its first mint). */
  masks(credential: CredentialSecrets): readonly string[] {
    const recent = this.byCredential.get(credential)?.masks();
    if (!recent || recent.length === 0) return [];
    let masks = this.maskMemo.get(recent);
    if (!masks) {
      masks = recent.flatMap((v) => this.options.masksOf(v));
      this.maskMemo.set(recent, masks);
    }
    return masks;
  }

  get mints(): number {
    return this.caches.mints;
  }

  private failed(credential: CredentialSecrets, err: unknown): ApiError {
    const api = mintFailure(err);
    this.options.log?.warn({ credential: credential.owner?.credentialId, org: credential.owner?.orgId, code: api.code, reason: api.message }, `${this.options.what} could not be minted`);
    return api;
  }
}
