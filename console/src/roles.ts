/**
 * What each admin role may do (the contract's "Workload identity and scoped admin keys"), so the
 * console offers only the pages and buttons that would work: the API still decides (403 `forbidden`).
 * A person signed in by single sign-on has its group's role; `member` (no admin role) reads only its
 * organisation.
 */
import type { Role } from './api.js';

export interface Abilities {
  /** Read the credentials list, usage, audit, trust policies (every role but minter: its GETs are its own tokens). */
  readAll: boolean;
  /** Store, rename, rotate, delete credentials; trust policies; set the monthly spend limit. */
  manageCredentials: boolean;
  /** POST /v1/tokens. */
  mint: boolean;
  /** DELETE and PATCH /v1/tokens/:id. */
  revoke: boolean;
  /** /v1/admin-keys (owners and admins). */
  manageKeys: boolean;
  /** POST /v1/orgs/self/token/rotate (the organisation token only). */
  rotateOrgToken: boolean;
  /** PATCH and DELETE /v1/members/:id (owners and admins). */
  manageMembers: boolean;
}

export function abilitiesOf(role: Role): Abilities {
  const manage = role === 'owner' || role === 'admin';
  return {
    readAll: role !== 'minter' && role !== 'member', manageCredentials: manage, mint: manage || role === 'minter', revoke: manage, manageKeys: manage,
    rotateOrgToken: role === 'owner', manageMembers: manage,
  };
}
