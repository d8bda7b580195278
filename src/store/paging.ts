/** Paging of the stores' lists (re-exported by ports.ts): newest first, a cursor, an optional name prefix. */

export interface PageQuery {
  limit: number;
  startingAfter?: string;
}

/** A page of a list whose records have names: `namePrefix` keeps those whose name starts with it (case-insensitive, store/name-key.ts); unnamed ones never match. */
export interface NamedPageQuery extends PageQuery {
  namePrefix?: string;
}

export interface Page<T> {
  data: T[];
  hasMore: boolean;
}

/** `starting_after` named an id the list does not hold. */
export const BAD_CURSOR = Symbol('bad_cursor');
