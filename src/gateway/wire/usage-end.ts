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
 * text never fakes one. Only event streams settled against a reservation are
 * read for it (a JSON body is final when whole; without a reservation the
 * rule has nothing to decide, and a stream's events pay nothing for it). Chunks are looked at by byte probes (a key, then the
 * bytes that make it a marker, checked in place; across the seam with the
 * previous chunk too): a stream's ordinary events cost an indexOf or two and
 * no string.
 */

/** A byte probe for a stop marker: a key (or prefix), and what must follow it for a marker. */
interface Probe {
  readonly bytes: Buffer;
  /** A JSON string value (never `null`), or one of these words. */
  readonly then: 'string' | readonly Buffer[];
}

/** A shape's stop markers: byte probes (a hit may be a marker) and the regex that confirms one. */
export interface StopSignal {
  readonly probes: readonly Probe[];
  /** Global; matches a whole marker. */
  readonly stop: RegExp;
}

const key = (name: string): Probe => ({ bytes: Buffer.from(`${name}"`, 'latin1'), then: 'string' });
const signal = (probes: readonly Probe[], stop: string): StopSignal => Object.freeze({ probes, stop: new RegExp(stop, 'g') });

/** A string value (never `null`) after a key: `"key":"…"`, with JSON's optional whitespace. */
const STRING_VALUE = '"\\s*:\\s*"';

/** Chat's `finish_reason`; the Responses API's terminal event types (their usage may come kilobytes later, the whole output before it). */
const OPENAI_PROBES: readonly Probe[] = [
  key('finish_reason'),
  { bytes: Buffer.from('"response.', 'latin1'), then: ['completed"', 'incomplete"', 'failed"'].map((w) => Buffer.from(w, 'latin1')) },
];
const OPENAI_STOP_RE = `"finish_reason${STRING_VALUE}|"type"\\s*:\\s*"response\\.(?:completed|incomplete|failed)"`;
export const ANTHROPIC_STOP = signal([key('stop_reason')], `"stop_reason${STRING_VALUE}`);
export const OPENAI_STOP = signal(OPENAI_PROBES, OPENAI_STOP_RE);
/** Gemini's own `finishReason`, and OpenAI's markers on its OpenAI-compatible surface. */
export const GEMINI_STOP = signal([key('finishReason'), ...OPENAI_PROBES], `"finishReason${STRING_VALUE}|${OPENAI_STOP_RE}`);

const CHAT_ONLY = signal([OPENAI_PROBES[0]!], OPENAI_STOP_RE);
const RESPONSES_ONLY = signal([OPENAI_PROBES[1]!], OPENAI_STOP_RE);

/** OpenAI's markers for one path: a chat completion never ends with a Responses event, nor the reverse (a probe less per event). */
export function stopSignalFor(signal: StopSignal, path: string): StopSignal {
  if (signal !== OPENAI_STOP) return signal;
  if (/(?:^|\/)responses$/.test(path)) return RESPONSES_ONLY;
  if (/(?:^|\/)completions$/.test(path)) return CHAT_ONLY;
  return signal;
}

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

const NO = 0, YES = 1, UNDECIDED = 2;
/** How far past a probe a marker can end: its value's colon, quote and JSON whitespace. */
const WATCH = 32;
type Found = typeof NO | typeof YES | typeof UNDECIDED;

const isSpace = (c: number): boolean => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;

/** What follows a probe at `i` of `buf`: a marker, not one, or not known before the chunk ends. */
function follows(probe: Probe, buf: Buffer, i: number): Found {
  if (probe.then === 'string') {
    while (i < buf.length && isSpace(buf[i]!)) i++;
    if (i >= buf.length) return UNDECIDED;
    if (buf[i++] !== 0x3a) return NO;
    while (i < buf.length && isSpace(buf[i]!)) i++;
    if (i >= buf.length) return UNDECIDED;
    return buf[i] === 0x22 ? YES : NO;
  }
  for (const word of probe.then) {
    const n = Math.min(word.length, buf.length - i);
    if (word.compare(buf, i, i + n, 0, n) === 0) return n === word.length ? YES : UNDECIDED;
  }
  return NO;
}

/**
 * The probe's first occurrence in `buf`, told by what follows it. One search per chunk: a second occurrence in the
 * same chunk (several choices, one ended) is not looked for, which can only leave usage not final (charged no less
 * than its reservation), never make it final early.
 */
function probeIn(probe: Probe, buf: Buffer): Found {
  const at = buf.indexOf(probe.bytes);
  return at === -1 ? NO : follows(probe, buf, at + probe.bytes.length);
}

/** A probe begun in the tail and ended in the chunk (its first byte must be among the tail's last ones first). */
function spans(probe: Probe, tail: Buffer, tailLength: number, chunk: Buffer): boolean {
  const first = probe.bytes[0]!;
  for (let i = Math.max(0, tailLength - probe.bytes.length + 1); i < tailLength; i++) {
    if (tail[i] === first) return probeSpans(probe.bytes, tail, tailLength, chunk);
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
  /** Bytes still to read after a probe whose marker the text could not confirm yet (it ended with the chunk). */
  private watch = 0;

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
    let read = this.watch > 0;
    this.watch = Math.max(0, this.watch - chunk.length);
    for (const probe of this.signal.probes) {
      const found = probeIn(probe, chunk);
      const spanning = found === NO && tail !== undefined && spans(probe, tail, tailLength, chunk);
      // A marker whose last bytes may still be coming: the next chunks are read too, until it can be told.
      if (found === UNDECIDED || spanning) this.watch = WATCH;
      if (found !== NO || spanning) read = true;
    }
    return read;
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
