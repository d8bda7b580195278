/**
 * The OIDC issuer's signing keys (issuer.ts), as a ring of numbered entries among the store's
 * deployment secrets: `oidc-signing-key:<n>`, each wrapped by the KEK under an AAD naming it, like a
 * DEK (so `keyward keys rewrap` moves them, and an entry moved to another name never unwraps). An
 * entry is a local RSA-2048 key (PKCS#8, generated here once), or the name of a Cloud KMS key version
 * (KEYWARD_KMS_SIGNING_KEY: its private key never leaves KMS, never enters this process), with its
 * public JWK and the time it starts signing.
 *
 * Publishing before signing: an entry is in the JWKS from the moment it is stored; the newest entry
 * whose time has come signs; an older one stays published RETIRE_AFTER_MS after a newer one starts
 * signing, longer than any token it signed lives. A rotation's entry starts signing DEFAULT_LEAD_MS
 * after it is stored, so every instance, and a cloud's cached copy of the JWKS, has it first.
 *
 * Entries are immutable and never deleted, so instances agree by reading them: the whole ring once,
 * then one read for a next entry when the JWKS is asked for (at most every JWKS_FRESH_MS) or before a
 * token is signed (at most every SIGN_FRESH_MS): a rotation made with the CLI reaches the JWKS within
 * seconds. Never a store read per proxied request: tokens are signed once per cloud-token mint.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { JWK } from 'jose';
import type { Clock } from '../clock.js';
import type { Logger } from '../log.js';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import type { SecretStore, StoredSecret } from '../store/ports.js';
import { secretAad } from '../vault/deployment-secrets.js';
import { loadJose } from './jose.js';

export const SIGNING_KEY_PREFIX = 'oidc-signing-key:';
/**
 * A rotation's key is published this long before it signs (unless told otherwise): long enough for every cloud's
 * cached copy of the JWKS to hold it. AWS STS caches the JWKS as its Cache-Control says (the gateway serves
 * max-age=60); Entra ID and Google publish no cache time for an issuer's keys, so an hour rather than minutes.
 */
export const DEFAULT_LEAD_MS = 60 * 60_000;
/** A key stays published this long after a newer one starts signing: a token lives 5 minutes, plus clock skew and refresh lag. */
export const RETIRE_AFTER_MS = 15 * 60_000;
/** The JWKS reads the store for a new entry at most this often (it is served without a token). */
export const JWKS_FRESH_MS = 5_000;
/** Signing reads the store for a new entry at most this often. */
export const SIGN_FRESH_MS = 60_000;
const FORMAT = 1;
const KIND = { local: 1, kms: 2 } as const;

/** One entry of the ring, opened. */
export interface SigningKey {
  readonly n: number;
  readonly name: string;
  readonly kid: string;
  readonly alg: 'RS256';
  /** The public key as the JWKS publishes it (kid, alg, use included). */
  readonly jwk: Readonly<JWK>;
  readonly createdAt: number;
  readonly activatesAt: number;
  /** A Cloud KMS key version (KMS signs); absent: a local key. */
  readonly kmsVersion?: string;
}

/** What signs with a KMS entry (kms/gcp-signer.ts, loaded only when one is used). */
export interface KmsSigning {
  /** KEYWARD_KMS_SIGNING_KEY, if set. */
  readonly version: string | undefined;
  publicKey(version: string): Promise<KeyObject>;
  sign(version: string, data: Buffer): Promise<Buffer>;
  close(): Promise<void>;
}

/** The key that signs now and how: its private key (local), or KMS's AsymmetricSign (RS256 over `data`). */
export type ActiveKey = { key: SigningKey } & ({ privateKey: KeyObject; kmsSign?: undefined } | { kmsSign(data: Buffer): Promise<Buffer>; privateKey?: undefined });

interface Opened {
  key: SigningKey;
  /** A local entry's private key, while it may still sign. */
  privateKey?: KeyObject;
}

/** The wrapped plaintext: [format][kind][u32 length][JSON {activates_at, jwk, kms?}][PKCS#8 DER of a local key]. */
function encodeEntry(kind: keyof typeof KIND, meta: { activates_at: number; jwk: JWK; kms?: string }, der: Uint8Array = Buffer.alloc(0)): Buffer {
  const json = Buffer.from(JSON.stringify(meta), 'utf8');
  const head = Buffer.alloc(6);
  head.writeUInt8(FORMAT, 0);
  head.writeUInt8(KIND[kind], 1);
  head.writeUInt32BE(json.length, 2);
  return Buffer.concat([head, json, der]);
}

/** An entry's wrapped plaintext, read: its kind, metadata and (a local key) its PKCS#8 DER, a view into `plain`. */
export function decodeEntry(plain: Buffer, name: string): { kind: keyof typeof KIND; meta: { activates_at: number; jwk: JWK; kms?: string }; der: Buffer } {
  if (plain.length < 6 || plain.readUInt8(0) !== FORMAT) throw new Error(`${name} is in an unknown format`);
  const kind = plain.readUInt8(1) === KIND.kms ? 'kms' : 'local';
  const length = plain.readUInt32BE(2);
  const meta = JSON.parse(plain.subarray(6, 6 + length).toString('utf8')) as { activates_at: number; jwk: JWK; kms?: string };
  return { kind, meta, der: plain.subarray(6 + length) };
}

export class SigningKeyRing {
  private entries: Opened[] = [];
  private loading: Promise<void> | undefined;
  private reading: Promise<void> | undefined;
  private lastRead = Number.NEGATIVE_INFINITY;
  /** Reads and appends run one at a time: each adds the entry after the last one held. */
  private serial: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: SecretStore,
    private readonly wrapper: KeyWrapper,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly kms: KmsSigning | undefined,
  ) {}

  /** The keys the JWKS publishes now (pending ones included). */
  async published(): Promise<SigningKey[]> {
    await this.fresh(JWKS_FRESH_MS);
    const now = this.clock.now();
    return this.entries.filter((_, i) => {
      const retiredAt = Math.min(...this.entries.slice(i + 1).map((e) => e.key.activatesAt));
      return now < retiredAt + RETIRE_AFTER_MS;
    }).map((e) => e.key);
  }

  /** The key that signs now: a local private key, or a Cloud KMS version's RS256 signing. */
  async signer(): Promise<ActiveKey> {
    await this.fresh(SIGN_FRESH_MS);
    const now = this.clock.now();
    const i = this.entries.findLastIndex((e) => e.key.activatesAt <= now);
    if (i < 0) throw new Error('no signing key has started signing yet');
    const active = this.entries[i]!;
    // Private keys older than the one that signs never sign again: not kept in memory.
    for (const e of this.entries.slice(0, i)) delete e.privateKey;
    const version = active.key.kmsVersion;
    if (version === undefined) return { key: active.key, privateKey: active.privateKey! };
    const kms = this.kms;
    if (!kms) throw new Error(`the signing key is Cloud KMS ${version}, and this process has no KEYWARD_KMS=gcp`);
    return { key: active.key, kmsSign: (data) => kms.sign(version, data) };
  }

  /**
   * `keyward keys rotate-signing`: stores a new key (a local one, or KEYWARD_KMS_SIGNING_KEY's version when it is not
   * in the ring yet), published at once, signing from `leadMs` later.
   */
  async rotate(leadMs = DEFAULT_LEAD_MS): Promise<SigningKey> {
    // Read, not loaded: loading would add KEYWARD_KMS_SIGNING_KEY's version itself, on the default lead.
    await this.read();
    const version = this.kms?.version;
    if (version !== undefined && this.entries.some((e) => e.key.kmsVersion === version)) {
      throw new Error(`KEYWARD_KMS_SIGNING_KEY (${version}) is in the ring already: create a new key version in Cloud KMS and set it first`);
    }
    // A ring's first key signs at once: no token can have been signed before it.
    return this.append(version, this.clock.now() + (this.entries.length === 0 ? 0 : leadMs), () => true);
  }

  /** Every entry's stored name (for `keyward keys rewrap`): read, never made. */
  async storedNames(): Promise<string[]> {
    await this.read();
    return this.entries.map((e) => e.key.name);
  }

  close(): Promise<void> {
    return this.kms?.close() ?? Promise.resolve();
  }

  /** The ring as read (tests, the CLI's report), without reading the store again. */
  async all(): Promise<SigningKey[]> {
    await this.ensureLoaded();
    return this.entries.map((e) => e.key);
  }

  private async fresh(maxAgeMs: number): Promise<void> {
    await this.ensureLoaded();
    if (this.clock.now() - this.lastRead < maxAgeMs) return;
    this.reading ??= this.read().finally(() => (this.reading = undefined));
    await this.reading;
  }

  /** The whole ring, once; then the first key is made (or KEYWARD_KMS_SIGNING_KEY's version added) if needed. A failed load is tried again next time. */
  private ensureLoaded(): Promise<void> {
    this.loading ??= (async () => {
      await this.read();
      const version = this.kms?.version;
      // A version the ring does not hold yet: added, signing at once in a new ring, after the lead when it replaces a key.
      if (version !== undefined && !this.entries.some((e) => e.key.kmsVersion === version)) {
        const at = this.entries.length === 0 ? this.clock.now() : this.clock.now() + DEFAULT_LEAD_MS;
        await this.append(version, at, () => !this.entries.some((e) => e.key.kmsVersion === version));
      } else if (this.entries.length === 0) {
        await this.append(undefined, this.clock.now(), () => this.entries.length === 0);
      }
    })().catch((err: unknown) => {
      this.loading = undefined;
      throw err;
    });
    return this.loading;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.serial.then(fn, fn);
    this.serial = run.catch(() => {});
    return run;
  }

  /** Entries after the last one held, until a number is missing. */
  private read(): Promise<void> {
    return this.exclusive(async () => {
      this.lastRead = this.clock.now();
      for (;;) {
        const n = this.entries.length + 1;
        const stored = await this.store.getSecret(`${SIGNING_KEY_PREFIX}${n}`);
        if (!stored) return;
        this.entries.push(await this.open(n, stored));
      }
    });
  }

  private async open(n: number, stored: StoredSecret): Promise<Opened> {
    const plain = await this.wrapper.unwrap(stored.wrapped, secretAad(stored.name), stored.kekId);
    try {
      const { kind, meta, der } = decodeEntry(plain, stored.name);
      const key: SigningKey = Object.freeze({
        n, name: stored.name, kid: meta.jwk.kid!, alg: 'RS256' as const, jwk: Object.freeze({ ...meta.jwk }), createdAt: stored.createdAt, activatesAt: meta.activates_at,
        ...(kind === 'kms' ? { kmsVersion: meta.kms! } : {}),
      });
      if (kind === 'kms') return { key };
      return { key, privateKey: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }) };
    } finally {
      plain.fill(0);
    }
  }

  /** The public JWK of a key as published: RFC 7638 thumbprint as its kid. */
  private async publicJwk(publicKey: KeyObject): Promise<JWK> {
    const { n, e, kty } = publicKey.export({ format: 'jwk' });
    const jwk = { kty: kty!, n: n!, e: e! };
    const kid = await (await loadJose()).calculateJwkThumbprint(jwk, 'sha256');
    return { ...jwk, kid, alg: 'RS256', use: 'sig' };
  }

  /**
   * Stores a new entry as the next number. If another instance stored that number first, its entry joins the
   * ring and `stillNeeded` decides whether to try the number after it.
   */
  private async append(kmsVersion: string | undefined, activatesAt: number, stillNeeded: () => boolean): Promise<SigningKey> {
    let der: Buffer | undefined;
    let publicKey: KeyObject;
    if (kmsVersion !== undefined) {
      publicKey = await this.kms!.publicKey(kmsVersion);
    } else {
      const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      der = pair.privateKey.export({ format: 'der', type: 'pkcs8' });
      publicKey = createPublicKey(pair.privateKey);
    }
    const jwk = await this.publicJwk(publicKey);
    const plain = encodeEntry(kmsVersion === undefined ? 'local' : 'kms', { activates_at: activatesAt, jwk, ...(kmsVersion ? { kms: kmsVersion } : {}) }, der);
    der?.fill(0);
    try {
      // One at a time with reads: the number taken is the one after the last entry held.
      return await this.exclusive(async () => {
        for (;;) {
          const n = this.entries.length + 1;
          const name = `${SIGNING_KEY_PREFIX}${n}`;
          const { wrapped, kekId } = await this.wrapper.wrap(plain, secretAad(name));
          const stored = await this.store.createSecretIfAbsent({ name, wrapped, kekId, createdAt: this.clock.now() });
          const opened = await this.open(n, stored);
          this.entries.push(opened);
          if (stored.wrapped.equals(wrapped)) {
            this.log.info({ kid: jwk.kid, n, kms: kmsVersion, activates_at: new Date(activatesAt).toISOString() }, 'OIDC signing key stored');
            return opened.key;
          }
          if (!stillNeeded()) return opened.key;
        }
      });
    } finally {
      plain.fill(0);
    }
  }
}

/**
 * Cloud KMS signing for a ring (KEYWARD_KMS=gcp): its client made on first use only, so a gateway whose ring holds
 * no KMS entry never connects for it.
 */
export function lazyKmsSigning(version: string | undefined, endpoint: string | undefined): KmsSigning {
  let signer: Promise<import('../kms/gcp-signer.js').GcpAsymmetricSigner> | undefined;
  const get = () => (signer ??= import('../kms/gcp-signer.js').then((m) => m.GcpAsymmetricSigner.connect(endpoint)));
  return {
    version,
    publicKey: async (v) => (await get()).publicKey(v),
    sign: async (v, data) => (await get()).sign(v, data),
    close: async () => {
      if (signer) await (await signer).close();
    },
  };
}
