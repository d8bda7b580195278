/**
 * Reads token counts from the provider's `usage` as the bytes pass, without
 * parsing the body: OpenAI (`prompt_tokens`/`completion_tokens`, and the
 * Responses API's `input_tokens`/`output_tokens`), Anthropic (`input_tokens`
 * in message_start, cumulative `output_tokens` in message_delta) and Gemini
 * (`promptTokenCount`/`candidatesTokenCount`, cumulative per chunk). The last
 * value seen wins, which is each shape's final count. It only reads the bytes.
 */
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
  private tail: Buffer = Buffer.alloc(0);

  constructor(private readonly counts: TokenCounts) {}

  scan(chunk: Buffer): void {
    // Every key holds "oken" (…_tokens, …TokenCount). Most chunks of a stream hold none, and the
    // probe on the bytes (including the seam with the previous chunk) spares them a string.
    const seam = this.tail.length > 0 ? Buffer.concat([this.tail, chunk.subarray(0, OVERLAP)]) : undefined;
    if (chunk.includes('oken') || seam?.includes('oken')) {
      // latin1: one char per byte, no decoding cost for split UTF-8; the keys are ASCII.
      this.match(this.tail.toString('latin1') + chunk.toString('latin1'));
    }
    this.tail = Buffer.from(chunk.length >= OVERLAP ? chunk.subarray(chunk.length - OVERLAP) : Buffer.concat([this.tail, chunk]).subarray(-OVERLAP));
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
