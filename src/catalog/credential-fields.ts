/**
 * A provider's credential fields: their declaration, checked once at start
 * (`declareFields`, a malformed one stops start-up naming the field), and the
 * values `POST /v1/credentials` and `…/rotate` bring, checked against it
 * (`parseCredentialInput`, `parseRotateInput`: an unknown, missing or malformed
 * field is a 400 invalid_request naming it, before anything is stored).
 *
 * Every value is a string. A value that reaches the wire (a plain field's header,
 * the upstream template, the secret of a header or query auth) is printable ASCII
 * without spaces whatever its pattern, so it can never smuggle a line into a header
 * or a character into a URL.
 */
import { Errors } from '../errors.js';
import { CREDENTIAL_HEADERS, HOP_BY_HOP } from './header-names.js';
import type { CredentialField, CredentialSecrets, CredentialSpec } from './provider.js';

/** One field as the registry normalised it. */
export interface DeclaredField {
  readonly name: string;
  readonly secret: boolean;
  readonly optional: boolean;
  readonly pattern?: RegExp;
  readonly maxLength: number;
  readonly header?: string;
  readonly description?: string;
  /** What a form calls it (the declared `label`, or the name with spaces). */
  readonly label: string;
  /** A form's help line, where declared. */
  readonly help?: string;
  /** Routes' `{<name>}` parameter must equal this plain field's value (CredentialField.pinsPath). */
  readonly pinsPath?: boolean;
  /** The value is sent in a header, a query string or the origin (see the file comment). */
  readonly wire: boolean;
}

/** What the registry needs to check a credential's values. */
export interface CredentialRules {
  readonly id: string;
  readonly fields: readonly DeclaredField[];
  /** The secret `key_hint` is taken from. */
  readonly mainSecret: string;
  readonly credential: CredentialSpec;
  /** Checks the plain fields the upstream template uses; returns the problem, if any. */
  readonly templateProblem?: (plain: Readonly<Record<string, string>>) => { field: string; message: string } | undefined;
}

export const DEFAULT_CREDENTIAL: CredentialSpec = Object.freeze({ fields: Object.freeze({ api_key: Object.freeze({ secret: true, main: true }) }) });

/** Names a credential view or body already uses: a field may not shadow them. */
const RESERVED_FIELDS = new Set(['id', 'object', 'provider', 'name', 'key_hint', 'created_at', 'updated_at', 'usage', 'deleted', 'fields', 'secrets']);
const FIELD_NAME = /^[a-z][a-z0-9_]{0,39}$/;
const HEADER = /^[a-z0-9-]+$/;
/** Printable ASCII without spaces: what may go into a header or a URL. */
const WIRE = /^[\x21-\x7e]+$/;
const DEFAULT_SECRET = /^[\x21-\x7e]{8,}$/;
const KEYS = new Set(['secret', 'main', 'optional', 'pattern', 'maxLength', 'header', 'description', 'label', 'help', 'pinsPath']);
/** Plain words for a form: printable, no backticks (API wording) and no control characters. */
const PLAIN_WORDS = /^[^`\p{Cc}\p{Cf}]+$/u;

/** `api_key` → `api key`: a field's label when its file declares none. */
export const defaultLabel = (name: string): string => name.replace(/_/g, ' ');

/** Header names a plain field may not send: a credential, framing or forwarding header. */
export function reservedHeader(header: string): boolean {
  return CREDENTIAL_HEADERS.has(header) || HOP_BY_HOP.has(header) || header.startsWith('x-forwarded-') || header.startsWith('x-keyward-')
    || header === 'forwarded' || header === 'content-length' || header === 'content-type';
}

/** The fields of a `credential` declaration, in declaration order, plus the main secret's name. */
export function declareFields(spec: unknown, fail: (problem: string) => never): { fields: Array<Omit<DeclaredField, 'wire'>>; mainSecret: string } {
  const o = spec as { fields?: unknown; check?: unknown } | undefined;
  if (!o || typeof o !== 'object' || !o.fields || typeof o.fields !== 'object' || Array.isArray(o.fields)) fail('`credential.fields` must be an object of field declarations');
  if (o.check !== undefined && typeof o.check !== 'function') fail('`credential.check` must be a function');
  const fields: Array<Omit<DeclaredField, 'wire'>> = [];
  const headers = new Set<string>();
  let main: string | undefined;
  for (const [name, raw] of Object.entries(o.fields as object)) {
    const at = `credential field ${JSON.stringify(name)}`;
    if (!FIELD_NAME.test(name) || RESERVED_FIELDS.has(name)) fail(`${at}: the name must be lower-case letters, digits and _ and not one of ${[...RESERVED_FIELDS].join(', ')}`);
    const f = raw as CredentialField;
    if (!f || typeof f !== 'object') fail(`${at} must be an object`);
    for (const k of Object.keys(f)) if (!KEYS.has(k)) fail(`${at}: unknown key \`${k}\` (it takes ${[...KEYS].join(', ')})`);
    for (const k of ['secret', 'main', 'optional', 'pinsPath'] as const) if (f[k] !== undefined && typeof f[k] !== 'boolean') fail(`${at}: \`${k}\` must be true or false`);
    const secret = f.secret === true;
    if (name === 'api_key' && !secret) fail(`${at}: \`api_key\` is the key-based providers' secret: it must be \`secret: true\``);
    if (f.pattern !== undefined && (!(f.pattern instanceof RegExp) || f.pattern.global || f.pattern.sticky)) fail(`${at}: \`pattern\` must be a RegExp without the g or y flag`);
    if (f.maxLength !== undefined && (!Number.isInteger(f.maxLength) || f.maxLength < 1 || f.maxLength > 65_536)) fail(`${at}: \`maxLength\` must be an integer from 1 to 65536`);
    if (f.description !== undefined && typeof f.description !== 'string') fail(`${at}: \`description\` must be a string`);
    for (const [k, max] of [['label', 40], ['help', 200]] as const) {
      const v = f[k];
      if (v !== undefined && (typeof v !== 'string' || v.length > max || !PLAIN_WORDS.test(v))) fail(`${at}: \`${k}\` must be plain words of at most ${max} characters (no backticks or control characters)`);
    }
    if (f.pinsPath && (secret || f.optional)) fail(`${at}: only a required plain field can pin a path parameter (\`pinsPath\`)`);
    if (f.main) {
      if (!secret) fail(`${at}: only a secret field can be \`main\``);
      if (main !== undefined) fail(`${at}: only one field can be \`main\` (${main} is already)`);
      main = name;
    }
    if (f.header !== undefined) {
      if (secret) fail(`${at}: a secret field is never sent as a header of its own (\`auth\` says how secrets travel)`);
      // The field's header carries the organisation's value, never a credential or a framing header.
      if (typeof f.header !== 'string' || !HEADER.test(f.header) || reservedHeader(f.header) || headers.has(f.header)) {
        fail(`${at}: \`header\` must be a lower-case header name of its own, not a credential, hop-by-hop or forwarding header`);
      }
      headers.add(f.header);
    }
    fields.push(Object.freeze({
      name, secret, optional: f.optional === true, maxLength: f.maxLength ?? (secret ? 4096 : 200),
      ...(f.pattern ? { pattern: f.pattern } : {}), ...(f.header ? { header: f.header } : {}), ...(f.description ? { description: f.description } : {}),
      label: f.label ?? defaultLabel(name), ...(f.help ? { help: f.help } : {}),
      ...(f.pinsPath ? { pinsPath: true } : {}),
    }));
  }
  const secrets = fields.filter((f) => f.secret);
  if (secrets.length === 0) fail('`credential.fields` must declare at least one secret field');
  // One secret field is its own main; with several, the file says which.
  if (main === undefined && secrets.length > 1) fail(`\`credential.fields\` declares several secrets (${secrets.map((f) => f.name).join(', ')}): mark the one \`key_hint\` shows with \`main: true\``);
  return { fields, mainSecret: main ?? secrets[0]!.name };
}

function rule(f: DeclaredField): string {
  if (f.pattern) return `a string of at most ${f.maxLength} characters matching ${f.pattern.source}${f.wire ? ', printable and without spaces' : ''}`;
  return `a string of ${f.secret ? 8 : 1} to ${f.maxLength} printable characters without spaces`;
}

function checkValue(f: DeclaredField, value: unknown): void {
  const ok = typeof value === 'string' && value.length > 0 && value.length <= f.maxLength
    && (f.pattern ? f.pattern.test(value) : (f.secret ? DEFAULT_SECRET : WIRE).test(value))
    && (!f.wire || WIRE.test(value));
  if (!ok) throw Errors.invalidRequest(`\`${f.name}\` must be ${rule(f)}.`, f.name);
}

function unknownField(p: CredentialRules, name: string, accepted: readonly string[]): never {
  throw Errors.invalidRequest(`Unknown field ${JSON.stringify(name.slice(0, 64))} for provider ${p.id} (it takes ${accepted.join(', ')}).`, name.slice(0, 64));
}

function crossCheck(p: CredentialRules, c: CredentialSecrets): void {
  const problem = p.templateProblem?.(c.plain) ?? p.credential.check?.(c);
  if (problem) throw Errors.invalidRequest(problem.message, problem.field);
}

/**
 * A create body → the credential's secret and plain values. Every key of `body` other than
 * `common` (e.g. `provider`) must be a declared field; every field not `optional` must be there.
 */
export function parseCredentialInput(p: CredentialRules, body: Readonly<Record<string, unknown>>, common: readonly string[] = []): CredentialSecrets {
  for (const name of Object.keys(body)) {
    // A list, not a keyed lookup: a body's `constructor` or `__proto__` finds nothing.
    if (!common.includes(name) && !p.fields.some((f) => f.name === name)) unknownField(p, name, [...common, ...p.fields.map((f) => f.name)]);
  }
  const secrets: Record<string, string> = {};
  const plain: Record<string, string> = {};
  for (const f of p.fields) {
    const present = Object.hasOwn(body, f.name);
    if (!present && f.optional) continue;
    if (!present) throw Errors.invalidRequest(`\`${f.name}\` is required for provider ${p.id}: ${rule(f)}.`, f.name);
    checkValue(f, body[f.name]);
    (f.secret ? secrets : plain)[f.name] = body[f.name] as string;
  }
  const c = { secrets, plain };
  crossCheck(p, c);
  return c;
}

/**
 * A rotate body → the new secret values. A rotation replaces every secret at once (a secret left
 * out is dropped, and must be optional); plain fields are fixed at creation, since they decide
 * where and as whom the key is used (delete and create to change them).
 */
export function parseRotateInput(p: CredentialRules, body: Readonly<Record<string, unknown>>, plain: Readonly<Record<string, string>>): Record<string, string> {
  const secretFields = p.fields.filter((f) => f.secret);
  for (const name of Object.keys(body)) {
    const f = p.fields.find((d) => d.name === name);
    if (!f) unknownField(p, name, secretFields.map((d) => d.name));
    if (!f.secret) throw Errors.invalidRequest(`\`${name}\` is fixed at creation: a rotation takes only the secret fields (${secretFields.map((d) => d.name).join(', ')}).`, name);
  }
  const secrets: Record<string, string> = {};
  for (const f of secretFields) {
    const present = Object.hasOwn(body, f.name);
    if (!present && f.optional) continue;
    if (!present) throw Errors.invalidRequest(`\`${f.name}\` is required for provider ${p.id}: ${rule(f)}.`, f.name);
    checkValue(f, body[f.name]);
    secrets[f.name] = body[f.name] as string;
  }
  crossCheck(p, { secrets, plain });
  return secrets;
}

/** "…" and the last 4 characters of the main secret (or of the first secret present, when the main one is optional and absent). */
export function keyHint(p: CredentialRules, secrets: Readonly<Record<string, string>>): string {
  const value = secrets[p.mainSecret] ?? p.fields.filter((f) => f.secret).map((f) => secrets[f.name]).find((v) => v !== undefined) ?? '';
  return `…${value.slice(-4)}`;
}
