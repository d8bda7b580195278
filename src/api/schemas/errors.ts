/** The error body every refusal of the gateway itself has, with its codes and types from the catalogue (src/errors.ts). */
import { Type } from '@sinclair/typebox';
import { ERROR_CATALOGUE, ERROR_TYPES, type CatalogueEntry, type ErrorCode } from '../../errors.js';
import { named } from './common.js';

const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];

export const ErrorTypeSchema = named('ErrorType', Type.Union(ERROR_TYPES.map((t) => Type.Literal(t))));

/** One line per code and status: `- \`code\` — 400 invalid_request: when`. */
const lines = CODES.flatMap((c) => {
  const e: CatalogueEntry = ERROR_CATALOGUE[c];
  return [[e.status, e.when] as const, ...(e.also ? [[e.also.status, e.also.when] as const] : [])].map(([status, when]) => `- \`${c}\` — ${status} ${e.type}: ${when}`);
});

export const ErrorCodeSchema = named('ErrorCode', Type.Union(CODES.map((c) => Type.Literal(c)), { description: lines.join('\n') }));

export const ErrorBody = named('Error', Type.Object({
  error: Type.Object({
    type: ErrorTypeSchema,
    code: ErrorCodeSchema,
    message: Type.String({ description: 'For humans; never holds a key or a token.' }),
    param: Type.Optional(Type.String({ description: 'The field, query parameter or header at fault, when there is one.' })),
    detail: Type.Optional(Type.Object({
      cap: Type.Optional(Type.String({ description: 'The cap that refused: `token.budget_usd`, `member.budget_usd`, `team.budget_usd`, `org.spend_limit_usd`, `token.tokens_per_minute` or `team.tokens_per_minute`.', examples: ['token.budget_usd'] })),
      needed_usd: Type.Optional(Type.String({ pattern: '^[0-9]+\\.[0-9]{6}$', description: 'The request\'s worst-case cost in USD (six places).', examples: ['0.012000'] })),
      left_usd: Type.Optional(Type.String({ pattern: '^[0-9]+\\.[0-9]{6}$', description: 'What was left under the cap in USD when it refused (six places).', examples: ['0.003000'] })),
      needed_tokens: Type.Optional(Type.Integer({ minimum: 0, description: 'The request\'s worst-case input + output tokens.' })),
      left_tokens: Type.Optional(Type.Integer({ minimum: 0, description: 'What was left of the token\'s tokens_per_minute when it refused.' })),
      field: Type.Optional(Type.String({ description: 'The request field whose value has no price.' })),
      value: Type.Optional(Type.String({ description: 'That field\'s value.' })),
    }, {
      additionalProperties: false,
      description: 'A cap\'s refusal (`budget_exhausted`, `tokens_per_minute_exceeded`, `price_unknown`): what the request needed at worst and what was left, so a caller can tell a request too large for the cap from a cap nearly spent.',
    })),
  }, { additionalProperties: false }),
}, {
  additionalProperties: false,
  description: 'Every error the gateway itself makes. (A provider\'s own error responses pass through the proxy unchanged, in the provider\'s shape.)',
}));
