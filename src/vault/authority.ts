/**
 * Authority never outlives its source. Whoever creates something that grants access (an admin key,
 * a proxy token, a trust policy) is a Creator; when the creator's own credential ends (an admin key
 * with a ttl, an org token a rotation is retiring), what it creates ends no later. Asking for longer
 * is refused (403 `forbidden`), never silently cut: the caller learns at once what it got.
 */
import { Errors } from '../errors.js';
import type { Role } from './roles.js';

/** Who is creating: the org token (`owner`), an admin key, or the operator's CLI. */
export interface Creator {
  /** `otk_` / `akey_` id, or `cli`: recorded as the creation's `created_by`. */
  id: string;
  role: Role;
  /** When the creator's own token ends (null: not before rotation or deletion). */
  expiresAt: number | null;
  /** An org token a rotation has given an expiry: it may still work, not make lasting grants (trust policies). */
  retiring: boolean;
}

/** The CLI acts for the operator, who may create anything and whose authority does not end. */
export const CLI_CREATOR: Creator = { id: 'cli', role: 'owner', expiresAt: null, retiring: false };

/**
 * The end of what `creator` makes, asked to end at `wanted` (null: never): `wanted` when the creator does
 * not end; else no later than the creator (a `wanted` past it is refused, an open-ended one ends with it).
 */
export function endWithin(creator: Pick<Creator, 'expiresAt'>, wanted: number | null, what: string): number | null {
  if (creator.expiresAt === null) return wanted;
  if (wanted !== null && wanted > creator.expiresAt) {
    throw Errors.forbidden(`${what} may not outlive the key that creates it (it ends ${new Date(creator.expiresAt).toISOString()}); ask for a shorter \`ttl\`.`);
  }
  return wanted ?? creator.expiresAt;
}
