/** The list endpoints' query parameters (`limit`, `starting_after`), and none elsewhere. */
import { Type } from '@sinclair/typebox';
import type { PageQuery } from '../../store/ports.js';
import { queryContract, rule } from './validate.js';

export const PageParams = Type.Object({
  limit: Type.Optional(rule(Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Page size.' }), 'an integer from 1 to 100')),
  starting_after: Type.Optional(rule(Type.String({
    pattern: '^[A-Za-z0-9_]{1,64}$',
    description: 'The last id of the previous page; an id this organisation does not have → 400 `invalid_request` (the service checks it against the store).',
  }), 'an id from a previous page')),
});

/** `limit` (default 20) and `starting_after`, as the services take them. */
export const PAGE = queryContract(PageParams, (q): PageQuery => (q.starting_after === undefined ? { limit: q.limit! } : { limit: q.limit!, startingAfter: q.starting_after }));

/** No query parameter at all: any is refused by name. */
export const NO_QUERY = queryContract(Type.Object({}));
