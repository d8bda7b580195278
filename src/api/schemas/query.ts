/** The list endpoints' query parameters (`limit`, `starting_after`; `name` where records have names), and none elsewhere. */
import { Type } from '@sinclair/typebox';
import type { NamedPageQuery, PageQuery } from '../../store/ports.js';
import { NAME_MAX, NAME_PREFIX } from '../../vault/names.js';
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

export const NamePrefixParam = rule(Type.RegExp(NAME_PREFIX, {
  description: 'Only the records whose name starts with this, compared in lower case ("prod" finds "Prod OpenAI"); unnamed records never match.',
  examples: ['prod'],
}), `1 to ${NAME_MAX} printable characters`);

export const NamedPageParams = Type.Object({ ...PageParams.properties, name: Type.Optional(NamePrefixParam) });

const namedPage = (q: { limit?: number; starting_after?: string; name?: string }): NamedPageQuery => ({
  limit: q.limit!, ...(q.starting_after !== undefined ? { startingAfter: q.starting_after } : {}), ...(q.name !== undefined ? { namePrefix: q.name } : {}),
});

/** A list of named records: the page and an optional `name` prefix. */
export const NAMED_PAGE = queryContract(NamedPageParams, namedPage);

/** GET /v1/tokens: a named page of live tokens, or with `status=revoked` of revoked ones. */
export const TOKEN_LIST = queryContract(Type.Object({
  ...NamedPageParams.properties,
  status: Type.Optional(rule(Type.Literal('revoked', {
    description: '`revoked`: list revoked tokens (most recently revoked first, `starting_after` one of them) instead of live ones (`active` and `expired`, the default).',
  }), 'revoked (leave it out for live tokens)')),
}), (q) => ({ page: namedPage(q), revoked: q.status === 'revoked' }));

/** No query parameter at all: any is refused by name. */
export const NO_QUERY = queryContract(Type.Object({}));
