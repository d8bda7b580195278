/**
 * The built-in usage readers (a provider's `usage: 'openai' | 'anthropic' |
 * 'gemini'`): each reads token counts from the response as the bytes pass,
 * without parsing the body, by the keys its shape uses. OpenAI
 * (`prompt_tokens`/`completion_tokens`, and the Responses API's
 * `input_tokens`/`output_tokens`; cached: `cached_tokens`), Anthropic
 * (`input_tokens` in message_start, cumulative `output_tokens` in
 * message_delta; cached: `cache_read_input_tokens`) and Gemini
 * (`promptTokenCount`/`candidatesTokenCount`, cumulative per chunk; cached:
 * `cachedContentTokenCount`; plus the OpenAI keys of its OpenAI-compatible
 * surface). The last value seen wins, which is each shape's final count. A
 * provider file may instead bring its own reader factory.
 */
import type { TokenUsage, UsageReader, UsageReaderFactory, UsageShape } from '../catalog/provider.js';
import type { Provider } from '../catalog/registry.js';
import { bedrockUsageReader } from './bedrock-usage.js';

/** Enough of the previous chunk to complete a key and number cut at the edge. */
const OVERLAP = 48;

interface UsageKeys {
  input: readonly string[];
  output: readonly string[];
  cached: readonly string[];
}

const keyRegex = (keys: readonly string[]): RegExp => new RegExp(`"(?:${keys.join('|')})"\\s*:\\s*(\\d{1,12})`, 'g');

/** A shape's keys as regexes (global: matchAll works on a copy, so one compiled set serves every response). */
interface CompiledKeys {
  input: RegExp;
  output: RegExp;
  cached: RegExp;
}

const compile = (keys: UsageKeys): CompiledKeys => ({ input: keyRegex(keys.input), output: keyRegex(keys.output), cached: keyRegex(keys.cached) });

const OPENAI_KEYS: UsageKeys = { input: ['prompt_tokens', 'input_tokens'], output: ['completion_tokens', 'output_tokens'], cached: ['cached_tokens'] };
const ANTHROPIC_KEYS: UsageKeys = { input: ['input_tokens'], output: ['output_tokens'], cached: ['cache_read_input_tokens'] };
const GEMINI_KEYS: UsageKeys = {
  input: ['promptTokenCount', ...OPENAI_KEYS.input],
  output: ['candidatesTokenCount', ...OPENAI_KEYS.output],
  cached: ['cachedContentTokenCount', ...OPENAI_KEYS.cached],
};
const OPENAI = compile(OPENAI_KEYS);
const ANTHROPIC = compile(ANTHROPIC_KEYS);
const GEMINI = compile(GEMINI_KEYS);
/** Bedrock: Converse's camelCase keys, InvokeModel's Anthropic-native ones, and invocationMetrics' counts. */
const BEDROCK = compile({
  input: ['inputTokens', 'input_tokens', 'inputTokenCount'],
  output: ['outputTokens', 'output_tokens', 'outputTokenCount'],
  cached: ['cacheReadInputTokens', 'cache_read_input_tokens'],
});
/** Every shape's keys (the reader's default). */
const ANY = compile({
  input: [...new Set([...GEMINI_KEYS.input, ...ANTHROPIC_KEYS.input])],
  output: [...new Set([...GEMINI_KEYS.output, ...ANTHROPIC_KEYS.output])],
  cached: [...new Set([...GEMINI_KEYS.cached, ...ANTHROPIC_KEYS.cached])],
});

export type TokenCounts = TokenUsage;

const PROBE = Buffer.from('oken', 'latin1');

/** Whether the probe starts in the last 1–3 bytes of the tail and ends in the chunk. */
function probeSpans(tail: Buffer, tailLength: number, chunk: Buffer): boolean {
  for (let inTail = 1; inTail < PROBE.length; inTail++) {
    if (tailLength < inTail || chunk.length < PROBE.length - inTail) continue;
    let ok = true;
    for (let i = 0; i < PROBE.length && ok; i++) {
      ok = (i < inTail ? tail[tailLength - inTail + i] : chunk[i - inTail]) === PROBE[i];
    }
    if (ok) return true;
  }
  return false;
}

/** The usage reading of one response, without stream machinery (the upstream leg's relay calls it per chunk). */
export class UsageScanner implements UsageReader {
  /** The last OVERLAP bytes seen (a copy: a reference would keep the whole chunk alive), made on the first chunk. */
  private tail: Buffer | undefined;
  private tailLength = 0;
  /** The tail holds the probe: the next chunk may complete a number cut at the edge. */
  private tailHasKey = false;

  /** `counts` is updated in place as the bytes pass; `shape`: the keys, compiled once per shape (never per response). */
  constructor(private readonly counts: TokenUsage = { inputTokens: 0, outputTokens: 0 }, private readonly shape: CompiledKeys = ANY) {}

  scan(chunk: Buffer): void {
    // Every key holds "oken" (…_tokens, …TokenCount). Most chunks of a stream hold none, and the
    // probe on the bytes (including the seam with the previous chunk) spares them a string. No
    // allocation on a chunk without the probe: this runs on every event of every stream.
    const tail = this.tail;
    if (chunk.indexOf(PROBE) !== -1 || (tail !== undefined && (this.tailHasKey || probeSpans(tail, this.tailLength, chunk)))) {
      // latin1: one char per byte, no decoding cost for split UTF-8; the keys are ASCII.
      this.match((tail ? tail.toString('latin1', 0, this.tailLength) : '') + chunk.toString('latin1'));
    }
    this.keepTail(chunk);
  }

  private keepTail(chunk: Buffer): void {
    const tail = (this.tail ??= Buffer.alloc(OVERLAP));
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
    this.tailHasKey = tail.indexOf(PROBE) !== -1;
  }

  end(): TokenUsage {
    return this.counts;
  }

  private match(text: string): void {
    const last = (re: RegExp): string | undefined => {
      let found: string | undefined;
      for (const m of text.matchAll(re)) found = m[1];
      return found;
    };
    const input = last(this.shape.input);
    if (input !== undefined) this.counts.inputTokens = Number(input);
    const output = last(this.shape.output);
    if (output !== undefined) this.counts.outputTokens = Number(output);
    const cached = last(this.shape.cached);
    if (cached !== undefined) this.counts.cachedInputTokens = Number(cached);
  }
}

const builtIn = (shape: CompiledKeys): UsageReaderFactory => () => new UsageScanner({ inputTokens: 0, outputTokens: 0 }, shape);

export const BUILT_IN_READERS: Readonly<Record<UsageShape, UsageReaderFactory>> = Object.freeze({
  openai: builtIn(OPENAI),
  anthropic: builtIn(ANTHROPIC),
  gemini: builtIn(GEMINI),
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

/** Ends `reader` and copies its counts into `usage`; anything that is not a count is ignored, a throw reported. */
export function applyUsage(usage: TokenUsage, reader: UsageReader, onFail: (err: unknown) => void): void {
  let counts: TokenUsage | undefined;
  try {
    counts = reader.end();
  } catch (err) {
    onFail(err);
    return;
  }
  if (!counts) return;
  usage.inputTokens = count(counts.inputTokens) ?? usage.inputTokens;
  usage.outputTokens = count(counts.outputTokens) ?? usage.outputTokens;
  const cached = count(counts.cachedInputTokens);
  if (cached !== undefined) usage.cachedInputTokens = cached;
}
