/**
 * Who may do what on the admin API. The org token is `owner`; an admin key
 * holds one of `admin`, `minter` (optionally limited to listed credentials) or
 * `viewer`; a person signed in by single sign-on (a member, store/people-port.ts) holds the role its
 * groups map to, or `member` (its own session and personal tokens, and GET /v1/orgs/self). Every admin route names the roles that may call it; a route that
 * names none gets the safe default of its method (GET: viewer and up; any other
 * method: admin and up), so a route added later is never open to a minter or
 * viewer by accident. Roles are not a line: a minter may mint but not read,
 * a viewer may read but not mint. `mayCreate` is the one rule for admin keys:
 * a caller never creates (or deletes) a key above itself.
 */
import type { AdminKeyRole } from '../store/ports.js';

export const ROLES = ['owner', 'admin', 'minter', 'viewer', 'member'] as const;
export type Role = (typeof ROLES)[number];

/** The roles an admin key may be created with (`owner` is the org token only). */
export const KEY_ROLES: readonly AdminKeyRole[] = ['admin', 'minter', 'viewer'];

/** GET routes unless they say otherwise: every role that may read the organisation's records. */
export const READERS: readonly Role[] = ['owner', 'admin', 'viewer'];
/** Any other method unless the route says otherwise. */
export const WRITERS: readonly Role[] = ['owner', 'admin'];
/** Only the org token (its rotation). */
export const OWNER: readonly Role[] = ['owner'];
/** Every role (what the caller itself may do: GET /v1/orgs/self). */
export const EVERYONE: readonly Role[] = ROLES;

/** The roles allowed on a route: its own list, else its method's default. */
export function rolesOf(method: string, declared: readonly Role[] | undefined): readonly Role[] {
  return declared ?? (method === 'GET' || method === 'HEAD' ? READERS : WRITERS);
}

/** What each role may create or delete: itself and what it covers, never above. */
const COVERS: Record<Role, readonly Role[]> = {
  owner: ['admin', 'minter', 'viewer'],
  admin: ['admin', 'minter', 'viewer'],
  minter: [],
  viewer: [],
  member: [],
};

export function mayCreate(caller: Role, role: Role): boolean {
  return COVERS[caller].includes(role);
}
