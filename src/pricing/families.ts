/**
 * A model's family, per provider: what `KEYWARD_UNPRICED=family_max` prices an
 * unlisted model by (the highest price the price book lists for any model of the
 * same family), and what the unpriced-model listing groups by. A family is the
 * model's name up to its version, as each provider spells its names:
 *
 * - anthropic: `claude-<tier>`, the tier being the first word of the name that
 *   is not a number: `claude-opus-5-5` and `claude-opus-4-1-20250805` are
 *   `claude-opus`; the older spelling `claude-3-7-sonnet-20250219` is
 *   `claude-sonnet`. Vertex names (`claude-opus-4-5@20251101`) alike; Bedrock's
 *   keep their prefix: `us.anthropic.claude-opus-4-5-…-v1:0` is
 *   `us.anthropic.claude-opus` (a geographic profile is priced apart).
 * - openai: `gpt-<major>` for GPT names (`gpt-5`, `gpt-5.1-codex-max` and
 *   `gpt-5-mini` are `gpt-5`; `gpt-6.1-sol` is `gpt-6`; `gpt-4o` is `gpt-4`), `o<n>` for the
 *   reasoning series (`o3-pro` is `o3`); any other name up to its version.
 * - gemini (and Gemini on vertex): `gemini-<tier>`, the first word after the
 *   version: `gemini-3.1-pro-preview` and `gemini-2.5-pro` are `gemini-pro`,
 *   `gemini-2.5-flash-lite` is `gemini-flash`.
 * - openrouter: `<vendor>/` and the vendor's own rule (`anthropic/claude-opus-4.5`
 *   is `anthropic/claude-opus`).
 * - any other provider: the name up to its first `-`-separated part that is a
 *   version (starts with a digit, or `v` and a digit): `mistral-large-2411` is
 *   `mistral-large`, `grok-4-fast-reasoning` is `grok`.
 *
 * A name with no version in it (`deepseek-chat`, `sonar-pro`) has no family: it is
 * never priced by a rule, only by its own entry. A price book entry written as a
 * `prefix*` belongs to the family of its prefix.
 */

/** The name up to its first version part (split on `-`), or undefined when it has none or starts with one. */
export function upToVersion(name: string): string | undefined {
  const parts = name.split('-');
  const at = parts.findIndex((p) => /^v?\d/.test(p));
  return at > 0 ? parts.slice(0, at).join('-') : undefined;
}

/** `claude-<tier>`: the first part after `claude-` that is not a number (older names put the version first). */
function claudeFamily(name: string): string | undefined {
  const m = /^claude-((?:[\d.]+-)*)([a-z]+)(?:[-@]|$)/.exec(name);
  return m && (m[1] !== '' || /^claude-[a-z]+-\d/.test(name)) ? `claude-${m[2]}` : undefined;
}

function geminiFamily(name: string): string | undefined {
  const m = /^gemini-\d[\d.]*-([a-z]+)/.exec(name);
  return m ? `gemini-${m[1]}` : upToVersion(name);
}

function openaiFamily(name: string): string | undefined {
  const m = /^(gpt-\d+|o\d+)(?!\d)/.exec(name);
  return m ? m[1] : upToVersion(name);
}

/** The family rule of a model published by a vendor (OpenRouter's `vendor/…`, a Vertex or Bedrock model). */
function vendorFamily(name: string): string | undefined {
  if (name.startsWith('claude-')) return claudeFamily(name);
  if (name.startsWith('gemini-')) return geminiFamily(name);
  if (/^(gpt-\d|o\d)/.test(name)) return openaiFamily(name);
  return upToVersion(name);
}

const RULES: Readonly<Record<string, (name: string) => string | undefined>> = {
  anthropic: claudeFamily,
  openai: openaiFamily,
  gemini: geminiFamily,
  vertex: vendorFamily,
  bedrock: (name) => {
    // `[geo.]anthropic.claude-…`: the vendor's rule on the model, its prefix kept.
    const m = /^((?:[a-z-]+\.)?anthropic\.)(claude-.*)$/.exec(name);
    if (!m) return upToVersion(name);
    const family = claudeFamily(m[2]!);
    return family && m[1] + family;
  },
  openrouter: (name) => {
    const slash = name.indexOf('/');
    if (slash <= 0) return undefined;
    // OpenRouter writes versions with dots (`claude-opus-4.5`): the vendor's rule reads them the same.
    const family = vendorFamily(name.slice(slash + 1));
    return family && `${name.slice(0, slash)}/${family}`;
  },
};

/** The family of `model` at `providerId` (a `prefix*` entry: of its prefix), or undefined when it has none. */
export function familyOf(providerId: string, model: string): string | undefined {
  const name = model.endsWith('*') ? model.slice(0, -1) : model;
  if (name === '') return undefined;
  return (RULES[providerId] ?? upToVersion)(name);
}
