/**
 * The model a response names, for pricing a request whose own model the
 * gateway never read (no stage asked the body stage for it: an unscoped,
 * unbudgeted OpenAI or Anthropic call). OpenAI and Anthropic answers carry a
 * top-level (or message_start's) `"model"`, Gemini's `"modelVersion"`; the
 * first one seen wins. Read from the first bytes only (READ_LIMIT), with a
 * short tail kept across chunk edges: a few string operations per response,
 * nothing held, the bytes never changed. A key inside generated text is
 * JSON-escaped (`\"model\"`) and does not match.
 */
import type { ResponseTap } from '../upstream/relay.js';

/**
 * How far into a response the model is looked for: every shape names it in its first event or object head,
 * after at most what the response echoes of the request (the Responses API's `instructions` come first).
 */
export const READ_LIMIT = 64 * 1024;
/** Enough of the previous chunk to complete a key and a model name cut at the edge. */
const OVERLAP = 320;
const MODEL_KEY = /"(?:model|modelVersion)"\s*:\s*"([A-Za-z0-9._:@\/+-]{1,256})"/;

export class ResponseModelTap implements ResponseTap {
  /** The model the response named, once seen. */
  model: string | undefined = undefined;
  private seen = 0;
  private tail = '';

  scan(chunk: Buffer): void {
    if (this.model !== undefined || this.seen >= READ_LIMIT) return;
    const part = chunk.length > READ_LIMIT - this.seen ? chunk.subarray(0, READ_LIMIT - this.seen) : chunk;
    this.seen += part.length;
    // latin1: one char per byte, no decoding cost for split UTF-8; the key and the names it accepts are ASCII.
    const text = this.tail + part.toString('latin1');
    const m = MODEL_KEY.exec(text);
    if (m) {
      this.model = m[1];
      this.tail = '';
    } else {
      this.tail = this.seen >= READ_LIMIT ? '' : text.slice(-OVERLAP);
    }
  }
}
