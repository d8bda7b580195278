/** Usage counters, GET /v1/usage (this month against the free tier) and GET /v1/audit. */
import { Type } from '@sinclair/typebox';
import { Count, IdOf, listOf, named, Time } from './common.js';

export const UsageCounts = named('UsageCounts', Type.Object({
  requests: Count,
  input_tokens: Count,
  output_tokens: Count,
}, { additionalProperties: false, description: 'Requests forwarded and tokens read from the provider\'s `usage` (recorded in the background, batched).' }));

const usedOf = (description: string) => Type.Object({ used: Count, limit: Count }, { additionalProperties: false, description });

export const Usage = named('Usage', Type.Object({
  object: Type.Literal('usage'),
  period: Type.String({ pattern: '^\\d{4}-(0[1-9]|1[0-2])$', description: 'The calendar month (UTC).', examples: ['2026-11'] }),
  proxy_requests: usedOf('Forwarded proxy requests this month against KEYWARD_FREE_PROXY_REQUESTS (may lag a few seconds across instances, never past the limit).'),
  credentials: usedOf('Stored credentials against KEYWARD_FREE_CREDENTIALS.'),
  tokens: Type.Object({ input: Count, output: Count }, { additionalProperties: false, description: 'Provider tokens this month, from the providers\' `usage`.' }),
}, { additionalProperties: false }));

export const AuditEvent = named('AuditEvent', Type.Object({
  id: IdOf('evt', 'The event\'s id.'),
  object: Type.Literal('audit_event'),
  time: Time,
  request_id: Type.String({ description: 'The `x-request-id` / `x-keyward-request-id` of the request.' }),
  org: Type.String({ description: 'The organisation\'s id.' }),
  actor: Type.String({ description: 'A token id (`otk_…`, `tok_…`), `admin`, `cli` or `anonymous`; for a token exchange the workload, `oidc:<iss>#<sub>`.' }),
  action: Type.String({
    description: 'What was done.',
    examples: ['org.create', 'org.token_rotate', 'credential.create', 'credential.rotate', 'credential.delete', 'token.create', 'token.revoke', 'auth.failed', 'quota.refused', 'admin.rate_limited'],
  }),
  target: Type.String({ description: 'The id (or path) acted on.' }),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure'), Type.Literal('denied')]),
  ip: Type.String({ description: 'The caller\'s address (`*`: refusals from more addresses at once than the gateway counts apart).' }),
  count: Type.Integer({ minimum: 1, description: 'How many events the record stands for: 1 for a change, the minute\'s total for a refusal.' }),
}, {
  additionalProperties: false,
  description: 'One audit record. Never a secret. A change is one record; refusals (`outcome` `denied`) are one record per organisation, action, address and minute, with their `count` (its time, request id, actor and target are the minute\'s first). Records are listed for `KEYWARD_AUDIT_RETENTION_DAYS`.',
}));

export const AuditList = listOf('AuditList', AuditEvent, 'Audit events.');
