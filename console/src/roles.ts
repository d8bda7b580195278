/**
 * What each admin role may do (the contract's "Workload identity and scoped admin keys"), so the
 * console shows only the buttons that would work: the API still decides (403 `forbidden`).
 */
import type { Role } from './api.js';

export interface Abilities {
  /** Read the credentials list, usage, audit (every role but minter: its GETs are its own tokens). */
  readAll: boolean;
  /** Store, rotate, delete credentials; set the monthly spend limit. */
  manageCredentials: boolean;
  /** POST /v1/tokens. */
  mint: boolean;
  /** DELETE /v1/tokens/:id. */
  revoke: boolean;
}

export function abilitiesOf(role: Role): Abilities {
  const manage = role === 'owner' || role === 'admin';
  return { readAll: role !== 'minter', manageCredentials: manage, mint: manage || role === 'minter', revoke: manage };
}
