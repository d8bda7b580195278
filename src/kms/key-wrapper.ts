/**
 * KeyWrapper: wraps and unwraps data-encryption keys under a key-encryption key
 * the store never sees (a local AES key, or Cloud KMS). The AAD binds a wrapped
 * DEK to its credential record, so a DEK moved to another record fails to unwrap.
 */
export interface WrappedKey {
  wrapped: Buffer;
  /** Which KEK (and version) wrapped it: lets `keys rewrap` skip what is current. */
  kekId: string;
}

export interface KeyWrapper {
  readonly kind: string;
  wrap(dek: Buffer, aad: Buffer): Promise<WrappedKey>;
  unwrap(wrapped: Buffer, aad: Buffer, kekId: string): Promise<Buffer>;
  /** The KEK id that `wrap` uses now; a DEK under any other is due for rewrap. */
  currentKekId(): Promise<string>;
  /** Answers when the KEK can be used (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A wrapped DEK that does not open under its AAD: tampered or moved. Never retried. */
export class UnwrapFailed extends Error {
  constructor() {
    super('data key failed to unwrap');
    this.name = 'UnwrapFailed';
  }
}
