/**
 * A request's worst case for a spend budget: how many input tokens it can be
 * billed at most, and how many output tokens, read from its JSON body by the
 * body stage's streaming scan (the whole body: its length counts).
 *
 * Input: a token is at least one byte of the JSON body (tokenizers split UTF-8
 * text into pieces of one byte or more; JSON escaping only lengthens it), so
 * the body's length plus INPUT_OVERHEAD_TOKENS (what a provider adds around
 * the messages: chat templates, a tool-use system prompt) is never below the
 * provider's count; it is capped by the model's context window when known. A
 * body carrying media (images, audio, documents: their tokens are not their
 * bytes) or referencing content stored elsewhere (files, earlier responses,
 * cached content, prompt templates) is bounded by the context window alone;
 * without one it cannot be bounded (400 max_tokens_required).
 *
 * Output: the largest output cap the body names (any of OUTPUT_CAP_FIELDS),
 * else the model's largest output, times the number of choices asked for
 * (`n`, `best_of`, `candidateCount`). No cap and no largest output → 400
 * max_tokens_required, unless the model's output is free (embeddings).
 *
 * Provider-side tools (the provider file's `tools`, billed-tools.ts: web
 * search, fetch, code execution, file search) bring back input the body does
 * not show: a request using one is bounded by the context window for input,
 * plus each tool's per-use fee times the most uses the request allows
 * (`feeMicros`); no context window, or a tool whose uses nothing bounds → 400
 * tools_unbounded.
 */
import type { PriceEntry } from './prices.js';
import type { BilledTool } from './price-types.js';
import { Errors } from '../errors.js';
import { toolBound, TOOLS_FIELD, type ToolFacts, type ToolScan } from './billed-tools.js';

/** Tokens a provider may add to a request beyond its body's bytes (chat templates, tool-use system prompts). */
export const INPUT_OVERHEAD_TOKENS = 1024;

/** Output caps, in every provider's spelling (Gemini takes both cases; Bedrock Converse, Titan, legacy Anthropic). */
export const OUTPUT_CAP_FIELDS = [
  'max_tokens', 'max_completion_tokens', 'max_output_tokens', 'max_tokens_to_sample',
  'generationConfig.maxOutputTokens', 'generation_config.max_output_tokens', 'inferenceConfig.maxTokens', 'textGenerationConfig.maxTokenCount',
] as const;

/** How many completions one request asks for. */
export const CHOICE_FIELDS = ['n', 'best_of', 'generationConfig.candidateCount', 'generation_config.candidate_count'] as const;

/** Top-level fields that reference stored content when they hold an object (OpenAI's reusable `prompt`). */
export const REFERENCE_FIELDS = ['prompt'] as const;

/** Keys, at any depth, of media or of content stored elsewhere: the body's bytes do not bound their tokens. */
export const MEDIA_KEYS = [
  'image_url', 'input_audio', 'file_id', 'file_url', 'file_data', 'fileUri', 'file_uri', 'fileData', 'inlineData', 'inline_data',
  'source', 's3Location', 'uri', 'url', 'previous_response_id', 'conversation', 'cachedContent', 'cached_content',
] as const;

/**
 * Keys whose values declare rather than carry content: tool and function definitions and output schemas (a
 * tool with a `url` parameter is not a URL to fetch). MEDIA_KEYS inside them do not make a body unbounded;
 * provider-side tools among them are priced by their own declarations (billed-tools.ts). A provider reads
 * media only where its content goes, so media hidden under one of these keys is not billed as media
 * (`text` is a string wherever content has one; as an object it is the Responses API's output format).
 */
export const DECLARATION_FIELDS = [
  'tools', 'functions', 'tool_choice', 'tool_config', 'toolConfig', 'response_format', 'text', 'responseSchema', 'response_schema', 'responseJsonSchema', 'response_json_schema',
  'input_schema', 'inputSchema', 'parameters', 'json_schema',
] as const;

/** Every body field the bound reads. */
export const BOUND_FIELDS: readonly string[] = ['model', ...OUTPUT_CAP_FIELDS, ...CHOICE_FIELDS, ...REFERENCE_FIELDS];

/** A scanned field's value, as the body scan reports it. */
export type ScannedValue = { readonly kind: string; readonly value?: unknown };

export interface BodyFacts {
  readonly fields: ReadonlyMap<string, ScannedValue>;
  /** The body's length in bytes. */
  readonly bytes: number;
  /** MEDIA_KEYS found anywhere in the body. */
  readonly mediaKeys: ReadonlySet<string>;
  /** The elements of its `tools`, as the scan recorded them. */
  readonly elements?: ToolFacts['elements'];
}

/** The provider's billed tools and the model they are looked up for. */
export interface ToolsOf {
  readonly declared: Readonly<Record<string, BilledTool>> | undefined;
  readonly model: string;
}

export type Bound =
  | {
    readonly inputTokens: number; readonly outputTokens: number; /** µ$ of provider-side tool fees, at most. */ readonly feeMicros: number;
    /** The body carries media or references content (its input may be audio, priced apart: worstCaseCost's `audioInput`). */
    readonly media: boolean;
  }
  | { readonly refusal: string; readonly code: 'max_tokens_required' | 'tools_unbounded' };

/** More choices than this in one request is not a real request; the bound stays finite. */
const MAX_CHOICES = 1024;

/** A count a provider would accept: a whole number ≥ 0, or a string of digits (lenient parsers coerce one). */
function countOf(v: ScannedValue | undefined): number | undefined {
  if (!v) return undefined;
  if (v.kind === 'number' && typeof v.value === 'number' && Number.isFinite(v.value) && v.value >= 0) return Math.ceil(v.value);
  if (v.kind === 'string' && typeof v.value === 'string' && /^\d{1,15}$/.test(v.value)) return Number(v.value);
  return undefined;
}

export function requestBound(price: PriceEntry, body: BodyFacts, tools?: ToolsOf): Bound {
  let input: number;
  const used = toolBound(tools?.declared, tools?.model ?? '', body);
  if ('unbounded' in used) return { code: 'tools_unbounded', refusal: `${used.unbounded} A spend budget cannot bound what this request's provider-side tools cost.` };
  const referenced = body.mediaKeys.size > 0 || REFERENCE_FIELDS.some((f) => body.fields.get(f)?.kind === 'object');
  if (used.used) {
    if (price.contextWindow === undefined) {
      return { code: 'tools_unbounded', refusal: 'This request uses provider-side tools (search, fetch, code execution…), whose results are billed as input its body does not show, and the model has no known context window; a spend budget cannot bound its cost.' };
    }
    input = price.contextWindow;
  } else if (referenced) {
    if (price.contextWindow === undefined) {
      return { code: 'max_tokens_required', refusal: 'This request carries media or references stored content (an image, audio, a file, an earlier response…), whose tokens its bytes do not bound, and the model has no known context window; a spend budget cannot bound its cost.' };
    }
    input = price.contextWindow;
  } else {
    input = body.bytes + INPUT_OVERHEAD_TOKENS;
    if (price.contextWindow !== undefined) input = Math.min(input, price.contextWindow);
  }
  const feeMicros = used.used ? used.feeMicros : 0;
  // Tools bring back input the body does not show, media too: either may be audio.
  const media = referenced || used.used;
  if (price.output === 0) return { inputTokens: input, outputTokens: 0, feeMicros, media };
  let cap: number | undefined;
  for (const f of OUTPUT_CAP_FIELDS) {
    const n = countOf(body.fields.get(f));
    if (n !== undefined) cap = Math.max(cap ?? 0, n);
  }
  cap ??= price.maxOutput;
  if (cap === undefined) {
    return { code: 'max_tokens_required', refusal: 'Under a spend budget a request must name its output cap (`max_tokens`, `max_completion_tokens`, `max_output_tokens` or `generationConfig.maxOutputTokens`): this model has no known largest output.' };
  }
  let choices = 1;
  for (const f of CHOICE_FIELDS) choices = Math.max(choices, Math.min(MAX_CHOICES, countOf(body.fields.get(f)) ?? 1));
  return { inputTokens: input, outputTokens: cap * choices, feeMicros, media };
}

/**
 * What a reader of the worst-case bound asks the body scan for (the budget stage and tokens_per_minute alike):
 * the bound's fields, whatever names or bounds a provider-side tool, and the fields that set a price dimension
 * (`priceFields`), read to the end, media keys outside declarations, and the `tools` elements. One declaration,
 * so both readers' scans ask for the same.
 */
export function boundScan(toolScan: ToolScan, priceFields: readonly string[] = []) {
  return {
    fields: [...new Set([...BOUND_FIELDS, ...toolScan.fields, ...priceFields])],
    toEnd: true,
    keys: MEDIA_KEYS,
    keysSkip: DECLARATION_FIELDS,
    elements: { field: TOOLS_FIELD, values: toolScan.elementValues },
  };
}

/** requestBound, its refusal as the API's error (400 tools_unbounded or max_tokens_required). */
export function boundOrRefuse(price: PriceEntry, body: BodyFacts, tools?: ToolsOf): Exclude<Bound, { readonly refusal: string }> {
  const bound = requestBound(price, body, tools);
  if ('refusal' in bound) throw bound.code === 'tools_unbounded' ? Errors.toolsUnbounded(bound.refusal) : Errors.maxTokensRequired(bound.refusal);
  return bound;
}
