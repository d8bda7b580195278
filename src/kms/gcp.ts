/**
 * The `gcp` KeyWrapper: Cloud KMS Encrypt / Decrypt on one symmetric key
 * (KEYWARD_KMS_KEY), with the credential's AAD, and CRC32C checks both ways as
 * Google recommends (https://cloud.google.com/kms/docs/data-integrity-guidelines):
 * the request's checksums are sent and must come back verified; the response's
 * checksums are recomputed here. A wrapped DEK's kekId is the key version that
 * Encrypt used; Decrypt is asked of the key itself, so DEKs wrapped under an
 * older version keep opening after a rotation, and `keyward keys rewrap` moves
 * them to the primary version without touching a ciphertext.
 */
import kmsPkg from '@google-cloud/kms';
import { createRequire } from 'node:module';
import { BackendUnavailable } from '../errors.js';
import { Timeout, withTimeout } from '../timeout.js';
import { UnwrapFailed, type KeyWrapper, type WrappedKey } from './key-wrapper.js';

const { KeyManagementServiceClient } = kmsPkg;
export type KmsClient = InstanceType<typeof KeyManagementServiceClient>;

// ---- CRC32C (Castagnoli), as Cloud KMS computes it -------------------------------

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32C of `data` as an unsigned 32-bit integer; crc32c("123456789") = 0xE3069283. */
export function crc32c(data: Uint8Array, seed = 0): number {
  let crc = ~seed >>> 0;
  for (let i = 0; i < data.length; i++) crc = CRC32C_TABLE[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return ~crc >>> 0;
}

// ---- errors ------------------------------------------------------------------------

/** gRPC status codes (google.rpc.Code). */
const Code = { CANCELLED: 1, INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, UNAVAILABLE: 14 } as const;

/** What the Encrypt probe wraps when GetCryptoKey is not allowed (never stored). */
const PROBE = Buffer.from('keyward-kms-probe');
const PROBE_AAD = Buffer.from('keyward/v1|probe');

/** A request or response changed in transit (CRC32C mismatch): the call may be retried, the data is not known to be bad. */
export class KmsIntegrityError extends BackendUnavailable {
  constructor(what: string) {
    super('cloud kms');
    this.message = `cloud kms: ${what} failed its CRC32C check`;
    this.name = 'KmsIntegrityError';
  }
}

const grpcCode = (err: unknown): number | undefined => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
};

/** Int64Value from the client: `{ value: number | string | Long }` (or absent). */
const int64 = (v: { value?: unknown } | null | undefined): number | undefined => {
  if (v === null || v === undefined || v.value === null || v.value === undefined) return undefined;
  return Number(String(v.value));
};


// ---- the adapter -------------------------------------------------------------------

export interface GcpKmsConfig {
  kmsKey: string | undefined;
  kmsEndpoint: string | undefined;
}

export interface GcpKeyWrapperOptions {
  /** Encrypt / Decrypt / GetCryptoKey give up (BackendUnavailable) after this long, retries included. */
  callTimeoutMs?: number;
  /** ping()'s own deadline. */
  pingTimeoutMs?: number;
  /** How long the primary version (currentKekId) is believed. */
  primaryTtlMs?: number;
  /** How long a successful ping is believed. */
  pingTtlMs?: number;
  /** Monotonic milliseconds those two ages are measured on (the injected Timers' elapsed; default the real ones). */
  elapsed?: () => number;
  /** Attempts when a response fails its CRC32C check. */
  integrityAttempts?: number;
}

/** The google-gax copy the KMS client uses, for its grpc-js (credentials must come from the same copy). */
function gaxGrpc(): typeof import('@grpc/grpc-js') {
  const require = createRequire(import.meta.resolve('@google-cloud/kms'));
  return (require('google-gax') as { grpc: typeof import('@grpc/grpc-js') }).grpc;
}

/** A Cloud KMS client: Google's endpoint, or `endpoint` (host:port) in plaintext gRPC (tests and emulators). */
export function kmsClient(endpoint: string | undefined): KmsClient {
  const clientOptions: ConstructorParameters<typeof KeyManagementServiceClient>[0] & object = {};
  if (endpoint) {
    const i = endpoint.lastIndexOf(':');
    clientOptions.apiEndpoint = endpoint.slice(0, i).replace(/^\[(.*)\]$/, '$1');
    clientOptions.port = Number(endpoint.slice(i + 1));
    clientOptions.sslCreds = gaxGrpc().credentials.createInsecure();
    // No credentials travel over a plaintext endpoint; naming the universe keeps the client from
    // probing for Application Default Credentials (a metadata-server lookup) first.
    clientOptions.universeDomain = 'googleapis.com';
  }
  return new KeyManagementServiceClient(clientOptions);
}

export class GcpKeyWrapper implements KeyWrapper {
  readonly kind = 'gcp';
  private readonly callTimeoutMs: number;
  private readonly pingTimeoutMs: number;
  private readonly primaryTtlMs: number;
  private readonly pingTtlMs: number;
  private readonly integrityAttempts: number;
  private readonly elapsed: () => number;
  private primary: { name: string; at: number } | undefined;
  private lastPing = Number.NEGATIVE_INFINITY;
  private describing: Promise<string> | undefined;
  /** GetCryptoKey was refused (no cloudkms.cryptoKeys.get): use the Encrypt probe. */
  private probeOnly = false;

  /** `config.kmsEndpoint` (host:port) means a plaintext gRPC endpoint: tests and emulators. */
  static async connect(config: GcpKmsConfig, options: GcpKeyWrapperOptions = {}): Promise<GcpKeyWrapper> {
    if (!config.kmsKey) throw new Error('KEYWARD_KMS_KEY is required with KEYWARD_KMS=gcp');
    return new GcpKeyWrapper(kmsClient(config.kmsEndpoint), config.kmsKey, options);
  }

  constructor(private readonly client: KmsClient, readonly keyName: string, options: GcpKeyWrapperOptions = {}) {
    this.callTimeoutMs = options.callTimeoutMs ?? 5_000;
    this.pingTimeoutMs = options.pingTimeoutMs ?? 2_000;
    this.primaryTtlMs = options.primaryTtlMs ?? 30_000;
    this.pingTtlMs = options.pingTtlMs ?? 5_000;
    this.elapsed = options.elapsed ?? (() => performance.now());
    this.integrityAttempts = options.integrityAttempts ?? 2;
  }

  /** Runs one KMS call within `ms`; unreachable → BackendUnavailable; INVALID_ARGUMENT from Decrypt → UnwrapFailed (by the caller). */
  private async call<T>(fn: () => Promise<T>, ms = this.callTimeoutMs): Promise<T> {
    try {
      return await withTimeout(fn(), ms);
    } catch (err) {
      const code = grpcCode(err);
      if (err instanceof Timeout || code === Code.UNAVAILABLE || code === Code.DEADLINE_EXCEEDED || code === Code.CANCELLED || code === Code.RESOURCE_EXHAUSTED) {
        throw new BackendUnavailable('cloud kms', { cause: err });
      }
      throw err;
    }
  }

  /** Retries a call whose checksums did not match (Google's guidance: a few attempts, then fail). */
  private async withIntegrity<T>(fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!(err instanceof KmsIntegrityError) || attempt >= this.integrityAttempts) throw err;
      }
    }
  }

  wrap(dek: Buffer, aad: Buffer): Promise<WrappedKey> {
    return this.withIntegrity(async () => {
      const [res] = await this.call(() => this.client.encrypt({
        name: this.keyName,
        plaintext: dek,
        additionalAuthenticatedData: aad,
        plaintextCrc32c: { value: crc32c(dek) },
        additionalAuthenticatedDataCrc32c: { value: crc32c(aad) },
      }, { timeout: this.callTimeoutMs }));
      if (!res.verifiedPlaintextCrc32c) throw new KmsIntegrityError('Encrypt request (plaintext)');
      if (!res.verifiedAdditionalAuthenticatedDataCrc32c) throw new KmsIntegrityError('Encrypt request (AAD)');
      const wrapped = Buffer.from(res.ciphertext as Uint8Array);
      if (int64(res.ciphertextCrc32c) !== crc32c(wrapped)) throw new KmsIntegrityError('Encrypt response (ciphertext)');
      if (!res.name || !res.name.startsWith(`${this.keyName}/cryptoKeyVersions/`)) throw new Error('Cloud KMS Encrypt answered without a key version of the configured key');
      return { wrapped, kekId: res.name };
    });
  }

  unwrap(wrapped: Buffer, aad: Buffer, kekId: string): Promise<Buffer> {
    if (!kekId.startsWith(`${this.keyName}/cryptoKeyVersions/`)) {
      return Promise.reject(new Error(`the key-encryption key ${kekId} is not a version of the configured Cloud KMS key`));
    }
    return this.withIntegrity(async () => {
      let res;
      try {
        [res] = await this.call(() => this.client.decrypt({
          name: this.keyName,
          ciphertext: wrapped,
          ciphertextCrc32c: { value: crc32c(wrapped) },
          additionalAuthenticatedData: aad,
          additionalAuthenticatedDataCrc32c: { value: crc32c(aad) },
        }, { timeout: this.callTimeoutMs }));
      } catch (err) {
        if (grpcCode(err) === Code.INVALID_ARGUMENT) {
          // KMS says the request's own checksum did not match: corrupted on the way there, not a bad record.
          if (/checksum|crc32c/i.test((err as Error).message)) throw new KmsIntegrityError('Decrypt request');
          throw new UnwrapFailed();
        }
        throw err;
      }
      const plaintext = Buffer.from(res.plaintext as Uint8Array);
      if (int64(res.plaintextCrc32c) !== crc32c(plaintext)) {
        plaintext.fill(0);
        throw new KmsIntegrityError('Decrypt response (plaintext)');
      }
      return plaintext;
    });
  }

  /**
   * The primary version's name, believed for a short while; concurrent askers
   * share one call. GetCryptoKey needs cloudkms.cryptoKeys.get (roles/cloudkms.viewer),
   * which roles/cloudkms.cryptoKeyEncrypterDecrypter does not grant: without it
   * (PERMISSION_DENIED, once) an Encrypt of a fixed probe answers instead, as
   * Encrypt on a key uses and names its primary version.
   */
  private describe(maxAgeMs: number, timeoutMs: number): Promise<string> {
    if (this.primary && this.elapsed() - this.primary.at < maxAgeMs) return Promise.resolve(this.primary.name);
    this.describing ??= this.call(async () => {
      let name: string | null | undefined;
      if (!this.probeOnly) {
        try {
          const [key] = await this.client.getCryptoKey({ name: this.keyName }, { timeout: timeoutMs });
          name = key.primary?.name;
          if (!name) throw new Error(`Cloud KMS key ${this.keyName} has no primary version (is it a symmetric ENCRYPT_DECRYPT key?)`);
        } catch (err) {
          if (grpcCode(err) !== Code.PERMISSION_DENIED) throw err;
          this.probeOnly = true;
        }
      }
      if (this.probeOnly) {
        const [res] = await this.client.encrypt({
          name: this.keyName, plaintext: PROBE, additionalAuthenticatedData: PROBE_AAD,
          plaintextCrc32c: { value: crc32c(PROBE) }, additionalAuthenticatedDataCrc32c: { value: crc32c(PROBE_AAD) },
        }, { timeout: timeoutMs });
        name = res.name;
        if (!name?.startsWith(`${this.keyName}/cryptoKeyVersions/`)) throw new Error('Cloud KMS Encrypt answered without a key version of the configured key');
      }
      this.primary = { name: name!, at: this.elapsed() };
      return name!;
    }, timeoutMs).finally(() => (this.describing = undefined));
    return this.describing;
  }

  currentKekId(): Promise<string> {
    return this.describe(this.primaryTtlMs, this.callTimeoutMs);
  }

  async ping(): Promise<void> {
    if (this.elapsed() - this.lastPing < this.pingTtlMs) return;
    await this.describe(0, this.pingTimeoutMs);
    this.lastPing = this.elapsed();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
