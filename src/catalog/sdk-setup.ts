/**
 * A provider file's `sdk` block (provider.ts SdkSetup), checked once at start: each entry names who reads
 * it and gives environment variables and/or a code snippet whose templates use only `{proxy}`, `{token}`
 * and the provider's plain credential fields, and at least one entry hands over the token. So whatever
 * shows them (the console, after minting) can fill every placeholder and never prints a secret field.
 */
import type { SdkSetup } from './provider.js';

const ENV_NAME = /^[A-Z][A-Z0-9_]{0,63}$/;
const PLACEHOLDER = /\{([a-z_][a-z0-9_]*)\}/g;
const MAX_ENTRIES = 8;
const PLAIN_TEXT = /^[^`\p{Cc}\p{Cf}]+$/u;

/** The placeholders of a template. */
export function placeholders(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/** `plainFields`: the provider's plain (non-secret) credential field names, which a template may name. */
export function validateSdk(value: unknown, plainFields: readonly string[], fail: (problem: string) => never): readonly SdkSetup[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_ENTRIES) fail(`\`sdk\` must be an array of 1 to ${MAX_ENTRIES} { name, env?, code?, note? }`);
  const known = new Set(['proxy', 'token', ...plainFields]);
  let handsToken = false;
  const template = (at: string, t: unknown, max: number): void => {
    if (typeof t !== 'string' || t.length === 0 || t.length > max) fail(`${at} must be a string of 1 to ${max} characters`);
    for (const p of placeholders(t as string)) {
      if (!known.has(p)) fail(`${at}: {${p}} is not {proxy}, {token} or a plain credential field (${plainFields.join(', ') || 'none'})`);
      if (p === 'token') handsToken = true;
    }
  };
  for (const [i, raw] of (value as unknown[]).entries()) {
    const at = `\`sdk[${i}]\``;
    const e = raw as Record<string, unknown>;
    if (!e || typeof e !== 'object' || Array.isArray(e)) fail(`${at} must be an object`);
    for (const k of Object.keys(e)) if (!['name', 'env', 'code', 'note'].includes(k)) fail(`${at}: unknown key \`${k}\` (it takes name, env, code, note)`);
    if (typeof e.name !== 'string' || e.name.length > 80 || !PLAIN_TEXT.test(e.name)) fail(`${at}.name must be plain words of at most 80 characters`);
    if (e.note !== undefined && (typeof e.note !== 'string' || e.note.length > 300 || !PLAIN_TEXT.test(e.note))) fail(`${at}.note must be plain words of at most 300 characters`);
    if (e.env === undefined && e.code === undefined) fail(`${at} needs \`env\` or \`code\``);
    if (e.env !== undefined) {
      if (!e.env || typeof e.env !== 'object' || Array.isArray(e.env) || Object.keys(e.env).length === 0) fail(`${at}.env must be an object of VARIABLE: template`);
      for (const [name, t] of Object.entries(e.env as object)) {
        if (!ENV_NAME.test(name)) fail(`${at}.env: ${JSON.stringify(name)} is not an environment variable name (upper-case letters, digits, _)`);
        template(`${at}.env.${name}`, t, 300);
      }
    }
    if (e.code !== undefined) template(`${at}.code`, e.code, 2000);
  }
  if (!handsToken) fail('`sdk` must hand over the proxy token ({token}) somewhere');
  return Object.freeze((value as SdkSetup[]).map((e) => Object.freeze({ ...e, ...(e.env ? { env: Object.freeze({ ...e.env }) } : {}) })));
}
