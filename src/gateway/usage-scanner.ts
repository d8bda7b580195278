/**
 * The built-in usage readers (a provider's `usage: 'openai' | 'anthropic' |
 * 'gemini' | 'bedrock' | 'vertex'`): each reads token counts from the response
 * as the bytes pass, without parsing the body, by the keys its shape uses, and
 * reports them as TokenUsage defines them: `inputTokens` is every input token,
 * cache reads and writes included. OpenAI (`prompt_tokens`/`completion_tokens`,
 * the Responses API's `input_tokens`/`output_tokens`; cached: `cached_tokens`,
 * already inside the input count), Anthropic (`input_tokens` leaves out
 * `cache_read_input_tokens` and `cache_creation_input_tokens`, so they are
 * added; message_start and message_delta both carry cumulative counts, so the
 * last value of each key is taken, never a sum), Gemini
 * (`promptTokenCount` with `cachedContentTokenCount` inside it,
 * `candidatesTokenCount` plus `thoughtsTokenCount`, cumulative per chunk; plus
 * the OpenAI keys of its OpenAI-compatible surface) and Vertex (by path:
 * Anthropic's shape on a `publishers/anthropic` model, OpenAI's on the
 * OpenAI-compatible endpoint, Gemini's otherwise). A provider file may instead
 * bring its own reader factory. Where a total is reported, the output is at
 * least total − input: reasoning reported beside the completion count (xAI) is
 * output too. A streamed shape's counts are `final` once its end of message
 * was read (usage-end.ts); a JSON body's finality is its completeness, which
 * only the upstream leg knows.
 */
import type { TokenUsage, UsageReader, UsageReaderFactory, UsageResponse, UsageShape } from '../catalog/provider.js';
import type { Provider } from '../catalog/registry.js';
import { bedrockUsageReader } from './bedrock-usage.js';
import { ANTHROPIC_STOP, EndOfMessage, GEMINI_STOP, OPENAI_STOP, probeSpans, stopSignalFor, type StopSignal } from './usage-end.js';

/** Enough of the previous chunk to complete a key and number cut at the edge. */
const OVERLAP = 128;

/**
 * A shape's keys. `inputParts`/`outputParts` are counts reported beside the main one that
 * belong to it (Gemini's tool-use prompt and thinking tokens); `inputExcludesCache`: the main
 * input count leaves out cache reads and writes (Anthropic, Bedrock), so they are added to it.
 * `total`: a response's total; the output is never taken below total − input, since some
 * providers report reasoning beside the completion count instead of inside it (xAI's chat
 * completions, Gemini's OpenAI-compatible surface) and it is billed as output all the same.
 */
interface UsageKeys {
  input: readonly string[];
  output: readonly string[];
  cached: readonly string[];
  cacheWrite?: readonly string[];
  total?: readonly string[];
  inputParts?: readonly string[];
  outputParts?: readonly string[];
  inputExcludesCache?: boolean;
  /** A lookbehind the input keys must not follow (Bedrock's per-TTL cacheDetails entries reuse `inputTokens`). */
  inputNotAfter?: string;
  /** How a streamed response of this shape says its message ended. */
  end?: StopSignal;
}

const keyRegex = (keys: readonly string[] | undefined, notAfter = ''): RegExp | undefined =>
  keys && keys.length > 0 ? new RegExp(`${notAfter}"(?:${keys.join('|')})"\\s*:\\s*(\\d{1,12})`, 'g') : undefined;

/** A shape's keys as regexes (global: matchAll works on a copy, so one compiled set serves every response). */
interface CompiledKeys {
  input: RegExp;
  output: RegExp;
  cached: RegExp;
  cacheWrite?: RegExp;
  total?: RegExp;
  inputParts?: RegExp;
  outputParts?: RegExp;
  inputExcludesCache: boolean;
  /**
   * Every key in one regex, with the kind each key name counts as: one pass over the text instead of one per
   * kind. Absent when a kind has a lookbehind of its own (Bedrock's): then each kind's regex runs.
   */
  all?: { re: RegExp; kinds: ReadonlyMap<string, Kind> };
  end?: StopSignal;
}

/** The kinds of count, in the order `UsageScanner.match` keeps their last values. */
type Kind = 0 | 1 | 2 | 3 | 4 | 5 | 6;
const KINDS = ['input', 'inputParts', 'output', 'outputParts', 'cached', 'cacheWrite', 'total'] as const;

function compile(keys: UsageKeys): CompiledKeys {
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
    total: keyRegex(keys.total),
    inputParts: keyRegex(keys.inputParts),
    outputParts: keyRegex(keys.outputParts),
    inputExcludesCache: keys.inputExcludesCache ?? false,
    ...(keys.inputNotAfter ? {} : { all: { re: new RegExp(`"(${[...kinds.keys()].join('|')})"\\s*:\\s*(\\d{1,12})`, 'g'), kinds } }),
    ...(keys.end ? { end: keys.end } : {}),
  };
}

/**
 * prompt_tokens includes cached_tokens; OpenAI's completion_tokens includes reasoning tokens, xAI's does not
 * (its total_tokens does: hence `total`). DeepSeek names its cache hits too.
 */
const OPENAI_KEYS: UsageKeys = {
  input: ['prompt_tokens', 'input_tokens'],
  output: ['completion_tokens', 'output_tokens'],
  cached: ['cached_tokens', 'prompt_cache_hit_tokens'],
  total: ['total_tokens'],
  end: OPENAI_STOP,
};
/**
 * `input_tokens` is only what was neither read from nor written to the cache. In a stream,
 * message_start carries the input counts and message_delta the cumulative output (and, lately,
 * the same cumulative input counts again): the last value of each key is its count, never a sum.
 */
const ANTHROPIC_KEYS: UsageKeys = {
  input: ['input_tokens'],
  output: ['output_tokens'],
  cached: ['cache_read_input_tokens'],
  cacheWrite: ['cache_creation_input_tokens'],
  inputExcludesCache: true,
  end: ANTHROPIC_STOP,
};
/** promptTokenCount includes cachedContentTokenCount; thinking (thoughtsTokenCount) is billed as output but not in candidatesTokenCount. */
const GEMINI_KEYS: UsageKeys = {
  input: ['promptTokenCount', ...OPENAI_KEYS.input],
  output: ['candidatesTokenCount', ...OPENAI_KEYS.output],
  cached: ['cachedContentTokenCount', ...OPENAI_KEYS.cached],
  total: ['totalTokenCount', ...OPENAI_KEYS.total!],
  inputParts: ['toolUsePromptTokenCount'],
  outputParts: ['thoughtsTokenCount'],
  end: GEMINI_STOP,
};
const OPENAI = compile(OPENAI_KEYS);
const ANTHROPIC = compile(ANTHROPIC_KEYS);
const GEMINI = compile(GEMINI_KEYS);
/**
 * Bedrock: Converse's camelCase keys, InvokeModel's Anthropic-native ones, and invocationMetrics'
 * counts. Like Anthropic's, every input count there leaves out cache reads and writes.
 */
const BEDROCK = compile({
  input: ['inputTokens', 'input_tokens', 'inputTokenCount'],
  output: ['outputTokens', 'output_tokens', 'outputTokenCount'],
  cached: ['cacheReadInputTokens', 'cache_read_input_tokens', 'cacheReadInputTokenCount'],
  cacheWrite: ['cacheWriteInputTokens', 'cache_creation_input_tokens', 'cacheWriteInputTokenCount'],
  inputExcludesCache: true,
  // Converse's usage ends with `"cacheDetails":[{"inputTokens":1000,"ttl":"1h"},…]`: cache writes by TTL, not the
  // input. An array element (`[{` or `,{` before it) or a key after `"ttl":"…",` is one of those.
  inputNotAfter: '(?<![\\[,]\\s*\\{\\s*|"ttl"\\s*:\\s*"[^"]{0,16}"\\s*,\\s*)',
});
/** Every shape's keys whose input count includes the cache (the reader's default). */
const ANY = compile({
  input: GEMINI_KEYS.input,
  output: GEMINI_KEYS.output,
  cached: GEMINI_KEYS.cached,
  total: GEMINI_KEYS.total,
});

export type TokenCounts = TokenUsage;

const PROBE = Buffer.from('oken', 'latin1');

/** The usage reading of one response, without stream machinery (the upstream leg's relay calls it per chunk). */
export class UsageScanner implements UsageReader {
  /** The last OVERLAP bytes seen (a copy: a reference would keep the whole chunk alive), made on the first chunk. */
  private tail: Buffer | undefined;
  private tailLength = 0;
  /** The tail holds the probe: the next chunk may complete a number cut at the edge. */
  private tailHasKey = false;
  /** The last value of each kind of count, as reported; `counts` is derived from them. */
  private input = 0;
  private inputPart = 0;
  private output = 0;
  private outputPart = 0;
  private cached?: number;
  private written?: number;
  private total?: number;
  /** The message's end, for a shape that streams. */
  private readonly ending: EndOfMessage | undefined;

  /**
   * `counts` is updated in place as the bytes pass; `shape`: the keys, compiled once per shape (never per response);
   * `end`: how this response says its message ended, when that is looked for (a stream settled against a
   * reservation; a JSON body's finality is its completeness, which the upstream leg knows).
   */
  constructor(private readonly counts: TokenUsage = { inputTokens: 0, outputTokens: 0 }, private readonly shape: CompiledKeys = ANY, end?: StopSignal) {
    this.ending = end ? new EndOfMessage(end) : undefined;
  }

  scan(chunk: Buffer): void {
    // Every key holds "oken" (…_tokens, …TokenCount). Most chunks of a stream hold none, and the
    // probe on the bytes (including the seam with the previous chunk) spares them a string. No
    // allocation on a chunk without the probe: this runs on every event of every stream.
    const tail = this.tail;
    const probed = chunk.indexOf(PROBE) !== -1 || (tail !== undefined && (this.tailHasKey || probeSpans(PROBE, tail, this.tailLength, chunk)));
    // A chunk that may hold the stop marker is read even without a count (OpenAI's finish_reason chunk has none).
    const stopping = this.ending !== undefined && this.ending.pass(chunk, tail, this.tailLength);
    if (probed || stopping) {
      // latin1: one char per byte, no decoding cost for split UTF-8; the keys are ASCII.
      this.match((tail ? tail.toString('latin1', 0, this.tailLength) : '') + chunk.toString('latin1'), tail ? this.tailLength : 0);
    }
    this.keepTail(chunk, probed);
  }

  /**
   * `probed`: the probe was in the old tail, the chunk or across their seam. When it was in none of them, the
   * new tail (bytes of those) cannot hold it, and is not searched.
   */
  private keepTail(chunk: Buffer, probed: boolean): void {
    // From Node's pool (no ArrayBuffer of its own per response), zeroed: see below.
    const tail = (this.tail ??= Buffer.allocUnsafe(OVERLAP).fill(0));
    if (chunk.length >= OVERLAP) {
      chunk.copy(tail, 0, chunk.length - OVERLAP);
      this.tailLength = OVERLAP;
    } else {
      const keep = Math.min(this.tailLength, OVERLAP - chunk.length);
      tail.copyWithin(0, this.tailLength - keep, this.tailLength);
      chunk.copy(tail, keep);
      this.tailLength = keep + chunk.length;
    }
    // Past tailLength the buffer is still zeros (it is short only until OVERLAP bytes have passed).
    this.tailHasKey = probed && tail.indexOf(PROBE) !== -1;
  }

  end(): TokenUsage {
    if (this.ending?.final) this.counts.final = true;
    return this.counts;
  }

  /** `seen`: the length of the tail, already read with the previous chunk (and more before it as context). */
  private match(text: string, seen: number): void {
    const all = this.shape.all;
    const countsEnd = all ? this.matchAll(text, seen, all.re, all.kinds) : this.matchEach(text, seen);
    this.ending?.read(text, seen, countsEnd);
    const cache = this.shape.inputExcludesCache ? (this.cached ?? 0) + (this.written ?? 0) : 0;
    const input = this.input + this.inputPart + cache;
    this.counts.inputTokens = input;
    this.counts.outputTokens = Math.max(this.output + this.outputPart, this.total !== undefined ? this.total - input : 0);
    if (this.cached !== undefined) this.counts.cachedInputTokens = this.cached;
    if (this.written !== undefined) this.counts.cacheWriteInputTokens = this.written;
  }

  /**
   * One pass: the last value of each kind (the shared regex is reset first; nothing runs between its calls).
   * Returns the end of the last count read (-1: none).
   */
  private matchAll(text: string, seen: number, re: RegExp, kinds: ReadonlyMap<string, Kind>): number {
    re.lastIndex = 0;
    let countsEnd = -1;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      // A match that ends inside the tail was taken with the previous chunk, where what preceded it could be seen.
      if (m.index + m[0].length <= seen) continue;
      countsEnd = m.index + m[0].length;
      const value = Number(m[2]);
      switch (kinds.get(m[1]!)) {
        case 0: this.input = value; break;
        case 1: this.inputPart = value; break;
        case 2: this.output = value; break;
        case 3: this.outputPart = value; break;
        case 4: this.cached = value; break;
        case 5: this.written = value; break;
        case 6: this.total = value; break;
      }
    }
    return countsEnd;
  }

  /** One regex per kind (a shape whose input keys have a lookbehind of their own: Bedrock's JSON, which never streams SSE). */
  private matchEach(text: string, seen: number): number {
    const last = (re: RegExp | undefined): number | undefined => {
      if (!re) return undefined;
      let found: string | undefined;
      // A match that ends inside the tail was taken with the previous chunk, where what preceded it could be seen.
      for (const m of text.matchAll(re)) if (m.index + m[0].length > seen) found = m[1];
      return found === undefined ? undefined : Number(found);
    };
    this.input = last(this.shape.input) ?? this.input;
    this.inputPart = last(this.shape.inputParts) ?? this.inputPart;
    this.output = last(this.shape.output) ?? this.output;
    this.outputPart = last(this.shape.outputParts) ?? this.outputPart;
    this.cached = last(this.shape.cached) ?? this.cached;
    this.written = last(this.shape.cacheWrite) ?? this.written;
    this.total = last(this.shape.total) ?? this.total;
    return -1;
  }
}

/** Vertex serves several publishers' shapes: the path says which one answers. */
function vertexShape(path: string): CompiledKeys {
  if (path.includes('/publishers/anthropic/')) return ANTHROPIC;
  if (path.includes('/endpoints/openapi/')) return OPENAI;
  return GEMINI;
}

/** How a response's end of message is told, when it is looked for: a stream (or not known to be one body) settled against a reservation. */
const endOf = (shape: CompiledKeys, response: UsageResponse): StopSignal | undefined =>
  shape.end && response.eventStream !== false && response.settles !== false ? stopSignalFor(shape.end, response.path) : undefined;

const scanner = (shape: CompiledKeys, response: UsageResponse): UsageScanner => new UsageScanner({ inputTokens: 0, outputTokens: 0 }, shape, endOf(shape, response));

export const BUILT_IN_READERS: Readonly<Record<UsageShape, UsageReaderFactory>> = Object.freeze({
  openai: (response) => scanner(OPENAI, response),
  anthropic: (response) => scanner(ANTHROPIC, response),
  gemini: (response) => scanner(GEMINI, response),
  vertex: (response) => scanner(vertexShape(response.path), response),
  // Its own module: JSON keys plus AWS's binary event stream.
  bedrock: (response) => bedrockUsageReader(response, (counts) => new UsageScanner(counts, BEDROCK)),
});

/** The reader factory a provider declares: its own, or the built-in one it names. */
export function usageReaderFactory(provider: Provider): UsageReaderFactory {
  return typeof provider.usage === 'function' ? provider.usage : BUILT_IN_READERS[provider.usage];
}

/** A provider file's own reader, guarded: a throw disables it (reported once through `onFail`) and never reaches the relay. */
export function guardedReader(reader: UsageReader, onFail: (err: unknown) => void): UsageReader {
  let failed = false;
  return {
    scan(chunk) {
      if (failed) return;
      try {
        reader.scan(chunk);
      } catch (err) {
        failed = true;
        onFail(err);
      }
    },
    end() {
      return failed ? undefined : reader.end();
    },
  };
}

const count = (n: unknown): number | undefined => (typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined);

/**
 * Ends `reader` and copies its counts into `usage`; anything that is not a count is ignored, a throw reported.
 * Returns whether the reader saw the provider's end-of-message signal (`final`).
 */
export function applyUsage(usage: TokenUsage, reader: UsageReader, onFail: (err: unknown) => void): boolean {
  let counts: TokenUsage | undefined;
  try {
    counts = reader.end();
  } catch (err) {
    onFail(err);
    return false;
  }
  if (!counts) return false;
  usage.inputTokens = count(counts.inputTokens) ?? usage.inputTokens;
  usage.outputTokens = count(counts.outputTokens) ?? usage.outputTokens;
  const cached = count(counts.cachedInputTokens);
  if (cached !== undefined) usage.cachedInputTokens = cached;
  const written = count(counts.cacheWriteInputTokens);
  if (written !== undefined) usage.cacheWriteInputTokens = written;
  return counts.final === true;
}
