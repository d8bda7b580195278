/**
 * A proxied request body that a token's scope reads (its top-level `model`;
 * the output cap for a spend budget), found by a streaming scan rather than by
 * buffering the body.
 *
 * Promises: the bytes read are held only until the wanted fields are found or
 * the top-level object closes (`decided`; with `toEnd`, only when it closes, so
 * the whole body's length and every field are known); all bytes held by all requests stay
 * within the BufferBudget, one token's within its share of it and one organisation's within
 * its share (a request that would pass
 * any is refused with 503 `overloaded` before anything is forwarded); the body is then handed on whole
 * (`takeWhole`, when every declared byte is held) or as a Readable (`stream`) that
 * hands the held chunks (the same Buffers, never copied) and then the rest of
 * the request, with backpressure, to the upstream leg. The scan keeps watching
 * the rest as it passes: a duplicate key, bytes that are not JSON, or a body
 * past KEYWARD_MAX_BODY stop the flow before the offending chunk is passed on,
 * so the upstream never receives a complete body, and the upstream leg is told
 * (`onViolation`) to cut the exchange off.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { ApiError, Errors } from '../../errors.js';
import type { BufferBudget, BufferHolder } from '../entry/buffer-budget.js';
import type { MessagesFound } from './json-fields.js';
import { JsonFieldScanner, type ElementsFound, type ElementsWanted, type FieldValue, type ScanProblem } from './json-field-scanner.js';

/**
 * What one held chunk costs beyond its bytes: the Buffer object and, for a body of tiny chunks (chunked
 * encoding can make every byte its own chunk), the framing bytes its slice keeps alive. Charged to the budget
 * so that a body of tiny chunks cannot hold a hundred times what it is charged.
 */
export const CHUNK_OVERHEAD = 256;

export interface BodyScanOptions {
  /** Dotted paths of the top-level object to find, e.g. `model`, `generationConfig.maxOutputTokens`. */
  fields: readonly string[];
  /** KEYWARD_MAX_BODY. */
  maxBody: number;
  budget: BufferBudget;
  /** Whose shares of the budget the held bytes count against (the proxy token and its organisation). */
  holder?: BufferHolder;
  /** Decide only when the top-level object closes (a spend budget needs the whole body's length). */
  toEnd?: boolean;
  /** Keys to notice at any depth (JsonFieldScanner's `anyKeys`). */
  anyKeys?: readonly string[];
  /** Keys whose values are not searched for `anyKeys` (JsonFieldScanner's `anyKeysSkip`). */
  anyKeysSkip?: readonly string[];
  /** The top-level array whose elements are recorded (JsonFieldScanner's `elements`). */
  elements?: ElementsWanted;
  /** The body's declared length (content-length), when it has one. */
  declared?: number;
  /** JSON-RPC messages: one object or a batch, fields read per message (JsonFieldScanner's `readsMessages`). */
  messages?: boolean;
}

const EMPTY = Buffer.alloc(0);

/** holding → decided (paused until the upstream leg reads) → flowing → ended; or failed / discarded from any. */
type Phase = 'holding' | 'decided' | 'flowing' | 'ended' | 'failed' | 'discarded';

export function scanRefusal(problem: ScanProblem): ApiError {
  switch (problem.reason) {
    case 'duplicate':
      return Errors.invalidRequest(`The body names \`${problem.field}\` more than once (keys are compared without case: \`${problem.field.replace(/^./, (c) => c.toUpperCase())}\` is the same key).`, problem.field);
    case 'too_many_messages':
      return Errors.invalidRequest(`The JSON-RPC batch holds more than ${problem.limit} messages.`);
    case 'too_deep':
      return Errors.invalidRequest(`The JSON body is nested deeper than ${problem.limit} levels.`);
    default:
      return Errors.invalidRequest('This token\'s scopes read the request body, so it must be one JSON object.');
  }
}

export class BodyScan {
  /** The wanted fields found, once the scan can decide; rejects with the refusal (400, 413, 503) otherwise. */
  readonly decided: Promise<ReadonlyMap<string, FieldValue>>;

  private phase: Phase = 'holding';
  private readonly scanner: JsonFieldScanner;
  private held: Buffer[] = [];
  /** The next held chunk to hand on. */
  private heldAt = 0;
  /** What the held chunks are charged against the budget (their bytes plus CHUNK_OVERHEAD each). */
  private heldBytes = 0;
  private total = 0;
  private readonly declared: number | undefined;
  private sourceEnded = false;
  private resolveDecided!: (found: ReadonlyMap<string, FieldValue>) => void;
  private rejectDecided!: (err: ApiError) => void;
  /** A violation found after the decision, before the upstream leg asked to hear of one. */
  private violation: ApiError | undefined;
  private violationHandler: ((err: ApiError) => void) | undefined;
  /** The body as a stream, made only when asked for (most scanned bodies are taken whole). */
  private out: ScanOutput | undefined;

  /** `req`: the request's body (the request itself, or HTTP/2's guarded body: http/h2c.ts requestBody). */
  constructor(private readonly req: Readable, private readonly options: BodyScanOptions) {
    this.scanner = new JsonFieldScanner(options.fields, options.anyKeys, options.elements, options.anyKeysSkip, options.messages);
    this.declared = options.declared;
    this.decided = new Promise((resolve, reject) => {
      this.resolveDecided = resolve;
      this.rejectDecided = reject;
    });
    // The gateway awaits it while holding; a rejection after it stopped listening is not an unhandled one.
    this.decided.catch(() => {});
    req.on('data', this.onData);
    req.on('end', this.onEnd);
    req.on('error', this.onAbort);
    req.on('close', this.onClose);
  }

  /** Body bytes read so far: the whole body's length once a `toEnd` scan has decided. */
  get bytesRead(): number {
    return this.total;
  }

  /** The `anyKeys` found (folded), final once a `toEnd` scan has decided. */
  get keysFound(): ReadonlySet<string> {
    return this.scanner.keysFound;
  }

  /** The wanted array's elements, final once a `toEnd` scan has decided. */
  get elementsFound(): ElementsFound {
    return this.scanner.elements;
  }

  /** Each JSON-RPC message's fields, final once a `messages` scan has decided. */
  get messagesFound(): MessagesFound {
    return this.scanner.messages;
  }

  /** The upstream leg's cut-off, called once if the rest of the body breaks the scan (at once if it already has). */
  onViolation(handler: (err: ApiError) => void): void {
    this.violationHandler = handler;
    if (this.violation) handler(this.violation);
  }

  /** Stops reading, drops what is held and gives the budget back. Idempotent; safe in any phase. */
  discard(): void {
    this.release();
    if (this.phase === 'holding') this.rejectDecided(Errors.badRequest('The request was abandoned.'));
    if (this.phase !== 'ended' && this.phase !== 'failed') this.phase = 'discarded';
  }

  /**
   * The whole body, when the scan decided with every declared byte read (content-length, all of it held, the
   * JSON whole): the upstream leg writes these bytes itself rather than reading them back through this stream
   * (a Readable between cost about a fifth of a small request's CPU). The scan is over: it detaches, and the
   * budget's share is given back as the bytes are handed on, as a flowing scan gives each chunk back.
   * Undefined otherwise: more may follow, and this stream is the body.
   */
  takeWhole(): Buffer | undefined {
    if (this.phase !== 'decided' || this.declared === undefined || this.total !== this.declared || this.heldAt !== 0 || !this.scanner.end()) return undefined;
    const bytes = this.held.length === 1 ? this.held[0]! : Buffer.concat(this.held);
    this.phase = 'ended';
    this.release();
    // All that is left of the caller's stream is its end.
    this.req.resume();
    return bytes;
  }

  /** The body as a Readable for the upstream leg: the held chunks, then the rest as it passes the scan. */
  stream(): Readable {
    return (this.out ??= new ScanOutput(this));
  }

  /** The stream's `_read`: hands on what is held, then lets the request flow. */
  pull(out: Readable): void {
    if (this.phase === 'decided') this.phase = 'flowing';
    if (this.phase !== 'flowing') return;
    while (this.heldAt < this.held.length) {
      const chunk = this.held[this.heldAt]!;
      this.held[this.heldAt++] = EMPTY;
      this.heldBytes -= chunk.length + CHUNK_OVERHEAD;
      this.options.budget.release(chunk.length + CHUNK_OVERHEAD, this.options.holder);
      if (!out.push(chunk)) return;
    }
    this.held = [];
    this.heldAt = 0;
    if (this.sourceEnded) this.finish();
    else this.req.resume();
  }

  private readonly onData = (chunk: Buffer): void => {
    if (this.phase === 'flowing') {
      this.pass(chunk);
      return;
    }
    if (this.phase !== 'holding' && this.phase !== 'decided') return;
    this.total += chunk.length;
    if (this.total > this.options.maxBody) return this.fail(Errors.payloadTooLarge(this.options.maxBody));
    if (!this.options.budget.take(chunk.length + CHUNK_OVERHEAD, this.options.holder)) return this.fail(Errors.overloaded());
    this.held.push(chunk);
    this.heldBytes += chunk.length + CHUNK_OVERHEAD;
    if (!this.scanner.write(chunk)) return this.fail(scanRefusal(this.scanner.problem!));
    if (this.endsEarly()) return this.fail(scanRefusal({ reason: 'not_json' }));
    if (this.phase === 'holding' && (this.scanner.complete || (this.scanner.allFound && !this.options.toEnd))) {
      this.phase = 'decided';
      this.req.pause();
      this.resolveDecided(this.scanner.found);
    }
  };

  /** A chunk after the decision: scanned, counted, then handed on (never before it is scanned). */
  private pass(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.total > this.options.maxBody) return this.fail(Errors.payloadTooLarge(this.options.maxBody));
    if (!this.scanner.write(chunk)) return this.fail(scanRefusal(this.scanner.problem!));
    if (this.endsEarly()) return this.fail(scanRefusal({ reason: 'not_json' }));
    if (!this.out!.push(chunk)) this.req.pause();
  }

  /** The declared length is all here but the object has not closed: the last chunk is withheld. */
  private endsEarly(): boolean {
    return this.declared !== undefined && this.total >= this.declared && !this.scanner.complete;
  }

  private readonly onEnd = (): void => {
    this.sourceEnded = true;
    if (this.phase === 'flowing') {
      if (this.heldAt >= this.held.length) this.finish();
    } else if (this.phase === 'holding' && this.total === 0) {
      // An empty body (a zero-length chunked body, HTTP/2 DATA frames that carried nothing) is no body at all,
      // as HTTP/1.1's Content-Length: 0 is: nothing found, nothing to hand on.
      this.phase = 'decided';
      this.resolveDecided(this.scanner.found);
    } else if (this.phase === 'holding' || (this.phase === 'decided' && !this.scanner.complete)) {
      this.scanner.end();
      this.fail(scanRefusal(this.scanner.problem ?? { reason: 'not_json' }));
    }
  };

  private finish(): void {
    if (this.total > 0 && !this.scanner.end()) return this.fail(scanRefusal(this.scanner.problem!));
    this.phase = 'ended';
    this.release();
    this.out!.push(null);
  }

  /** The body broke, or (a body through plugins' requestBody hooks: pipeline/body-hooks.ts) a hook refused it: that refusal. */
  private readonly onAbort = (err?: unknown): void => {
    this.fail(err instanceof ApiError ? err : Errors.badRequest('The request body was not received whole.'));
  };

  private readonly onClose = (): void => {
    // An HTTP/1.1 request is complete once parsed whole (read or not); another body once it ended.
    if (!((this.req as IncomingMessage).complete ?? this.req.readableEnded)) this.onAbort((this.req as { errored?: unknown }).errored);
  };

  private fail(err: ApiError): void {
    const phase = this.phase;
    if (phase === 'ended' || phase === 'failed' || phase === 'discarded') return;
    this.phase = 'failed';
    this.release();
    if (phase === 'holding') {
      this.rejectDecided(err);
    } else {
      this.violation = err;
      this.violationHandler?.(err);
    }
  }

  /** Detaches from the request and gives back every held byte. */
  private release(): void {
    this.req.off('data', this.onData);
    this.req.off('end', this.onEnd);
    this.req.off('error', this.onAbort);
    this.req.off('close', this.onClose);
    this.options.budget.release(this.heldBytes, this.options.holder);
    this.held = [];
    this.heldAt = 0;
    this.heldBytes = 0;
  }
}

/** A scanned body as a stream: it only asks its scan for more (flowing is reached only through `_read`). */
class ScanOutput extends Readable {
  constructor(private readonly scan: BodyScan) {
    super();
  }

  override _read(): void {
    this.scan.pull(this);
  }
}
