/**
 * Test support: the asymmetric half of our Cloud KMS (kms-server.ts), as the real API answers it.
 * Signing keys with numbered versions, each a real key pair held here only (never in the gateway):
 * GetPublicKey answers the version's PEM, algorithm and the PEM's CRC32C; AsymmetricSign signs the
 * DIGEST it is given (never the data): RSA_SIGN_PKCS1_*_SHA256 is PKCS#1 v1.5 over the SHA-256
 * DigestInfo, the request's digest CRC32C is verified (`verifiedDigestCrc32c`) and the signature's
 * returned. A digest of the wrong algorithm or length, a version of another purpose, a disabled or
 * unknown version are refused with the codes KMS uses. EC_SIGN_P256_SHA256 versions exist (so a
 * caller's algorithm check can be tested) but are not signed with here.
 */
import * as grpc from '@grpc/grpc-js';
import { constants, generateKeyPairSync, privateEncrypt, type KeyObject } from 'node:crypto';
import { crc32c } from '../../src/kms/gcp.js';

export const SIGNING_KEY = 'projects/p/locations/l/keyRings/r/cryptoKeys/oidc-signer';
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

export type SigningAlgorithm = 'RSA_SIGN_PKCS1_2048_SHA256' | 'RSA_SIGN_PKCS1_3072_SHA256' | 'EC_SIGN_P256_SHA256';

interface Version {
  algorithm: SigningAlgorithm;
  privateKey: KeyObject;
  pem: string;
  enabled: boolean;
}

export class KmsRpcError extends Error {
  constructor(readonly code: grpc.status, message: string) {
    super(message);
  }
}

type Int64Value = { value?: string | number } | null | undefined;

export class SigningKeys {
  private readonly versions = new Map<string, Version>();
  /** AsymmetricSign calls answered, by version name. */
  readonly signed = new Map<string, number>();

  /** Adds a version of SIGNING_KEY (Cloud KMS: `gcloud kms keys versions create`); its name. */
  addVersion(algorithm: SigningAlgorithm = 'RSA_SIGN_PKCS1_2048_SHA256'): string {
    const n = this.versions.size + 1;
    const pair = algorithm.startsWith('EC_')
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : generateKeyPairSync('rsa', { modulusLength: algorithm.includes('3072') ? 3072 : 2048 });
    const name = `${SIGNING_KEY}/cryptoKeyVersions/${n}`;
    this.versions.set(name, { algorithm, privateKey: pair.privateKey, pem: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(), enabled: true });
    return name;
  }

  /** The version's private key in PKCS#8 DER (tests look for it in the gateway's memory: it must never be there). */
  privateDer(name: string): Buffer {
    return this.versions.get(name)!.privateKey.export({ type: 'pkcs8', format: 'der' });
  }

  disable(name: string): void {
    this.versions.get(name)!.enabled = false;
  }

  private version(name: string): Version {
    const v = this.versions.get(name);
    if (!v) {
      if (name.includes('/cryptoKeys/') && !name.includes('/cryptoKeyVersions/')) throw new KmsRpcError(grpc.status.INVALID_ARGUMENT, 'The request must name a CryptoKeyVersion.');
      throw new KmsRpcError(grpc.status.NOT_FOUND, `${name} not found.`);
    }
    if (!v.enabled) throw new KmsRpcError(grpc.status.FAILED_PRECONDITION, `${name} is not enabled, current state is: DISABLED.`);
    return v;
  }

  getPublicKey(req: { name: string }): object {
    const v = this.version(req.name);
    return { pem: v.pem, algorithm: v.algorithm, pemCrc32c: { value: String(crc32c(Buffer.from(v.pem, 'utf8'))) }, name: req.name, protectionLevel: 'SOFTWARE' };
  }

  asymmetricSign(req: { name: string; digest?: { sha256?: Buffer; sha384?: Buffer; sha512?: Buffer } | null; digestCrc32c?: Int64Value; data?: Buffer }): object {
    const v = this.version(req.name);
    if (v.algorithm.startsWith('EC_')) throw new KmsRpcError(grpc.status.UNIMPLEMENTED, 'EC signing is not modelled by this test server.');
    const digest = req.digest?.sha256;
    if (!digest || req.digest?.sha384 || req.digest?.sha512 || (req.data && req.data.length > 0)) {
      throw new KmsRpcError(grpc.status.INVALID_ARGUMENT, `The digest algorithm must match the key's algorithm ${v.algorithm}: SHA-256.`);
    }
    if (digest.length !== 32) throw new KmsRpcError(grpc.status.INVALID_ARGUMENT, 'Digest is not the correct length.');
    const given = req.digestCrc32c?.value;
    const verified = given !== undefined && given !== null;
    if (verified && Number(given) !== crc32c(digest)) throw new KmsRpcError(grpc.status.INVALID_ARGUMENT, 'The checksum in field digest_crc32c did not match the data in field digest.');
    // PKCS#1 v1.5 over the DigestInfo of the given digest: what KMS does with a digest it did not compute.
    const signature = privateEncrypt({ key: v.privateKey, padding: constants.RSA_PKCS1_PADDING }, Buffer.concat([SHA256_DIGEST_INFO, digest]));
    this.signed.set(req.name, (this.signed.get(req.name) ?? 0) + 1);
    return { signature, signatureCrc32c: { value: String(crc32c(signature)) }, verifiedDigestCrc32c: verified, name: req.name, protectionLevel: 'SOFTWARE' };
  }
}
