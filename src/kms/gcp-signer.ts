/**
 * Cloud KMS as the OIDC issuer's signer (KEYWARD_KMS_SIGNING_KEY): GetPublicKey for the JWKS and
 * AsymmetricSign over a SHA-256 digest for each JWT, so the private key never leaves KMS and is never
 * in this process. Only RSA_SIGN_PKCS1_{2048,3072,4096}_SHA256 versions (JWS RS256): the one
 * algorithm AWS STS, Entra ID and Google STS all accept from an OIDC issuer. CRC32C both ways as
 * Google recommends (https://cloud.google.com/kms/docs/data-integrity-guidelines): the digest's
 * checksum is sent and must come back verified, the signature's and the PEM's are recomputed here,
 * and the answering version must be the one asked.
 */
import { createHash, createPublicKey, type KeyObject } from 'node:crypto';
import kmsPkg from '@google-cloud/kms';
import { BackendUnavailable } from '../errors.js';
import { Timeout, withTimeout } from '../timeout.js';
import { crc32c, KmsIntegrityError, kmsClient, type KmsClient } from './gcp.js';

/** The KMS algorithms whose signatures are JWS RS256 as they come (PKCS#1 v1.5 over SHA-256). */
const RS256_ALGORITHMS = new Set(['RSA_SIGN_PKCS1_2048_SHA256', 'RSA_SIGN_PKCS1_3072_SHA256', 'RSA_SIGN_PKCS1_4096_SHA256']);
const ALGORITHM_NAMES = kmsPkg.protos.google.cloud.kms.v1.CryptoKeyVersion.CryptoKeyVersionAlgorithm as unknown as Record<number, string>;
const CALL_TIMEOUT_MS = 5_000;
/** gRPC codes after which a call may be tried again later (the key is not known to be unusable). */
const TRANSIENT = new Set([1, 4, 8, 14]);

const int64 = (v: { value?: unknown } | null | undefined): number | undefined => (v?.value === undefined || v.value === null ? undefined : Number(String(v.value)));

/** A KMS key version that cannot sign JWTs here (wrong algorithm, disabled, not found, not allowed): said once, with the version's name. */
export class KmsSigningKeyError extends Error {}

export class GcpAsymmetricSigner {
  constructor(private readonly client: KmsClient) {}

  static connect(endpoint: string | undefined): GcpAsymmetricSigner {
    return new GcpAsymmetricSigner(kmsClient(endpoint));
  }

  private async call<T>(version: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await withTimeout(fn(), CALL_TIMEOUT_MS);
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (err instanceof Timeout || (typeof code === 'number' && TRANSIENT.has(code))) throw new BackendUnavailable('cloud kms', { cause: err });
      if (err instanceof KmsIntegrityError) throw err;
      // PERMISSION_DENIED, NOT_FOUND, FAILED_PRECONDITION (disabled or destroyed), INVALID_ARGUMENT: the operator's to fix.
      throw new KmsSigningKeyError(`Cloud KMS refused ${version}: ${(err as Error).message.split('\n')[0]!.slice(0, 300)}`);
    }
  }

  /** The version's public key (checked: its PEM's CRC32C, the version answered, an RS256 algorithm). */
  async publicKey(version: string): Promise<KeyObject> {
    const [res] = await this.call(version, () => this.client.getPublicKey({ name: version }, { timeout: CALL_TIMEOUT_MS }));
    const pem = res.pem ?? '';
    if (int64(res.pemCrc32c) !== crc32c(Buffer.from(pem, 'utf8'))) throw new KmsIntegrityError('GetPublicKey response (pem)');
    if (res.name !== version) throw new KmsSigningKeyError(`Cloud KMS answered GetPublicKey for ${String(res.name)}, not ${version}`);
    const algorithm = typeof res.algorithm === 'number' ? ALGORITHM_NAMES[res.algorithm] : res.algorithm;
    if (!RS256_ALGORITHMS.has(String(algorithm))) {
      throw new KmsSigningKeyError(`${version} is a ${String(algorithm)} key: KEYWARD_KMS_SIGNING_KEY must be an RSA_SIGN_PKCS1_2048_SHA256 (or 3072, 4096) version, which every cloud accepts as RS256`);
    }
    return createPublicKey(pem);
  }

  /** RS256 over `data`: KMS signs its SHA-256 digest. */
  async sign(version: string, data: Buffer): Promise<Buffer> {
    const digest = createHash('sha256').update(data).digest();
    for (let attempt = 1; ; attempt++) {
      try {
        const [res] = await this.call(version, () => this.client.asymmetricSign({ name: version, digest: { sha256: digest }, digestCrc32c: { value: crc32c(digest) } }, { timeout: CALL_TIMEOUT_MS }));
        if (!res.verifiedDigestCrc32c) throw new KmsIntegrityError('AsymmetricSign request (digest)');
        const signature = Buffer.from(res.signature as Uint8Array);
        if (int64(res.signatureCrc32c) !== crc32c(signature)) throw new KmsIntegrityError('AsymmetricSign response (signature)');
        if (res.name !== version) throw new KmsSigningKeyError(`Cloud KMS signed with ${String(res.name)}, not ${version}`);
        return signature;
      } catch (err) {
        // Google's guidance: a checksum mismatch is retried a few times, then the call fails.
        if (!(err instanceof KmsIntegrityError) || attempt >= 3) throw err;
      }
    }
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
