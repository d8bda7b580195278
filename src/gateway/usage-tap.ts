/**
 * Reads token counts from the provider's `usage` as the bytes pass, without
 * parsing the body: OpenAI (`prompt_tokens`/`completion_tokens`, and the
 * Responses API's `input_tokens`/`output_tokens`), Anthropic (`input_tokens`
 * in message_start, cumulative `output_tokens` in message_delta) and Gemini
 * (`promptTokenCount`/`candidatesTokenCount`, cumulative per chunk). The last
 * value seen wins, which is each shape's final count. Chunks pass unchanged.
 */
import { Transform, type TransformCallback } from 'node:stream';

const INPUT = /"(?:prompt_tokens|input_tokens|promptTokenCount)"\s*:\s*(\d{1,12})/g;
const OUTPUT = /"(?:completion_tokens|output_tokens|candidatesTokenCount)"\s*:\s*(\d{1,12})/g;
/** Enough of the previous chunk to complete a key and number cut at the edge. */
const OVERLAP = 48;

export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
}

/** The usage reading of one response, without stream machinery (the upstream leg's relay calls it per chunk). */
export class UsageScanner {
  private tail = '';

  constructor(private readonly counts: TokenCounts) {}

  scan(chunk: Buffer): void {
    // latin1: one char per byte, no decoding cost for split UTF-8; the keys are ASCII.
    const text = this.tail + chunk.toString('latin1');
    if (text.includes('oken')) this.match(text);
    this.tail = text.slice(-OVERLAP);
  }

  private match(text: string): void {
    let last: string | undefined;
    for (const m of text.matchAll(INPUT)) last = m[1];
    if (last !== undefined) this.counts.inputTokens = Number(last);
    last = undefined;
    for (const m of text.matchAll(OUTPUT)) last = m[1];
    if (last !== undefined) this.counts.outputTokens = Number(last);
  }
}

/** UsageScanner as a pass-through Transform. */
export class UsageTap extends Transform {
  private readonly scanner: UsageScanner;

  constructor(counts: TokenCounts) {
    super();
    this.scanner = new UsageScanner(counts);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.scanner.scan(chunk);
    done(null, chunk);
  }
}
