/**
 * Each built-in usage shape's keys (usage-scanner.ts reads them): which key counts as which kind of token,
 * which keys a response names its parts under (a `*_tokens_details` object or a `*TokensDetails` list, whose
 * `audio_tokens` or AUDIO `tokenCount` are audio input or output), which keys are known and billed inside
 * another count (reasoning, total, a request's limit echoed back), and which string values the response reports
 * a price dimension's tier under (`service_tier`, `speed`). Every other key ending in `_tokens`, `Tokens` or
 * `TokenCount` with a number is a usage field the reader does not know: on a capped request it is settled at the
 * reservation (fail closed) and counted in keyward_unknown_usage_total.
 *
 * Every billed field maps to a price (pricing/prices.ts usageCost): input, output (reasoning and thinking
 * inside it, or added from the total), cache reads, cache writes of 5 minutes and of 1 hour (Anthropic's
 * `cache_creation.ephemeral_1h_input_tokens`, Bedrock's `cacheDetails` with `"ttl":"1h"`), audio input and output.
 */
import { ANTHROPIC_STOP, GEMINI_STOP, OPENAI_STOP, type StopSignal } from './usage-end.js';

/**
 * A shape's keys. `inputParts`/`outputParts` are counts reported beside the main one that
 * belong to it (Gemini's tool-use prompt and thinking tokens); `inputExcludesCache`: the main
 * input count leaves out cache reads and writes (Anthropic, Bedrock), so they are added to it.
 * `total`: a response's total; the output is never taken below total − input, since some
 * providers report reasoning beside the completion count instead of inside it (xAI's chat
 * completions, Gemini's OpenAI-compatible surface) and it is billed as output all the same.
 */
export interface UsageKeys {
  input: readonly string[];
  output: readonly string[];
  cached: readonly string[];
  cacheWrite?: readonly string[];
  /** The part of the cache writes kept for an hour (priced at `cacheWrite1hInput`). */
  cacheWrite1h?: readonly string[];
  total?: readonly string[];
  inputParts?: readonly string[];
  outputParts?: readonly string[];
  /** Audio tokens inside a details object or list: input or output by the details key before them (`sides`). */
  audio?: readonly string[];
  /** Details keys (`prompt_tokens_details`, `candidatesTokensDetails`) → which side their audio counts are. */
  sides?: Readonly<Record<string, Side>>;
  /** Token counts that are known and billed inside another count (or are not usage): never unknown. */
  known?: readonly string[];
  /** Keys whose string value says which price tier served the request (PriceDimension.reported). */
  reported?: readonly string[];
  inputExcludesCache?: boolean;
  /** A lookbehind the input keys must not follow (Bedrock's per-TTL cacheDetails entries reuse `inputTokens`). */
  inputNotAfter?: string;
  /** How a streamed response of this shape says its message ended. */
  end?: StopSignal;
}

export type Side = 'input' | 'output' | 'cached';

/** The kinds of count, in the order `UsageScanner` keeps their last values. */
export type Kind = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8;
export const KINDS = ['input', 'inputParts', 'output', 'outputParts', 'cached', 'cacheWrite', 'total', 'cacheWrite1h', 'audio'] as const;

const keyRegex = (keys: readonly string[] | undefined, notAfter = ''): RegExp | undefined =>
  keys && keys.length > 0 ? new RegExp(`${notAfter}"(?:${keys.join('|')})"\\s*:\\s*(\\d{1,12})`, 'g') : undefined;

/** A shape's keys as regexes (global: matchAll works on a copy, so one compiled set serves every response). */
export interface CompiledKeys {
  input: RegExp;
  output: RegExp;
  cached: RegExp;
  cacheWrite?: RegExp;
  cacheWrite1h?: RegExp;
  total?: RegExp;
  inputParts?: RegExp;
  outputParts?: RegExp;
  inputExcludesCache: boolean;
  /**
   * Every key the shape reads (counts, details, reported tiers, a list element's modality) with a number, an object,
   * a list or a short string after it, in one regex, and the kind each key name counts as: one pass over the text.
   * Absent when a kind has a lookbehind of its own (Bedrock's): then each kind's regex runs.
   */
  all?: { re: RegExp; kinds: ReadonlyMap<string, Kind> };
  sides: ReadonlyMap<string, Side>;
  known: ReadonlySet<string>;
  reported: ReadonlySet<string>;
  end?: StopSignal;
}

/** A key that names a token count: what is unknown when no shape knows it. */
export const TOKEN_COUNT_KEY = /(?:_tokens|Tokens|TokenCount)$/;
/** A token count's key with a number: the pass for keys a shape does not know (run only over text that has one). */
export const UNKNOWN_KEY = /"([A-Za-z_][A-Za-z0-9_]{0,63}(?:_tokens|Tokens|TokenCount))"\s*:\s*\d/g;
/** Request limits a response echoes back (the Responses API's object) and are not usage. */
const ECHOED = ['max_tokens', 'max_output_tokens', 'max_completion_tokens', 'maxOutputTokens', 'maxTokens'];
/** A details list element's keys (Gemini: `{"modality": "AUDIO", "tokenCount": 600}`). */
const MODALITY = ['modality', 'tokenCount'];

export function compile(keys: UsageKeys): CompiledKeys {
  const kinds = new Map<string, Kind>();
  KINDS.forEach((kind, i) => {
    for (const name of keys[kind] ?? []) {
      if (kinds.has(name)) throw new Error(`usage key ${name} is counted as two kinds`);
      kinds.set(name, i as Kind);
    }
  });
  return {
    input: keyRegex(keys.input, keys.inputNotAfter)!,
    output: keyRegex(keys.output)!,
    cached: keyRegex(keys.cached)!,
    cacheWrite: keyRegex(keys.cacheWrite),
    cacheWrite1h: keyRegex(keys.cacheWrite1h),
    total: keyRegex(keys.total),
    inputParts: keyRegex(keys.inputParts),
    outputParts: keyRegex(keys.outputParts),
    inputExcludesCache: keys.inputExcludesCache ?? false,
    // The keys by name (a literal alternation is several times faster than any-key matching on a busy stream).
    ...(keys.inputNotAfter ? {} : { all: { re: new RegExp(`"(${[...kinds.keys(), ...Object.keys(keys.sides ?? {}), ...(keys.reported ?? []), ...(keys.sides ? MODALITY : [])].join('|')})"\\s*:\\s*(\\d{1,12}|[[{]|"[^"\\\\]{0,64}")`, 'g'), kinds } }),
    sides: new Map(Object.entries(keys.sides ?? {})),
    known: new Set([...kinds.keys(), ...(keys.known ?? []), ...ECHOED]),
    reported: new Set(keys.reported ?? []),
    ...(keys.end ? { end: keys.end } : {}),
  };
}

/**
 * prompt_tokens includes cached_tokens (and cache writes, where reported); OpenAI's completion_tokens includes
 * reasoning tokens, xAI's does not (its total_tokens does: hence `total`). DeepSeek names its cache hits and
 * misses too; OpenRouter its cache writes. Audio (chat completions, transcriptions) is inside the input or
 * output count, by the details object it is in. The response's `service_tier` says which tier served it.
 */
export const OPENAI_KEYS: UsageKeys = {
  input: ['prompt_tokens', 'input_tokens'],
  output: ['completion_tokens', 'output_tokens'],
  cached: ['cached_tokens', 'prompt_cache_hit_tokens'],
  cacheWrite: ['cache_write_tokens', 'cache_creation_tokens'],
  total: ['total_tokens'],
  audio: ['audio_tokens'],
  sides: {
    prompt_tokens_details: 'input', input_tokens_details: 'input', input_token_details: 'input',
    completion_tokens_details: 'output', output_tokens_details: 'output', output_token_details: 'output',
  },
  // Reasoning and predictions are inside the output count, text and image parts inside theirs, DeepSeek's cache misses
  // inside the input; Perplexity's citation tokens are billed only by Deep Research, which has no price here.
  known: ['reasoning_tokens', 'accepted_prediction_tokens', 'rejected_prediction_tokens', 'text_tokens', 'image_tokens', 'prompt_cache_miss_tokens', 'citation_tokens'],
  reported: ['service_tier'],
  end: OPENAI_STOP,
};
/**
 * `input_tokens` is only what was neither read from nor written to the cache. In a stream,
 * message_start carries the input counts and message_delta the cumulative output (and, lately,
 * the same cumulative input counts again): the last value of each key is its count, never a sum.
 * `cache_creation` splits the writes by how long they are kept: the 1-hour ones cost more.
 */
export const ANTHROPIC_KEYS: UsageKeys = {
  input: ['input_tokens'],
  output: ['output_tokens'],
  cached: ['cache_read_input_tokens'],
  cacheWrite: ['cache_creation_input_tokens'],
  cacheWrite1h: ['ephemeral_1h_input_tokens'],
  known: ['ephemeral_5m_input_tokens'],
  reported: ['service_tier', 'speed'],
  inputExcludesCache: true,
  end: ANTHROPIC_STOP,
};
/**
 * promptTokenCount includes cachedContentTokenCount; thinking (thoughtsTokenCount) is billed as output but not in
 * candidatesTokenCount. Each `*TokensDetails` list splits a count by modality: its AUDIO `tokenCount` is audio.
 */
export const GEMINI_KEYS: UsageKeys = {
  input: ['promptTokenCount', ...OPENAI_KEYS.input],
  output: ['candidatesTokenCount', ...OPENAI_KEYS.output],
  cached: ['cachedContentTokenCount', ...OPENAI_KEYS.cached],
  total: ['totalTokenCount', ...OPENAI_KEYS.total!],
  inputParts: ['toolUsePromptTokenCount'],
  outputParts: ['thoughtsTokenCount'],
  audio: [...OPENAI_KEYS.audio!],
  sides: { ...OPENAI_KEYS.sides, promptTokensDetails: 'input', toolUsePromptTokensDetails: 'input', candidatesTokensDetails: 'output', cacheTokensDetails: 'cached' },
  known: OPENAI_KEYS.known,
  end: GEMINI_STOP,
};
export const OPENAI = compile(OPENAI_KEYS);
export const ANTHROPIC = compile(ANTHROPIC_KEYS);
export const GEMINI = compile(GEMINI_KEYS);
/**
 * Bedrock: Converse's camelCase keys, InvokeModel's Anthropic-native ones, and invocationMetrics'
 * counts. Like Anthropic's, every input count there leaves out cache reads and writes.
 */
export const BEDROCK = compile({
  input: ['inputTokens', 'input_tokens', 'inputTokenCount'],
  output: ['outputTokens', 'output_tokens', 'outputTokenCount'],
  cached: ['cacheReadInputTokens', 'cache_read_input_tokens', 'cacheReadInputTokenCount'],
  cacheWrite: ['cacheWriteInputTokens', 'cache_creation_input_tokens', 'cacheWriteInputTokenCount'],
  cacheWrite1h: ['ephemeral_1h_input_tokens'],
  known: ['totalTokens', 'ephemeral_5m_input_tokens'],
  inputExcludesCache: true,
  // Converse's usage ends with `"cacheDetails":[{"inputTokens":1000,"ttl":"1h"},…]`: cache writes by TTL, not the
  // input. An array element (`[{` or `,{` before it) or a key after `"ttl":"…",` is one of those.
  inputNotAfter: '(?<![\\[,]\\s*\\{\\s*|"ttl"\\s*:\\s*"[^"]{0,16}"\\s*,\\s*)',
});
/** Converse's 1-hour cache writes: a `cacheDetails` element `{"inputTokens": n, "ttl": "1h"}` (either order). */
export const BEDROCK_1H = /\{\s*(?:"inputTokens"\s*:\s*(\d{1,12})\s*,\s*"ttl"\s*:\s*"1h"|"ttl"\s*:\s*"1h"\s*,\s*"inputTokens"\s*:\s*(\d{1,12}))\s*\}/g;
/** Every shape's keys whose input count includes the cache (the reader's default). */
export const ANY = compile({
  input: GEMINI_KEYS.input,
  output: GEMINI_KEYS.output,
  cached: GEMINI_KEYS.cached,
  total: GEMINI_KEYS.total,
  known: [...OPENAI_KEYS.known!, ...GEMINI_KEYS.inputParts!, ...GEMINI_KEYS.outputParts!, 'audio_tokens'],
});
