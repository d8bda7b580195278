/**
 * The end of a provider's message, read from a streamed response as the bytes
 * pass (the usage readers' `final`, settlement.ts's one rule). A stream's
 * counts are final only when, in this order: the provider said the message
 * stopped (a stop marker: Anthropic's non-null `stop_reason`, OpenAI's non-null
 * `finish_reason` or a Responses API `response.completed`, `.incomplete` or
 * `.failed`, Gemini's `finishReason`), then reported counts, then closed the
 * server-sent event holding them (its blank line). A stream cut anywhere
 * before that, or counts that came before the stop (Anthropic's
 * `message_start`), are not final: the request is then charged no less than
 * its reservation.
 *
 * A stop marker is JSON-escaped inside generated text (`\"stop_reason\"`), so
 * text never fakes one. Chunks are looked at by byte probes (no string unless
 * a probe hits, across the seam with the previous chunk too): a stream's
 * ordinary events cost a few indexOf calls.
 */

/** A shape's stop markers: byte probes (a hit may be a marker) and the regex that confirms one. */
export interface StopSignal {
  readonly probes: readonly Buffer[];
  /** Global; matches a whole marker. */
  readonly stop: RegExp;
}

const signal = (probes: readonly string[], stop: string): StopSignal => Object.freeze({ probes: probes.map((p) => Buffer.from(p, 'latin1')), stop: new RegExp(stop, 'g') });

/** A string value (never `null`) after a key: `"key":"…"`, with JSON's optional whitespace. */
const STRING_VALUE = '"\\s*:\\s*"';

export const ANTHROPIC_STOP = signal(['stop_reason":"', 'stop_reason": "'], `"stop_reason${STRING_VALUE}`);
const OPENAI_PROBES = ['finish_reason":"', 'finish_reason": "', 'response.completed"', 'response.incomplete"', 'response.failed"'];
const OPENAI_STOP_RE = `"finish_reason${STRING_VALUE}|"type"\\s*:\\s*"response\\.(?:completed|incomplete|failed)"`;
export const OPENAI_STOP = signal(OPENAI_PROBES, OPENAI_STOP_RE);
/** Gemini's own `finishReason`, and OpenAI's markers on its OpenAI-compatible surface. */
export const GEMINI_STOP = signal(['finishReason":"', 'finishReason": "', ...OPENAI_PROBES], `"finishReason${STRING_VALUE}|${OPENAI_STOP_RE}`);

/** Whether `probe` starts in the last bytes of the tail and ends in the chunk. */
export function probeSpans(probe: Buffer, tail: Buffer, tailLength: number, chunk: Buffer): boolean {
  for (let inTail = 1; inTail < probe.length; inTail++) {
    if (tailLength < inTail || chunk.length < probe.length - inTail) continue;
    let ok = true;
    for (let i = 0; i < probe.length && ok; i++) {
      ok = (i < inTail ? tail[tailLength - inTail + i] : chunk[i - inTail]) === probe[i];
    }
    if (ok) return true;
  }
  return false;
}

/** One response's progress towards its end of message. */
export class EndOfMessage {
  private stopped = false;
  /** 0: no counts after a stop yet; 1: some, their event not closed; 2: closed (final). */
  private state: 0 | 1 | 2 = 0;
  /** Line breaks in a row since the pending counts (`\r` skipped): the second closes their event. */
  private breaks = 0;

  constructor(private readonly signal: StopSignal) {}

  get final(): boolean {
    return this.state === 2;
  }

  /**
   * Before the counts are looked for in a chunk: closes a pending event, and says whether the chunk (or the seam
   * before it) may hold a stop marker, so the text must be read even if it holds no count.
   */
  pass(chunk: Buffer, tail: Buffer | undefined, tailLength: number): boolean {
    if (this.state === 1) this.close(chunk, 0);
    if (this.state === 2 || this.stopped) return false;
    for (const probe of this.signal.probes) {
      if (chunk.indexOf(probe) !== -1 || (tail !== undefined && probeSpans(probe, tail, tailLength, chunk))) return true;
    }
    return false;
  }

  /**
   * The text of a chunk (after `seen` characters of the previous one's tail), read for counts: a stop marker in its
   * new part, and `countsEnd` (just past the last count read in the new part, or -1), move the end along.
   */
  read(text: string, seen: number, countsEnd: number): void {
    if (this.state === 2) return;
    let stopEnd = -1;
    if (!this.stopped) {
      const re = this.signal.stop;
      re.lastIndex = 0;
      for (let m = re.exec(text); m !== null; m = re.exec(text)) if (m.index + m[0].length > seen) stopEnd = m.index + m[0].length;
      if (stopEnd === -1) return;
      this.stopped = true;
    }
    // Counts after the stop: pending until their event closes (here, or in a later chunk).
    if (countsEnd > stopEnd) {
      this.state = 1;
      this.breaks = 0;
      this.close(text, countsEnd);
    }
  }

  /** Counts line breaks from `from` until a blank line closes the event. */
  private close(text: Buffer | string, from: number): void {
    const bytes = typeof text !== 'string';
    for (let i = from; i < text.length; i++) {
      const c = bytes ? text[i]! : text.charCodeAt(i);
      if (c === 0x0a) {
        if (++this.breaks === 2) {
          this.state = 2;
          return;
        }
      } else if (c !== 0x0d) this.breaks = 0;
    }
  }
}
