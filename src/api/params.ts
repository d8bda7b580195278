/** Query parameters shared by the list endpoints. */
import { Errors } from '../errors.js';
import type { AdminRequest } from '../http/router.js';
import type { OrgRecord, PageQuery } from '../store/ports.js';

/** The calling organisation of an `org`-authenticated route. */
export function orgOf(r: AdminRequest): OrgRecord {
  if (r.principal.kind !== 'org') throw Errors.unauthenticated();
  return r.principal.org;
}

export function pageQuery(query: URLSearchParams): PageQuery {
  for (const k of query.keys()) {
    if (k !== 'limit' && k !== 'starting_after') throw Errors.invalidRequest(`Unknown query parameter ${JSON.stringify(k.slice(0, 64))}.`, k.slice(0, 64));
  }
  const rawLimit = query.get('limit');
  let limit = 20;
  if (rawLimit !== null) {
    if (!/^[1-9][0-9]{0,2}$/.test(rawLimit) || Number(rawLimit) > 100) throw Errors.invalidRequest('`limit` must be an integer from 1 to 100.', 'limit');
    limit = Number(rawLimit);
  }
  const startingAfter = query.get('starting_after');
  if (startingAfter !== null && !/^[A-Za-z0-9_]{1,64}$/.test(startingAfter)) {
    throw Errors.invalidRequest('`starting_after` must be an id from a previous page.', 'starting_after');
  }
  return startingAfter === null ? { limit } : { limit, startingAfter };
}

export function noQuery(query: URLSearchParams): void {
  for (const k of query.keys()) throw Errors.invalidRequest(`Unknown query parameter ${JSON.stringify(k.slice(0, 64))}.`, k.slice(0, 64));
}
