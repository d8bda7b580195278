/**
 * An upstream origin derived from a credential's plain fields, such as
 * `https://{resource}.openai.azure.com`: never a free-form URL. Every parameter
 * is a required plain field whose pattern is strict (anchored, and refusing the
 * characters that could move a URL elsewhere), checked at start; every value is
 * checked again when a credential is created (its pattern, and one DNS label in
 * the host or one unreserved path segment in the path), so the origin a request
 * goes to always has the template's shape.
 */
import type { DeclaredField } from './credential-fields.js';

/** What a strict pattern must refuse: each would let a value leave its host label or path segment. */
const PROBES = ['', 'a/b', 'a@b', 'a:1', 'a?b', 'a#b', 'a%2fb', 'a b', 'a\nb', 'a\\b', 'a\u0000b'];
/** One DNS label. */
const HOST_VALUE = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
/** One path segment of unreserved characters, not a dot segment. */
const PATH_VALUE = /^(?!\.{1,2}$)[A-Za-z0-9._~-]{1,200}$/;
const PARAM = /\{([a-z][a-z0-9_]{0,39})\}/g;

export interface UpstreamTemplate {
  /** The template as declared. */
  readonly source: string;
  /** Parameter names, in order of first use. */
  readonly params: readonly string[];
  /** The problem with a credential's plain values, naming the field; undefined when they fit. */
  problem(plain: Readonly<Record<string, string>>): { field: string; message: string } | undefined;
  /** The origin (and base path) for a credential whose values passed `problem`. */
  origin(plain: Readonly<Record<string, string>>): URL;
}

/** True when the declared upstream has `{…}` parameters. */
export const isTemplate = (upstream: string): boolean => upstream.includes('{');

/**
 * Compiles a template against the provider's declared fields; `fail` stops start-up naming the problem.
 * `validOrigin` checks the template with each parameter filled by a placeholder.
 */
export function compileTemplate(source: string, fields: readonly Omit<DeclaredField, 'wire'>[], validOrigin: (url: string) => URL, fail: (problem: string) => never): UpstreamTemplate {
  const params = [...new Set([...source.matchAll(PARAM)].map((m) => m[1]!))];
  if (params.length === 0 || source.replace(PARAM, '').includes('{') || source.replace(PARAM, '').includes('}')) {
    fail('`upstream` template parameters are `{field}`: a lower-case plain field name in braces');
  }
  for (const name of params) {
    const f = fields.find((d) => d.name === name);
    const at = `\`upstream\` parameter {${name}}`;
    if (!f) fail(`${at} names no credential field`);
    if (f.secret) fail(`${at}: a template parameter must be a plain field, never a secret`);
    if (f.optional) fail(`${at}: a template parameter's field may not be optional`);
    const p = f.pattern;
    if (!p) fail(`${at}: its field must declare a strict \`pattern\` (e.g. /^[a-z0-9-]{1,63}$/)`);
    if (!p.source.startsWith('^') || !p.source.endsWith('$') || p.source.endsWith('\\$') || p.multiline) {
      fail(`${at}: its field's \`pattern\` must be anchored (^…$) and not multiline`);
    }
    const accepted = PROBES.find((probe) => p.test(probe));
    if (accepted !== undefined) fail(`${at}: its field's \`pattern\` is not strict: it accepts ${JSON.stringify(accepted)}`);
  }
  // Where each parameter sits: filled with a marker, the URL says whether the host holds it.
  const marked = validOrigin(source.replace(PARAM, (_m, name: string) => `kwparam${params.indexOf(name)}x`));
  const inHost = new Set(params.filter((_n, i) => marked.host.includes(`kwparam${i}x`)));
  return Object.freeze({
    source,
    params,
    problem(plain: Readonly<Record<string, string>>) {
      for (const name of params) {
        const value = plain[name];
        if (value === undefined || !(inHost.has(name) ? HOST_VALUE : PATH_VALUE).test(value)) {
          return { field: name, message: `\`${name}\` must be ${inHost.has(name) ? 'one DNS label (letters, digits and -)' : 'one path segment of letters, digits and ._~-'}: it is part of the provider's address.` };
        }
      }
      return undefined;
    },
    origin(plain: Readonly<Record<string, string>>) {
      const url = new URL(source.replace(PARAM, (_m, name: string) => plain[name]!));
      return new URL(url.origin + url.pathname.replace(/\/+$/, ''));
    },
  });
}
