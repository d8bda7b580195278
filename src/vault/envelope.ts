/**
 * Envelope encryption of provider keys. Per credential: a fresh 256-bit DEK,
 * AES-256-GCM over the key with a random 96-bit nonce, and the DEK wrapped by
 * the KeyWrapper; both bound by the same AAD (org, credential id, provider),
 * so a ciphertext or wrapped DEK moved to another record never opens.
 * The DEK is zeroed as soon as it has been used.
 */
import { randomBytes } from 'node:crypto';
import { inject, injectable } from 'tsyringe';
import { Symbols } from '../symbols.js';
import type { KeyWrapper } from '../kms/key-wrapper.js';
import { UnwrapFailed } from '../kms/key-wrapper.js';
import { openGcm, sealGcm } from '../kms/local.js';
import type { SealedKey } from '../store/ports.js';

export interface CredentialRef {
  orgId: string;
  id: string;
  provider: string;
}

export function credentialAad(ref: CredentialRef): Buffer {
  return Buffer.from(`keyward/v1|${ref.orgId}|${ref.id}|${ref.provider}`, 'utf8');
}

@injectable()
export class Envelope {
  constructor(@inject(Symbols.KeyWrapper) private readonly wrapper: KeyWrapper) {}

  async seal(ref: CredentialRef, apiKey: string): Promise<SealedKey> {
    const aad = credentialAad(ref);
    const dek = randomBytes(32);
    try {
      const { nonce, ciphertext } = sealGcm(dek, Buffer.from(apiKey, 'utf8'), aad);
      const { wrapped, kekId } = await this.wrapper.wrap(dek, aad);
      return { wrappedDek: wrapped, kekId, nonce, ciphertext };
    } finally {
      dek.fill(0);
    }
  }

  /** Throws UnwrapFailed when the record was tampered with or moved. */
  async open(ref: CredentialRef, sealed: SealedKey): Promise<string> {
    const aad = credentialAad(ref);
    const dek = await this.wrapper.unwrap(sealed.wrappedDek, aad, sealed.kekId);
    try {
      return openGcm(dek, sealed.nonce, sealed.ciphertext, aad).toString('utf8');
    } catch {
      throw new UnwrapFailed();
    } finally {
      dek.fill(0);
    }
  }

  /** Re-wraps the DEK under the current KEK; the ciphertext is not touched. */
  async rewrap(ref: CredentialRef, sealed: SealedKey): Promise<{ wrappedDek: Buffer; kekId: string }> {
    const aad = credentialAad(ref);
    const dek = await this.wrapper.unwrap(sealed.wrappedDek, aad, sealed.kekId);
    try {
      const { wrapped, kekId } = await this.wrapper.wrap(dek, aad);
      return { wrappedDek: wrapped, kekId };
    } finally {
      dek.fill(0);
    }
  }
}
