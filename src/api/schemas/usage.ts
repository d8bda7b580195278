/** Usage counters, GET /v1/usage (this month against the free tier and the spend limit), GET /v1/usage/daily, GET /v1/usage/breakdown and GET /v1/audit. */
import { Type } from '@sinclair/typebox';
import { Count, IdOf, listOf, named, Time } from './common.js';
import { queryContract, rule } from './validate.js';
import { AUDIT_ACTIONS } from '../../controls/audit-actions.js';

/** An amount of money as the API writes it (pricing/money.ts formatUsd). */
export const Usd = named('Usd', Type.String({
  pattern: '^\\d{1,13}\\.\\d{2,6}$',
  description: 'US dollars as a decimal string: at least two places, at most six (micro-dollars).',
  examples: ['12.50', '0.000125'],
}));

export const UsageCounts = named('UsageCounts', Type.Object({
  requests: Count,
  input_tokens: Count,
  output_tokens: Count,
  spend_usd: Usd,
}, {
  additionalProperties: false,
  description: 'Requests forwarded, tokens read from the provider\'s `usage`, and their cost at the price book\'s prices (`spend_usd`; a request whose model has no price spends 0). Recorded in the background, batched.',
}));

/**
 * What `held` means, in one line: the OpenAPI document, `keyward usage` and the console say it alike (the
 * console's copy is checked against this by its test).
 */
export const HELD_MEANS = 'Held: set aside by running instances, not spent: requests admitted and not yet settled, and blocks leased ahead '
  + 'so that most requests need no store write. What goes unused comes back; limit − used − held is what new requests can still get.';

const usedOf = (description: string) => Type.Object({ used: Count, limit: Count }, { additionalProperties: false, description });

export const Usage = named('Usage', Type.Object({
  object: Type.Literal('usage'),
  period: Type.String({ pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'The calendar month (UTC).', examples: ['2026-11'] }),
  proxy_requests: Type.Object({
    used: Count,
    held: Type.Integer({ minimum: 0, description: HELD_MEANS }),
    limit: Count,
  }, {
    additionalProperties: false,
    description: 'Proxy requests this month against KEYWARD_FREE_PROXY_REQUESTS: `used + held ≤ limit`. `used` may lag a few seconds across instances (it moves from `held`); an instance that dies leaves what it held idle to come back within KEYWARD_LEASE_TTL, and what it held for requests in flight counted as used.',
  }),
  credentials: usedOf('Stored credentials against KEYWARD_FREE_CREDENTIALS.'),
  tokens: Type.Object({ input: Count, output: Count }, { additionalProperties: false, description: 'Provider tokens this month, from the providers\' `usage`.' }),
  spend_usd: Type.Object({
    used: Usd,
    held: Usd,
    limit: Type.Union([Usd, Type.Null()], { description: 'The organisation\'s monthly `spend_limit_usd`, or null when none is set.' }),
  }, {
    additionalProperties: false,
    description: 'Spend this month (UTC) against the monthly spend limit. `held`: held by instances under the limit now, the worst cases of requests not yet settled and leased amounts not yet spent ("0.00" without a limit). `used + held ≤ limit`, and `limit − used − held` is what new requests can still reserve. An instance that dies mid-stream leaves its in-flight worst cases counted as used (never below what the provider can bill) and its idle amounts to come back within KEYWARD_LEASE_TTL.',
  }),
}, { additionalProperties: false }));

const Day = (description: string) => rule(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description, examples: ['2026-11-01'] }), 'a day, YYYY-MM-DD (UTC)');

export const DailyUsageParams = Type.Object({
  from: Type.Optional(Day('The first day (UTC), inclusive. Default: 29 days before `to`.')),
  to: Type.Optional(Day('The last day (UTC), inclusive. Default: today.')),
});

/** `from` and `to` as written (their calendar check and the range's length are the service's: accounting/usage-summary.ts). */
export const DAILY_QUERY = queryContract(DailyUsageParams);

export const UsageDay = named('UsageDay', Type.Object({
  date: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'The day (UTC).', examples: ['2026-11-01'] }),
  requests: Count,
  input_tokens: Count,
  output_tokens: Count,
  spend_usd: Usd,
}, { additionalProperties: false, description: 'One day of an organisation\'s usage.' }));

export const DailyUsage = named('DailyUsage', Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(UsageDay),
}, { additionalProperties: false, description: 'Every day from `from` to `to` in order, days without traffic included (zeros). At most 92 days.' }));

export const BreakdownParams = Type.Object({
  by: rule(Type.Union([Type.Literal('token'), Type.Literal('credential'), Type.Literal('model'), Type.Literal('team'), Type.Literal('member')], {
    description: 'What to break the organisation\'s usage down by: its tokens (revoked ones included), its credentials, the models as the price table names them (`unpriced` for the rest; an MCP server\'s tool calls as `tool:<provider>:<tool>`), its teams or its members (the tokens bound to each, revoked ones included; tokens bound to none are left out).',
  }), 'token, credential, model, team or member'),
  from: Type.Optional(Day('The first day (UTC), inclusive. Default: the first day of `to`\'s month.')),
  to: Type.Optional(Day('The last day (UTC), inclusive. Default: today.')),
});

export const BREAKDOWN_QUERY = queryContract(BreakdownParams);

export const UsageBreakdownRow = named('UsageBreakdownRow', Type.Object({
  key: Type.String({ description: 'The token id (`tok_…`), the credential id (`cred_…`), the team id (`team_…`), the member id (`usr_…`), or the model as the price table names it (a model, a `prefix*`, `family_max:<family>`, or `unpriced`); an MCP server\'s tools/call messages are counted by tool, `tool:<provider>:<tool>` (a name outside the tools grammar, or past an organisation\'s first 32 at a provider, as `tool:<provider>:(other)`).' }),
  name: Type.Optional(Type.String({ description: 'The token\'s, credential\'s or team\'s name, if it has one and still exists (a revoked token keeps its name; a deleted credential or team has none).' })),
  requests: Count,
  input_tokens: Count,
  output_tokens: Count,
  spend_usd: Usd,
}, { additionalProperties: false, description: 'One token\'s, credential\'s, model\'s, team\'s or member\'s usage over the range.' }));

export const UsageBreakdown = named('UsageBreakdown', Type.Object({
  object: Type.Literal('list'),
  by: Type.Union([Type.Literal('token'), Type.Literal('credential'), Type.Literal('model'), Type.Literal('team'), Type.Literal('member')]),
  from: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'The first day counted (UTC).' }),
  to: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'The last day counted (UTC).' }),
  data: Type.Array(UsageBreakdownRow),
}, {
  additionalProperties: false,
  description: 'Each key with usage in the range, the dearest first (then by requests, then by key). From the daily counters the gateway batches (no write per request); at most 92 days.',
}));

export const AuditEvent = named('AuditEvent', Type.Object({
  id: IdOf('evt', 'The event\'s id.'),
  object: Type.Literal('audit_event'),
  time: Time,
  request_id: Type.String({ description: 'The `x-request-id` / `x-keyward-request-id` of the request.' }),
  org: Type.String({ description: 'The organisation\'s id.' }),
  actor: Type.String({ description: 'Who did it: the organisation token\'s id (`otk_…`), an admin key\'s (`akey_…`), a proxy token\'s (`tok_…`), `admin` (the operator\'s token), `cli` or `anonymous`; for a token exchange the workload, `oidc:<iss>#<sub>`.' }),
  actor_name: Type.Optional(Type.String({ description: 'The actor\'s name now, when it is an admin key or a proxy token with a name (a revoked token\'s kept; a deleted admin key\'s gone).' })),
  member_id: Type.Optional(Type.String({ description: 'The person behind the actor: a member\'s token (a personal token, an MCP access token a member consented to) or the member itself (`usr_…`).' })),
  member_email: Type.Optional(Type.String({ description: 'That member\'s e-mail address, while it is a member.' })),
  action: Type.String({
    description: `What was done: ${AUDIT_ACTIONS.map((a) => `\`${a}\``).join(', ')} (and a plugin's own actions).`,
    examples: [...AUDIT_ACTIONS],
  }),
  target: Type.String({ description: 'The id (or path) acted on.' }),
  target_name: Type.Optional(Type.String({ description: 'The name the target had when the action was done, if it had one (a credential\'s, token\'s, admin key\'s or organisation\'s name; never a secret).' })),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure'), Type.Literal('denied')]),
  ip: Type.String({ description: 'The caller\'s address (`*`: refusals from more addresses at once than the gateway counts apart).' }),
  count: Type.Integer({ minimum: 1, description: 'How many events the record stands for: 1 for a change, the minute\'s total for a refusal.' }),
}, {
  additionalProperties: false,
  description: 'One audit record. Never a secret. A change is one record; refusals (`outcome` `denied`) are one record per organisation, action, address and minute, with their `count` (its time, request id, actor and target are the minute\'s first). Records are listed for `KEYWARD_AUDIT_RETENTION_DAYS`.',
}));

export const AuditList = listOf('AuditList', AuditEvent, 'Audit events.');
