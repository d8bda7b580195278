/**
 * The store port of upstream OAuth connections: what an OAuth credential (`kind: oauth`) holds
 * once someone connected it at the SaaS: its tokens sealed like a key (src/vault/oauth-connections.ts
 * seals them, bound to this connection), and its state. One connection per credential and member
 * (`memberId` '' for the organisation's own connection). A refresh writes its result only over the
 * ciphertext it read (a compare-and-swap), so two instances refreshing at once never store an older
 * refresh token over a newer one. Secrets never arrive here, only ciphertexts.
 */
import type { SealedKey } from './sealed-key.js';

/** `connected`: tokens held; `reconnect`: the SaaS refused the refresh token, a person must connect again. */
export type OAuthConnectionState = 'connected' | 'reconnect';

export interface OAuthConnectionRecord extends SealedKey {
  orgId: string;
  credentialId: string;
  /** '' for the organisation's connection; the member's id (`usr_…`) for a per-member credential's. */
  memberId: string;
  state: OAuthConnectionState;
  /** Who connected it (an `otk_`/`akey_`/`usr_` id): for the audit trail and the console. */
  connectedBy: string;
  connectedAt: number;
  updatedAt: number;
}

export interface OAuthConnectionStore {
  /** Creates or replaces the connection (a connect, or a reconnect after a refusal). */
  putOAuthConnection(record: OAuthConnectionRecord): Promise<void>;
  getOAuthConnection(orgId: string, credentialId: string, memberId: string): Promise<OAuthConnectionRecord | undefined>;
  /** The refreshed tokens, only while the stored ciphertext is still `expected` (and the state `connected`); false otherwise. */
  replaceOAuthTokens(orgId: string, credentialId: string, memberId: string, expected: Buffer, sealed: SealedKey, updatedAt: number): Promise<boolean>;
  /** Marks it `reconnect` (the SaaS refused its refresh token), only while the stored ciphertext is still `expected`; false otherwise. */
  markOAuthReconnect(orgId: string, credentialId: string, memberId: string, expected: Buffer, updatedAt: number): Promise<boolean>;
  /** How many connections the credential has, and in which states (a per-member credential's view). */
  countOAuthConnections(orgId: string, credentialId: string): Promise<Record<OAuthConnectionState, number>>;
  /** Removes every connection of the credential (it was deleted, or disconnected); how many. */
  deleteOAuthConnections(orgId: string, credentialId: string, memberId?: string): Promise<number>;
}
