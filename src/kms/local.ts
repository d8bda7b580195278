/**
 * The `local` KeyWrapper: AES-256-GCM under a 32-byte key from
 * KEYWARD_LOCAL_KEK, or (embedded default only) a key file made once in the
 * data dir with mode 0600. A previous key (KEYWARD_LOCAL_KEK_PREVIOUS) still
 * unwraps while `keyward keys rewrap` moves every DEK to the current one.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { BackendUnavailable } from '../errors.js';
import type { Logger } from '../log.js';
import { ensurePrivateDir, restrictFile } from '../private-files.js';
import { UnwrapFailed, type KeyWrapper, type WrappedKey } from './key-wrapper.js';

/** A KEK's public id: `local:` + 16 hex of SHA-256 over a domain tag and the key. */
export function localKekId(kek: Buffer): string {
  return 'local:' + createHash('sha256').update('keyward-kek-id\0').update(kek).digest('hex').slice(0, 16);
}

export function sealGcm(key: Buffer, plaintext: Buffer, aad: Buffer): { nonce: Buffer; ciphertext: Buffer } {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(aad);
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
  return { nonce, ciphertext };
}

/** Throws on any tampering of nonce, ciphertext, tag or AAD. */
export function openGcm(key: Buffer, nonce: Buffer, ciphertextAndTag: Buffer, aad: Buffer): Buffer {
  if (nonce.length !== 12 || ciphertextAndTag.length < 16) throw new UnwrapFailed();
  const decipher = createDecipheriv('aes-256-gcm', key, nonce);
  decipher.setAAD(aad);
  decipher.setAuthTag(ciphertextAndTag.subarray(ciphertextAndTag.length - 16));
  return Buffer.concat([decipher.update(ciphertextAndTag.subarray(0, ciphertextAndTag.length - 16)), decipher.final()]);
}

/** Reads the data dir's key file, or creates it once (O_EXCL, so two processes never race to two keys). */
export function loadOrCreateKeyFile(dataDir: string, log: Logger): Buffer {
  const file = path.join(dataDir, 'kek');
  ensurePrivateDir(dataDir);
  // Written whole and synced under a private name, then linked into place: link() fails if `kek`
  // exists, so two processes starting together never make two keys, and neither ever reads a
  // `kek` the other has created but not yet written (or that a crash left empty).
  const tmp = path.join(dataDir, `.kek-${process.pid}-${randomBytes(6).toString('hex')}`);
  const key = randomBytes(32);
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, key.toString('base64') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
    chmodSync(file, 0o600);
    const dir = openSync(dataDir, 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
    log.warn({ file }, 'created a local key-encryption key; back it up, or set KEYWARD_LOCAL_KEK (or KEYWARD_KMS=gcp) for production');
    return key;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  restrictFile(file); // one an earlier version (or a hand copy) left readable by others
  const existing = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (existing.length !== 32) throw new Error(`${file} does not hold base64 of 32 bytes`);
  return existing;
}

/**
 * A DEK wrapped under a KEK this process does not hold: a configuration problem
 * (the key wrapper cannot answer for it, so 503 unavailable), not tampering.
 */
export class KekNotConfigured extends BackendUnavailable {
  constructor(readonly kekId: string) {
    super(`key-encryption key ${kekId}`);
    this.name = 'KekNotConfigured';
    this.message = `the key-encryption key ${kekId} is not configured (keep the old key in KEYWARD_LOCAL_KEK_PREVIOUS until keyward keys rewrap has moved every DEK)`;
  }
}

export class LocalKeyWrapper implements KeyWrapper {
  readonly kind = 'local';
  private readonly keys = new Map<string, Buffer>();
  private readonly currentId: string;

  constructor(private readonly current: Buffer, previous?: Buffer) {
    this.currentId = localKekId(current);
    this.keys.set(this.currentId, current);
    if (previous) this.keys.set(localKekId(previous), previous);
  }

  async wrap(dek: Buffer, aad: Buffer): Promise<WrappedKey> {
    const { nonce, ciphertext } = sealGcm(this.current, dek, aad);
    return { wrapped: Buffer.concat([nonce, ciphertext]), kekId: this.currentId };
  }

  async unwrap(wrapped: Buffer, aad: Buffer, kekId: string): Promise<Buffer> {
    const key = this.keys.get(kekId);
    if (!key) throw new KekNotConfigured(kekId);
    try {
      return openGcm(key, wrapped.subarray(0, 12), wrapped.subarray(12), aad);
    } catch {
      throw new UnwrapFailed();
    }
  }

  async currentKekId(): Promise<string> {
    return this.currentId;
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
