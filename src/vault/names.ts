/**
 * The one rule for the optional `name` of credentials, tokens, admin keys (and pools): 1 to 64
 * printable characters, not starting or ending with white space. Printable means no control,
 * format (bidirectional overrides, zero-width), surrogate or line/paragraph separator character,
 * so a name can never reorder or hide text where it is shown (console, CLI, audit). Shared by the
 * API's schema piece (src/api/schemas/common.ts `Name`) and the services the CLI calls.
 */
import { Errors } from '../errors.js';

/** A character a name may hold anywhere, and one it may start or end with (no white space). */
const INNER = '[^\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}]';
const EDGE = '[^\\s\\p{Cc}\\p{Cf}\\p{Cs}\\p{Zl}\\p{Zp}]';

export const NAME_MAX = 64;
export const NAME = new RegExp(`^${EDGE}(?:${INNER}{0,${NAME_MAX - 2}}${EDGE})?$`, 'u');
/** A `?name=` prefix: printable, spaces anywhere (a prefix may end in one). */
export const NAME_PREFIX = new RegExp(`^${INNER}{1,${NAME_MAX}}$`, 'u');
/** Completes "`name` must be …". */
export const NAME_RULE = `1 to ${NAME_MAX} printable characters, not starting or ending with a space`;

/** A name from a body or a flag: undefined when absent, null when cleared (`"name": null`), else checked. */
export function parseName(value: unknown): string | null | undefined {
  if (value === undefined || value === null) return value;
  if (typeof value !== 'string' || !NAME.test(value)) throw Errors.invalidRequest(`\`name\` must be ${NAME_RULE}.`, 'name');
  return value;
}
