/**
 * Proxy tokens: POST /v1/tokens (ttl, name and scopes), the token view (live or revoked), lists and revocation.
 * What a schema cannot say stays with the services and is named in the descriptions: the ttl's
 * upper bound (KEYWARD_MAX_TTL, TokenService.parseTtl) and each path scope's reachability on the
 * credential's provider (catalog/scopes.ts parseScopes), both answering 400 as the schema does.
 */
import { Type } from '@sinclair/typebox';
import { MAX_ITEMS, MODEL, PATH_PATTERN, TOOL_PATTERN } from '../../catalog/scopes.js';
import { USD_AMOUNT } from '../../pricing/money.js';
import { Count, IdOf, listOf, Name, named, SecretOf, Time } from './common.js';
import { UsageCounts, Usd } from './usage.js';
import { asObject, bodyContract, rule, usdNumberHint } from './validate.js';
import { Errors } from '../../errors.js';

export const Ttl = named('Ttl', rule(Type.String({
  pattern: '^[1-9][0-9]*[smhd]$',
  description: 'A positive integer without leading zeros and one unit of `s m h d`, at most KEYWARD_MAX_TTL (default `30d`; the token service checks the bound).',
  examples: ['30s', '15m', '12h', '7d'],
}), 'a positive integer without leading zeros and one unit of s, m, h, d, such as "15m"', 'invalid_ttl'));

/** A scope that is a list of patterns: 1 to MAX_ITEMS strings matching `pattern` (duplicates are dropped at mint). */
const patternList = (name: string, pattern: RegExp, what: string, description: string, examples: string[]) => named(name, rule(Type.Array(Type.String({ pattern: pattern.source }), {
  minItems: 1, maxItems: MAX_ITEMS, description, examples: [examples],
}), `a non-empty array of at most ${MAX_ITEMS} ${what}`, 'invalid_scope'));

export const ModelsScope = patternList('ModelsScope', MODEL, 'model names or prefix* patterns',
  'Exact model names or `prefix*` (duplicates are dropped), checked against the body\'s `model` (or Gemini\'s path segment); else 403 `model_not_allowed`.',
  ['gpt-4o-mini', 'claude-3-5-*']);

export const PathsScope = patternList('PathsScope', PATH_PATTERN, 'path patterns', [
  'Provider path patterns (as in its allow-list, or `prefix*`; duplicates are dropped). At mint each must reach a route on the credential\'s provider, without `..` or `//` (else 400 `invalid_scope`); a request outside them → 403 `path_not_allowed`.',
  'A route that reads or changes what the whole provider account shares (batches, stored responses, files, balance…) is reached only when a pattern names it exactly (its pattern, or one concrete path of it), never by `prefix*` nor without `paths`.',
].join(' '), ['v1/chat/completions']);

export const MaxRequestsScope = named('MaxRequestsScope', rule(Type.Integer({
  minimum: 1, maximum: 1_000_000_000, description: 'Lifetime request cap, exact under concurrency; then 429 `token_exhausted`.',
}), 'a positive integer of at most 1000000000', 'invalid_scope'));

export const RateLimitScope = named('RateLimitScope', rule(Type.Integer({
  minimum: 1, maximum: 1_000_000, description: 'Requests per minute (token bucket, per instance); then 429 `rate_limited`.',
}), 'a positive integer of at most 1000000', 'invalid_scope'));

export const BudgetScope = named('BudgetScope', rule(Type.String({
  pattern: USD_AMOUNT.source,
  description: 'Lifetime spend cap in US dollars (a decimal string, at most six places, above 0). Each request reserves its worst-case cost before it is forwarded and is settled to the usage the provider reports; a request that does not fit → 429 `budget_exhausted`. Exact across instances.',
  examples: ['12.50'],
}), 'a decimal string of US dollars above 0 with at most six decimal places, such as "12.50"', 'invalid_scope', usdNumberHint('budget_usd')));

export const ToolsScope = patternList('ToolsScope', TOOL_PATTERN, 'tool names or prefix* patterns',
  'MCP servers only (a credential of kind `mcp`, else 400 `invalid_scope`): the tools the token may call, exact names or `prefix*`. A `tools/call` of another tool is answered with a JSON-RPC error (code -32602, "tool not allowed") and never forwarded; `tools/list` results list only these tools.',
  ['get_issue', 'list_*']);

export const TokensPerMinuteScope = named('TokensPerMinuteScope', rule(Type.Integer({
  minimum: 1, maximum: 1_000_000_000,
  description: 'Input + output tokens per rolling minute, exact across instances: each request reserves its worst case before it is forwarded and is settled to the usage reported; one that does not fit → 429 `tokens_per_minute_exceeded` with `Retry-After`.',
}), 'a positive integer of at most 1000000000', 'invalid_scope'));

export const MaxConcurrentScope = named('MaxConcurrentScope', rule(Type.Integer({
  minimum: 1, maximum: 100_000,
  description: 'Requests and streams open at once, exact across instances; one more → 429 `concurrency_exceeded` with `Retry-After`.',
}), 'a positive integer of at most 100000', 'invalid_scope'));

export const TokenCreate = named('TokenCreate', Type.Object({
  credential_id: Type.Optional(rule(Type.String({ minLength: 1, description: 'A stored credential of this organisation (else 404). Exactly one of `credential_id` and `pool_id` (else 400).' }), 'the id of a stored credential')),
  pool_id: Type.Optional(rule(Type.String({ minLength: 1, description: 'A pool of this organisation (else 404): the token spreads its requests over the pool\'s members, failing over before the first response byte.' }), 'the id of a pool')),
  ttl: Ttl,
  name: Type.Optional(Name),
  models: Type.Optional(ModelsScope),
  paths: Type.Optional(PathsScope),
  max_requests: Type.Optional(MaxRequestsScope),
  rate_limit: Type.Optional(RateLimitScope),
  budget_usd: Type.Optional(BudgetScope),
  tools: Type.Optional(ToolsScope),
  tokens_per_minute: Type.Optional(TokensPerMinuteScope),
  max_concurrent: Type.Optional(MaxConcurrentScope),
  team_id: Type.Optional(rule(Type.String({ minLength: 1, maxLength: 64, description: 'A team of this organisation (else 404): the token uses one of its credentials or pools (else 403) within its `max_ttl` (else 400 `invalid_ttl`), and every request reserves and settles under the team\'s monthly `budget_usd` and `tokens_per_minute` too.' }), 'the id of a team')),
  member_id: Type.Optional(rule(Type.String({ pattern: '^usr_[0-9A-Za-z]{1,64}$', description: 'A member (`usr_…`; of the team, when the team lists members): every request reserves and settles under the member\'s monthly budget too.' }), 'a member id (usr_…)')),
}, { additionalProperties: false, examples: [{ credential_id: 'cred_4kT9bQ2mXw7Zr1sVc8NpL3aY', ttl: '15m', name: 'evals agent', models: ['gpt-4o-mini'], max_requests: 100 }] }));

const tokenProperties = {
  id: IdOf('tok', 'The token\'s id (not the secret).'),
  object: Type.Literal('token'),
  credential_id: Type.Optional(IdOf('cred', 'The credential whose key the token uses (absent on a pooled token).')),
  pool_id: Type.Optional(IdOf('pool', 'A pooled token\'s pool.')),
  name: Type.Optional(Name),
  status: Type.Union([Type.Literal('active'), Type.Literal('expired'), Type.Literal('revoked')], {
    description: '`active` while now < `expires_at`, then `expired`; `revoked` only in `GET /v1/tokens?status=revoked` (a revoked token is never found by id).',
  }),
  created_at: Time,
  expires_at: Time,
  models: Type.Optional(ModelsScope),
  paths: Type.Optional(PathsScope),
  max_requests: Type.Optional(MaxRequestsScope),
  rate_limit: Type.Optional(RateLimitScope),
  created_by: Type.Optional(Type.String({ description: 'Who minted it: an `otk_` or `akey_` id, a member\'s `usr_` id, or `cli` (absent on tokens minted before it was recorded).' })),
  member_id: Type.Optional(IdOf('usr', 'A personal token\'s member: the person it was minted for (`keyward token`); removing the member revokes it.')),
  budget_usd: Type.Optional(BudgetScope),
  tools: Type.Optional(ToolsScope),
  tokens_per_minute: Type.Optional(TokensPerMinuteScope),
  max_concurrent: Type.Optional(MaxConcurrentScope),
  team_id: Type.Optional(IdOf('team', 'The team the token belongs to.')),
};

const HELD = 'Held by instances now for this cap: the worst cases of requests not yet settled, and leased amounts not yet used.';

export const TokenCaps = named('TokenCaps', Type.Object({
  budget_usd: Type.Optional(Type.Object({ used: Usd, held: Usd, limit: Usd }, {
    additionalProperties: false,
    description: `The token's \`budget_usd\` as its refusals read it: \`used\` is spent (a request an instance forwarded and could not settle, because it died mid-stream, counts its whole worst case once the instance's lease has run out), \`held\`: ${HELD} \`used + held ≤ limit\`, and \`limit − used − held\` is what a new request can still reserve: a token refused \`budget_exhausted\` is never shown its request's worst case left.`,
  })),
  tokens_per_minute: Type.Optional(Type.Object({
    used_in_window: Count,
    held: Type.Integer({ minimum: 0 }),
    limit: Count,
  }, {
    additionalProperties: false,
    description: `The token's \`tokens_per_minute\` over the rolling minute, as its refusals read it: \`used_in_window + held ≤ limit\`, and \`limit − used_in_window − held\` is what a new request can still reserve. \`held\`: ${HELD} Across instances, tokens another live instance used in the window are part of its \`held\` (only their sum is known to every instance).`,
  })),
  max_requests: Type.Optional(Type.Object({ used: Count, held: Type.Integer({ minimum: 0 }), limit: Count }, {
    additionalProperties: false,
    description: `The token's \`max_requests\` as its refusals read it: \`held\`: ${HELD} \`limit − used − held\` is what new requests can still get.`,
  })),
}, {
  additionalProperties: false,
  description: 'Each cap the token has, read from the ledger its refusals use (one key per cap; a cap the token does not have is absent).',
}));

export const Token = named('Token', Type.Object({
  ...tokenProperties,
  usage: Type.Optional(UsageCounts),
  caps: Type.Optional(TokenCaps),
  revoked_at: Type.Optional(Time),
  revoked_by: Type.Optional(Type.String({ description: 'Who revoked it: an `otk_` or `akey_` id, or `cli`.' })),
}, {
  additionalProperties: false,
  description: 'A proxy token (never its value). Scope fields and `name` appear when set; `usage` and `caps` on GET /v1/tokens/{id} only; `revoked_at` and `revoked_by` on revoked ones.',
}));

export const TokenCreated = named('TokenCreated', Type.Object({
  ...tokenProperties,
  token: Type.Optional(SecretOf('ptok', 'The proxy token: `X-Proxy-Token: ptok_…` (or an SDK\'s `apiKey`). Shown once.')),
}, { additionalProperties: false, description: 'A new proxy token. `token` is shown here once and never again (absent from an idempotent replay).' }));

export const TokenList = listOf('TokenList', Token, 'Proxy tokens: live ones (`active`, `expired`), or with `status=revoked` the revoked ones (most recently revoked first).');

export const TokenRevoked = named('TokenRevoked', Type.Object({
  id: Type.String(), object: Type.Literal('token'), revoked: Type.Literal(true),
}, { additionalProperties: false }));

const tokenCreate = bodyContract(TokenCreate);
/** The create body: what it is bound to first (a credential or a pool, 400 invalid_request when neither), then the schema. */
export const TOKEN_CREATE: typeof tokenCreate = {
  schema: tokenCreate.schema,
  parse(value: unknown) {
    const body = asObject(value);
    if (!Object.hasOwn(body, 'credential_id') && !Object.hasOwn(body, 'pool_id')) {
      throw Errors.invalidRequest('`credential_id` is required: the id of a stored credential (or `pool_id`, a pool\'s).', 'credential_id');
    }
    return tokenCreate.parse(body);
  },
};
