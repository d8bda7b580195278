/** Who is calling. */
import { Errors } from '../errors.js';
import type { AdminRequest } from '../http/router.js';
import type { OrgRecord } from '../store/ports.js';

/** The calling organisation of an `org`-authenticated route. */
export function orgOf(r: AdminRequest<unknown, unknown>): OrgRecord {
  if (r.principal.kind !== 'org') throw Errors.unauthenticated();
  return r.principal.org;
}
