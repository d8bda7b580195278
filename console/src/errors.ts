/**
 * A refusal in plain words, and the field it concerns. The API words its errors for developers
 * (`api_key` must be a string of …, regular expressions, variable names); the console speaks to an
 * operator: field names become the labels the form shows, patterns become "is not in the expected
 * form" (the field's help says what is), and each code the console can meet gets a sentence of its
 * own. Nothing here ever shows a value the operator typed (it may be a key).
 */
import { ApiFailure } from './api.js';

/** A form's fields as the page shows them: the API's name, the label, and the help line if any. */
export interface FormField {
  name: string;
  label: string;
  help?: string;
}

export interface PlainError {
  /** The form field at fault (its API name), when the refusal names one the form shows. */
  field?: string;
  message: string;
}

/** Sentences for codes whatever the form (the field, if any, comes from the form's own rules). */
const BY_CODE: Record<string, string> = {
  network: 'The gateway could not be reached. Check the connection and try again.',
  forbidden: 'Your key\'s role does not allow this. Sign in with a key that may do it.',
  limit_exceeded: 'This organisation already stores as many keys as its plan allows. Delete one to store another.',
  idempotency_conflict: 'This was just sent with other values. Send it again.',
  rate_limited: 'Too many requests just now. Wait a minute and try again.',
  unknown_provider: 'The gateway does not know this provider any more. Reload the page.',
  issuer_not_allowed: 'The gateway does not accept tokens from this issuer. Its operator lists the allowed ones.',
  token_retiring: 'This organisation token is already being replaced. Sign in with the newest one to rotate again.',
  payload_too_large: 'This is too large to send. Shorten the longest value.',
  unavailable: 'The gateway cannot do this just now. Try again in a moment.',
  internal: 'Something went wrong on the gateway. Try again in a moment.',
};

/** A label inside a sentence: "Lifetime" → "lifetime", but "API key" and "AWS region" stay as they are. */
export const inSentence = (label: string): string => (/^[A-Z][A-Z]/.test(label) ? label : label.charAt(0).toLowerCase() + label.slice(1));

const sentence = (s: string) => (/[.!?]$/.test(s) ? s : `${s}.`);
const capital = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** The API's wording with its field names turned into labels and its jargon into plain words. */
export function plainWords(message: string, fields: readonly FormField[]): string {
  const label = (name: string) => fields.find((f) => f.name === name)?.label ?? name.replace(/_/g, ' ');
  let text = message.replace(/`([^`]+)`/g, (_m, name: string) => label(name));
  text = text
    .replace(/ for provider [a-z0-9-]+/g, '')
    .replace(/,? ?(matching|such as) \^\S*\$/g, '')
    .replace(/\(KEYWARD_[A-Z_]+\)/g, '')
    .replace(/a decimal string of US dollars/g, 'an amount in US dollars')
    .replace(/a string of /g, '')
    .replace(/printable characters/g, 'characters')
    .replace(/a non-empty array of /g, 'a list of ')
    .replace(/a positive integer/g, 'a whole number above 0')
    .replace(/an integer/g, 'a whole number')
    .replace(/\s+/g, ' ')
    .trim();
  return capital(sentence(text.replace(/\s+([.,:;])/g, '$1')));
}

/** The seconds of "at most N seconds" as days, hours or minutes. */
function duration(seconds: number): string {
  for (const [unit, s] of [['day', 86_400], ['hour', 3_600], ['minute', 60]] as const) {
    if (seconds >= s && seconds % s === 0) return `${seconds / s} ${unit}${seconds / s === 1 ? '' : 's'}`;
  }
  return `${seconds} seconds`;
}

/**
 * `err` for the form whose fields are `fields`: under which field it goes (the API's `param`, or the
 * field a code is about) and its sentence. A field the form does not show leaves it for the form.
 */
export function plainError(err: unknown, fields: readonly FormField[] = []): PlainError {
  if (!(err instanceof ApiFailure)) return { message: err instanceof Error ? sentence(err.message) : 'Something went wrong. Try again.' };
  const shown = (name: string | undefined) => (name !== undefined && fields.some((f) => f.name === name) ? name : undefined);
  const f = (name: string) => fields.find((x) => x.name === name);
  if (err.code === 'invalid_ttl') {
    const field = shown(err.param ?? 'ttl');
    const most = /at most (\d+) seconds/.exec(err.message) ?? /at most (\d+)d/.exec(err.message);
    const longest = most ? (most[0].endsWith('d') ? `${most[1]} days` : duration(Number(most[1]))) : undefined;
    return {
      ...(field ? { field } : {}),
      message: longest
        ? `The lifetime may be at most ${longest}.`
        : 'Enter a lifetime as a number and a unit: s, m, h or d (for example 15m or 7d).',
    };
  }
  if (err.code === 'not_found') {
    const field = /credential/.test(err.message) ? shown('credential_id') ?? shown('credential_ids') : undefined;
    return field ? { field, message: 'That credential no longer exists. Reload the page to see the current list.' } : { message: 'It no longer exists: it may have been deleted meanwhile. Reload the page.' };
  }
  if (BY_CODE[err.code]) return { ...(shown(err.param) ? { field: err.param! } : {}), message: BY_CODE[err.code]! };
  if (err.status >= 500) return { message: BY_CODE.unavailable! };
  const field = shown(err.param);
  if (field) {
    const x = f(field)!;
    // "`x` is required: …" (the field alone): ask for the value. "… is required with `y`" keeps its reason.
    if (new RegExp(`^\`${field}\` is required( for provider [a-z0-9-]+)?:`).test(err.message)) return { field, message: `Enter the ${inSentence(x.label)}.` };
    // A pattern is no help to an operator: the field's help line says what the value looks like.
    if (/matching|\^|\$\//.test(err.message)) return { field, message: `This ${inSentence(x.label)} is not in the expected form.${x.help ? ` ${x.help}` : ''}` };
  }
  return { ...(field ? { field } : {}), message: plainWords(err.message, fields) };
}
