/**
 * Secrets of the deployment, the same on every instance and across restarts
 * (the key of the Idempotency-Key request HMAC, single sign-on's flow key, the sessions' anti-CSRF key, the upstream OAuth connect state's key). The first instance
 * that needs one makes 32 random bytes, wraps them with the KeyWrapper (local
 * key or Cloud KMS) under an AAD naming the secret, and stores them
 * create-if-absent; every instance reads back the one stored, unwraps it once
 * and keeps it in memory. The store never holds a secret in plaintext.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { UnwrapFailed, type KeyWrapper } from '../kms/key-wrapper.js';
import type { SecretStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import type { RewrapFailure } from './rewrap-service.js';

/** The key of the HMAC an Idempotency-Key record holds instead of its request body. */
export const IDEMPOTENCY_HMAC_KEY = 'idempotency-hmac';
/** The key that encrypts a single sign-on's state, nonce and PKCE verifier into its short-lived cookie (vault/sign-in.ts). */
export const SSO_FLOW_KEY = 'sso-flow';
/** The key of the HMAC that makes a session's anti-CSRF value from its hash (vault/sessions.ts). */
export const SESSION_CSRF_KEY = 'session-csrf';
/** The key of the upstream OAuth connect flow's `state` (an encrypted JWT: api/oauth-connect.ts). */
export const OAUTH_STATE_KEY = 'oauth-connect-state';
/** Every secret `keys rewrap` moves to the current key-encryption key. */
const SECRET_NAMES = [IDEMPOTENCY_HMAC_KEY, SSO_FLOW_KEY, SESSION_CSRF_KEY, OAUTH_STATE_KEY];

/** Binds a wrapped secret to its name: one moved to another name (or into a credential) never unwraps. */
export const secretAad = (name: string): Buffer => Buffer.from(`keyward/v1|deployment-secret|${name}`, 'utf8');

@injectable()
export class DeploymentSecrets {
  private readonly loaded = new Map<string, Promise<Buffer>>();

  constructor(
    @inject(Symbols.SecretStore) private readonly store: SecretStore,
    @inject(Symbols.KeyWrapper) private readonly wrapper: KeyWrapper,
    @inject(Symbols.Clock) private readonly clock: Clock,
  ) {}

  /** The named 32-byte secret. A failed load (store or KMS down) is not kept: the next call tries again. */
  get(name: string): Promise<Buffer> {
    let secret = this.loaded.get(name);
    if (!secret) {
      secret = this.load(name);
      this.loaded.set(name, secret);
      secret.catch(() => this.loaded.delete(name));
    }
    return secret;
  }

  /** HMAC-SHA-256 of `data` under the named secret, hex. */
  async hmac(name: string, data: Buffer): Promise<string> {
    return createHmac('sha256', await this.get(name)).update(data).digest('hex');
  }

  private async load(name: string): Promise<Buffer> {
    const aad = secretAad(name);
    const existing = await this.store.getSecret(name);
    if (existing) return this.wrapper.unwrap(existing.wrapped, aad, existing.kekId);
    const secret = randomBytes(32);
    const { wrapped, kekId } = await this.wrapper.wrap(secret, aad);
    const stored = await this.store.createSecretIfAbsent({ name, wrapped, kekId, createdAt: this.clock.now() });
    if (stored.wrapped.equals(wrapped)) return secret;
    // Another instance stored its own first: that one is the deployment's.
    secret.fill(0);
    return this.wrapper.unwrap(stored.wrapped, aad, stored.kekId);
  }

  /**
   * `keyward keys rewrap`: moves every stored secret to the current KEK (compare-and-swap), and the `others` wrapped
   * the same way under their names (the OIDC signing keys); what could not be unwrapped.
   */
  async rewrap(others: readonly string[] = []): Promise<{ rewrapped: number; failed: RewrapFailure[] }> {
    const current = await this.wrapper.currentKekId();
    const out = { rewrapped: 0, failed: [] as RewrapFailure[] };
    for (const name of [...SECRET_NAMES, ...others]) {
      const stored = await this.store.getSecret(name);
      if (!stored || stored.kekId === current) continue;
      const aad = secretAad(name);
      let secret: Buffer;
      try {
        secret = await this.wrapper.unwrap(stored.wrapped, aad, stored.kekId);
      } catch (err) {
        const reason = err instanceof UnwrapFailed ? 'the wrapped secret fails its integrity check' : err instanceof Error ? err.message : 'unwrap failed';
        out.failed.push({ id: `secret:${name}`, orgId: '', kekId: stored.kekId, reason });
        continue;
      }
      try {
        const next = await this.wrapper.wrap(secret, aad);
        if (await this.store.rewrapSecret(name, stored.wrapped, next.wrapped, next.kekId)) out.rewrapped++;
      } finally {
        secret.fill(0);
      }
    }
    return out;
  }
}
