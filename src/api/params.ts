/** Who is calling. */
import { Errors } from '../errors.js';
import type { AdminRequest } from '../http/router.js';
import type { OrgRecord } from '../store/ports.js';
import type { Creator } from '../vault/authority.js';

/** The calling organisation of an `org`-authenticated route. */
export function orgOf(r: AdminRequest<unknown, unknown>): OrgRecord {
  if (r.principal.kind !== 'org') throw Errors.unauthenticated();
  return r.principal.org;
}

/** The caller of an `org`-authenticated route as the creator of what it makes (its end bounds what it creates). */
export function creatorOf(r: AdminRequest<unknown, unknown>): Creator {
  if (r.principal.kind !== 'org') throw Errors.unauthenticated();
  const { actor, role, expiresAt, retiring } = r.principal;
  return { id: actor, role, expiresAt, retiring };
}
