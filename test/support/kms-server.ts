/**
 * Test support: a small Cloud KMS of our own, speaking the real
 * google.cloud.kms.v1.KeyManagementService gRPC API (loaded from the client's
 * own protos) on 127.0.0.1, in plaintext. One symmetric key with numbered
 * versions, each a real AES-256-GCM key; Encrypt honours AAD and the CRC32C
 * fields as Cloud KMS does; Decrypt finds the version from the ciphertext, so
 * old versions keep decrypting after the primary changes.
 *
 * Signing keys (kms-signing.ts) answer GetPublicKey and AsymmetricSign as the real API does.
 *
 * Faults for tests: `down` (every call answers UNAVAILABLE), `lie` (a wrong
 * checksum or verification flag in responses), `stop()` / `restart()` (no
 * server at all, then back on the same port).
 */
import type { ExecutionContext } from 'ava';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import path from 'node:path';
import { crc32c } from '../../src/kms/gcp.js';
import { ROOT } from './app.js';
import { KmsRpcError, SigningKeys } from './kms-signing.js';

export const KMS_KEY = 'projects/p/locations/l/keyRings/r/cryptoKeys/k';

export type Lie = 'ciphertext_crc' | 'plaintext_crc' | 'verified_plaintext' | 'verified_aad' | undefined;

export interface KmsServer {
  endpoint: string;
  port: number;
  keyName: string;
  /** The primary version's number. */
  primary: number;
  /** Adds a version and makes it primary (Cloud KMS rotation); returns its number. */
  rotate(): number;
  versionName(n: number): string;
  /** Every call answers UNAVAILABLE while true. */
  down: boolean;
  /** GetCryptoKey answers PERMISSION_DENIED (a caller with roles/cloudkms.cryptoKeyEncrypterDecrypter only). */
  denyGetCryptoKey: boolean;
  lie: Lie;
  /** Calls served, by method name. */
  calls: Record<string, number>;
  /** The asymmetric signing key (`signing.addVersion()` makes a version to sign with). */
  signing: SigningKeys;
  stop(): Promise<void>;
  restart(): Promise<void>;
}

const PROTO_DIRS = [
  path.join(ROOT, 'node_modules/@google-cloud/kms/build/protos'),
  path.join(ROOT, 'node_modules/google-gax/build/protos'),
];

let serviceDefinition: grpc.ServiceDefinition | undefined;

async function kmsService(): Promise<grpc.ServiceDefinition> {
  if (!serviceDefinition) {
    const def = await protoLoader.load('google/cloud/kms/v1/service.proto', {
      includeDirs: PROTO_DIRS, keepCase: false, longs: String, enums: String, defaults: false, oneofs: true,
    });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      google: { cloud: { kms: { v1: { KeyManagementService: { service: grpc.ServiceDefinition } } } } };
    };
    serviceDefinition = pkg.google.cloud.kms.v1.KeyManagementService.service;
  }
  return serviceDefinition;
}

const RpcError = KmsRpcError;

type Int64Value = { value?: string | number } | null | undefined;
const int64 = (v: Int64Value): number | undefined => (v && v.value !== undefined && v.value !== null ? Number(v.value) : undefined);

export async function startKmsServer(t?: ExecutionContext, keyName = KMS_KEY): Promise<KmsServer> {
  const versions = new Map<number, Buffer>([[1, randomBytes(32)]]);
  const calls: Record<string, number> = {};
  const versionName = (n: number) => `${keyName}/cryptoKeyVersions/${n}`;

  const state = { primary: 1, down: false, lie: undefined as Lie, denyGet: false };

  const unary = <Req, Res>(method: string, fn: (req: Req) => Res): grpc.handleUnaryCall<Req, Res> => (call, callback) => {
    calls[method] = (calls[method] ?? 0) + 1;
    if (state.down) {
      callback({ code: grpc.status.UNAVAILABLE, details: 'the KMS test server is down' }, null);
      return;
    }
    try {
      callback(null, fn(call.request));
    } catch (err) {
      if (err instanceof KmsRpcError) callback({ code: err.code, details: err.message }, null);
      else callback({ code: grpc.status.INTERNAL, details: (err as Error).message }, null);
    }
  };

  const checkCrc = (field: string, data: Buffer, given: Int64Value) => {
    const crc = int64(given);
    if (crc !== undefined && crc !== crc32c(data)) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, `The checksum in field ${field}_crc32c did not match the data in field ${field}.`);
    }
    return crc !== undefined;
  };

  const signing = new SigningKeys();
  const impl: grpc.UntypedServiceImplementation = {
    getPublicKey: unary('GetPublicKey', (req: { name: string }) => signing.getPublicKey(req)),
    asymmetricSign: unary('AsymmetricSign', (req: Parameters<SigningKeys['asymmetricSign']>[0]) => signing.asymmetricSign(req)),
    getCryptoKey: unary('GetCryptoKey', (req: { name: string }) => {
      if (state.denyGet) throw new RpcError(grpc.status.PERMISSION_DENIED, `Permission 'cloudkms.cryptoKeys.get' denied on resource '${req.name}'.`);
      if (req.name !== keyName) throw new RpcError(grpc.status.NOT_FOUND, `CryptoKey ${req.name} not found.`);
      return {
        name: keyName,
        purpose: 'ENCRYPT_DECRYPT',
        primary: { name: versionName(state.primary), state: 'ENABLED', algorithm: 'GOOGLE_SYMMETRIC_ENCRYPTION', protectionLevel: 'SOFTWARE' },
      };
    }),

    encrypt: unary('Encrypt', (req: {
      name: string; plaintext?: Buffer; additionalAuthenticatedData?: Buffer; plaintextCrc32c?: Int64Value; additionalAuthenticatedDataCrc32c?: Int64Value;
    }) => {
      let version = state.primary;
      if (req.name !== keyName) {
        const m = /\/cryptoKeyVersions\/([0-9]+)$/.exec(req.name);
        if (!m || !req.name.startsWith(`${keyName}/`) || !versions.has(Number(m[1]))) throw new RpcError(grpc.status.NOT_FOUND, `${req.name} not found.`);
        version = Number(m[1]);
      }
      const plaintext = req.plaintext ?? Buffer.alloc(0);
      const aad = req.additionalAuthenticatedData ?? Buffer.alloc(0);
      const verifiedPlaintext = checkCrc('plaintext', plaintext, req.plaintextCrc32c);
      const verifiedAad = checkCrc('additional_authenticated_data', aad, req.additionalAuthenticatedDataCrc32c);
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', versions.get(version)!, nonce);
      cipher.setAAD(aad);
      const head = Buffer.alloc(4);
      head.writeUInt32BE(version);
      const ciphertext = Buffer.concat([head, nonce, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      let crc = crc32c(ciphertext);
      if (state.lie === 'ciphertext_crc') crc = (crc + 1) >>> 0;
      return {
        name: versionName(version),
        ciphertext,
        ciphertextCrc32c: { value: String(crc) },
        verifiedPlaintextCrc32c: state.lie === 'verified_plaintext' ? false : verifiedPlaintext,
        verifiedAdditionalAuthenticatedDataCrc32c: state.lie === 'verified_aad' ? false : verifiedAad,
        protectionLevel: 'SOFTWARE',
      };
    }),

    decrypt: unary('Decrypt', (req: {
      name: string; ciphertext?: Buffer; additionalAuthenticatedData?: Buffer; ciphertextCrc32c?: Int64Value; additionalAuthenticatedDataCrc32c?: Int64Value;
    }) => {
      if (req.name !== keyName) throw new RpcError(grpc.status.NOT_FOUND, `CryptoKey ${req.name} not found.`);
      const ciphertext = req.ciphertext ?? Buffer.alloc(0);
      const aad = req.additionalAuthenticatedData ?? Buffer.alloc(0);
      checkCrc('ciphertext', ciphertext, req.ciphertextCrc32c);
      checkCrc('additional_authenticated_data', aad, req.additionalAuthenticatedDataCrc32c);
      const failed = () => new RpcError(grpc.status.INVALID_ARGUMENT, "Decryption failed: verify that 'name' refers to the correct CryptoKey.");
      if (ciphertext.length < 4 + 12 + 16) throw failed();
      const version = ciphertext.readUInt32BE(0);
      const key = versions.get(version);
      if (!key) throw failed();
      let plaintext: Buffer;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, ciphertext.subarray(4, 16));
        decipher.setAAD(aad);
        decipher.setAuthTag(ciphertext.subarray(ciphertext.length - 16));
        plaintext = Buffer.concat([decipher.update(ciphertext.subarray(16, ciphertext.length - 16)), decipher.final()]);
      } catch {
        throw failed();
      }
      let crc = crc32c(plaintext);
      if (state.lie === 'plaintext_crc') crc = (crc ^ 0x1) >>> 0;
      return { plaintext, plaintextCrc32c: { value: String(crc) }, usedPrimary: version === state.primary, protectionLevel: 'SOFTWARE' };
    }),
  };

  const service = await kmsService();
  let server: grpc.Server | undefined;
  const bind = async (port: number): Promise<number> => {
    server = new grpc.Server();
    server.addService(service, impl);
    return new Promise<number>((resolve, reject) => {
      server!.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
    });
  };
  const port = await bind(0);

  const kms: KmsServer = {
    endpoint: `127.0.0.1:${port}`,
    port,
    keyName,
    get primary() {
      return state.primary;
    },
    set primary(n: number) {
      if (!versions.has(n)) throw new Error(`no version ${n}`);
      state.primary = n;
    },
    rotate() {
      const n = Math.max(...versions.keys()) + 1;
      versions.set(n, randomBytes(32));
      state.primary = n;
      return n;
    },
    versionName,
    get down() {
      return state.down;
    },
    set down(v: boolean) {
      state.down = v;
    },
    get denyGetCryptoKey() {
      return state.denyGet;
    },
    set denyGetCryptoKey(v: boolean) {
      state.denyGet = v;
    },
    get lie() {
      return state.lie;
    },
    set lie(v: Lie) {
      state.lie = v;
    },
    calls,
    signing,
    async stop() {
      const s = server;
      server = undefined;
      s?.forceShutdown();
    },
    async restart() {
      await kms.stop();
      await bind(port);
    },
  };
  t?.teardown(() => kms.stop());
  return kms;
}
