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
  }, { additionalProperties: false }),
}, {
  additionalProperties: false,
  description: 'Every error the gateway itself makes. (A provider\'s own error responses pass through the proxy unchanged, in the provider\'s shape.)',
}));
