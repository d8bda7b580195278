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
 * OpenAI-compatible endpoint, Gemini's otherwise) and Bedrock's JSON keys
 * (its provider adds the event stream: providers/lib/bedrock-usage.ts). A
 * provider file may instead bring its own reader factory, handed these shapes
 * to build on (USAGE_READERS). Where a total is reported, the output is at
 * least total − input: reasoning reported beside the completion count (xAI) is
 * output too. A streamed shape's counts are `final` once its end of message
 * was read (usage-end.ts); a JSON body's finality is its completeness, which
 * only the upstream leg knows.
 */
import type { TokenUsage, UsageReader, UsageReaders, UsageResponse, UsageShape } from '../../catalog/provider.js';
import type { Provider } from '../../catalog/registry.js';
import { EndOfMessage, probeSpans, stopSignalFor, type StopSignal } from './usage-end.js';
import { ANTHROPIC, ANY, BEDROCK, BEDROCK_1H, GEMINI, OPENAI, UNKNOWN_KEY, type CompiledKeys, type Kind, type Side } from './usage-keys.js';

/** Enough of the previous chunk to complete a key and number cut at the edge. */
const OVERLAP = 128;

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
  private written1h?: number;
  private total?: number;
  /** Audio counts by side (the details object or list they were in), and the side and modality being read. */
  private audioIn?: number;
  private audioOut?: number;
  private audioCached?: number;
  private side: Side | undefined;
  private modality: string | undefined;
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
    const c = this.counts;
    c.inputTokens = input;
    c.outputTokens = Math.max(this.output + this.outputPart, this.total !== undefined ? this.total - input : 0);
    if (this.cached !== undefined) c.cachedInputTokens = this.cached;
    if (this.written !== undefined) c.cacheWriteInputTokens = this.written;
    // Parts reported only when some (counts only grow): most responses have neither 1-hour writes nor audio.
    if (this.written1h) c.cacheWrite1hInputTokens = this.written1h;
    if (this.audioIn) c.audioInputTokens = this.audioIn;
    if (this.audioOut) c.audioOutputTokens = this.audioOut;
    if (this.audioCached) c.cachedAudioInputTokens = this.audioCached;
  }

  /**
   * One pass over the shape's keys: the last value of each kind of count, the side a details object or list puts its
   * audio on, the tiers the response reports (the shared regex is reset first; nothing runs between its calls); then
   * the token counts it does not know. Returns the end of the last count read (-1: none).
   */
  private matchAll(text: string, seen: number, re: RegExp, kinds: ReadonlyMap<string, Kind>): number {
    this.matchUnknown(text, seen);
    re.lastIndex = 0;
    let countsEnd = -1;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      // A match that ends inside the tail was taken with the previous chunk, where what preceded it could be seen.
      if (m.index + m[0].length <= seen) continue;
      const key = m[1]!;
      const raw = m[2]!;
      const first = raw.charCodeAt(0);
      if (first === 0x7b || first === 0x5b) { // `{` or `[`: a details object or list says whose its counts are
        const side = this.shape.sides.get(key);
        if (side !== undefined) this.side = side;
        continue;
      }
      if (first === 0x22) { // a string: a reported tier, or a details list element's modality
        if (key === 'modality') this.modality = raw.slice(1, -1);
        else if (this.shape.reported.has(key)) (this.counts.reported ??= {})[key] = raw.slice(1, -1);
        continue;
      }
      const value = Number(raw);
      const kind = kinds.get(key);
      if (kind === undefined) {
        if (key === 'tokenCount' && this.modality === 'AUDIO') this.audio(value);
        continue;
      }
      countsEnd = m.index + m[0].length;
      switch (kind) {
        case 0: this.input = value; break;
        case 1: this.inputPart = value; break;
        case 2: this.output = value; break;
        case 3: this.outputPart = value; break;
        case 4: this.cached = value; break;
        case 5: this.written = value; break;
        case 6: this.total = value; break;
        case 7: this.written1h = value; break;
        case 8: this.audio(value); break;
      }
    }
    return countsEnd;
  }

  /** Audio tokens, on the side of the details they are in (none known: input, the dearer side is the reader's to price). */
  private audio(value: number): void {
    if (this.side === 'output') this.audioOut = value;
    else if (this.side === 'cached') this.audioCached = value;
    else this.audioIn = value;
  }

  private unknown(key: string): void {
    const fields = (this.counts.unknownFields ??= []);
    if (!fields.includes(key) && fields.length < 8) fields.push(key);
  }

  /** One regex per kind (a shape whose input keys have a lookbehind of their own: Bedrock's JSON, which never streams SSE). */
  private matchEach(text: string, seen: number): number {
    const last = (re: RegExp | undefined): number | undefined => {
      if (!re) return undefined;
      let found: string | undefined;
      // A match that ends inside the tail was taken with the previous chunk, where what preceded it could be seen.
      for (const m of text.matchAll(re)) if (m.index + m[0].length > seen) found = m[1] ?? m[2];
      return found === undefined ? undefined : Number(found);
    };
    this.input = last(this.shape.input) ?? this.input;
    this.inputPart = last(this.shape.inputParts) ?? this.inputPart;
    this.output = last(this.shape.output) ?? this.output;
    this.outputPart = last(this.shape.outputParts) ?? this.outputPart;
    this.cached = last(this.shape.cached) ?? this.cached;
    this.written = last(this.shape.cacheWrite) ?? this.written;
    this.total = last(this.shape.total) ?? this.total;
    // Anthropic-native 1-hour writes, or Converse's `cacheDetails` element with `"ttl": "1h"`.
    this.written1h = last(this.shape.cacheWrite1h) ?? last(BEDROCK_1H) ?? this.written1h;
    this.matchUnknown(text, seen);
    return -1;
  }

  /**
   * Token counts the shape does not know. Only text with a count key's closing quote is searched: a stream's content
   * escapes its quotes (`tokens\\"`), so most chunks are spared the search.
   */
  private matchUnknown(text: string, seen: number): void {
    if (!text.includes('okens"') && !text.includes('okenCount"')) return;
    // exec on the one shared regex, reset first (nothing runs between its calls): matchAll would copy the regex each time.
    UNKNOWN_KEY.lastIndex = 0;
    for (let m = UNKNOWN_KEY.exec(text); m !== null; m = UNKNOWN_KEY.exec(text)) {
      if (m.index + m[0].length > seen && !this.shape.known.has(m[1]!)) this.unknown(m[1]!);
    }
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

/** A reader of one response, as the upstream leg asks for it. */
export type ResponseUsage = (response: UsageResponse) => UsageReader;

export const BUILT_IN_READERS: Readonly<Record<UsageShape, ResponseUsage>> = Object.freeze({
  openai: (response) => scanner(OPENAI, response),
  anthropic: (response) => scanner(ANTHROPIC, response),
  gemini: (response) => scanner(GEMINI, response),
  vertex: (response) => scanner(vertexShape(response.path), response),
  // Bedrock's JSON keys; its provider's own reader (providers/lib/bedrock-usage.ts) adds the headers and the event stream.
  bedrock: (response) => scanner(BEDROCK, response),
});

/** What a provider's own reader factory is handed (UsageReaders): the built-in shapes, one object for every response. */
export const USAGE_READERS: UsageReaders = Object.freeze({
  shape: (shape: UsageShape, response: UsageResponse): UsageReader => {
    const make = Object.hasOwn(BUILT_IN_READERS, shape) ? BUILT_IN_READERS[shape] : undefined;
    if (!make) throw new TypeError(`no built-in usage shape ${JSON.stringify(shape)}`);
    return make(response);
  },
});

/** The reader a provider declares, per response: its own factory (handed the built-in shapes), or the built-in shape it names. */
export function usageReaderFactory(provider: Provider): ResponseUsage {
  const own = provider.usage;
  return typeof own === 'function' ? (response) => own(response, USAGE_READERS) : BUILT_IN_READERS[own];
}

/** Where a usage reader's throw is reported (the upstream leg's attempt, flight.ts): no closure per response. */
export interface UsageFailures {
  usageFailed(err: unknown): void;
}

/** A provider file's own reader, guarded: a throw disables it (reported once to `failures`) and never reaches the relay. */
export function guardedReader(reader: UsageReader, failures: UsageFailures): UsageReader {
  let failed = false;
  return {
    scan(chunk) {
      if (failed) return;
      try {
        reader.scan(chunk);
      } catch (err) {
        failed = true;
        failures.usageFailed(err);
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
export function applyUsage(usage: TokenUsage, reader: UsageReader, failures: UsageFailures): boolean {
  let counts: TokenUsage | undefined;
  try {
    counts = reader.end();
  } catch (err) {
    failures.usageFailed(err);
    return false;
  }
  if (!counts) return false;
  usage.inputTokens = count(counts.inputTokens) ?? usage.inputTokens;
  usage.outputTokens = count(counts.outputTokens) ?? usage.outputTokens;
  for (const field of ['cachedInputTokens', 'cacheWriteInputTokens', 'cacheWrite1hInputTokens', 'audioInputTokens', 'cachedAudioInputTokens', 'audioOutputTokens'] as const) {
    const n = count(counts[field]);
    if (n !== undefined) usage[field] = n;
  }
  // What the response said served it, and the counts the reader did not know: short ASCII names and values only.
  const word = (v: unknown): v is string => typeof v === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(v);
  if (counts.reported && typeof counts.reported === 'object') {
    const reported = Object.entries(counts.reported).filter(([k, v]) => word(k) && word(v)).slice(0, 8);
    if (reported.length > 0) usage.reported = Object.fromEntries(reported);
  }
  if (Array.isArray(counts.unknownFields)) {
    const unknown = counts.unknownFields.filter(word).slice(0, 8);
    if (unknown.length > 0) usage.unknownFields = unknown;
  }
  return counts.final === true;
}
