/** What envelope encryption produces (vault/envelope.ts): the shape every sealed record of the store holds. */
export interface SealedKey {
  wrappedDek: Buffer;
  /** Which key-encryption key (and version) wrapped the DEK. */
  kekId: string;
  nonce: Buffer;
  /** AES-256-GCM ciphertext followed by its 16-byte tag. */
  ciphertext: Buffer;
}
