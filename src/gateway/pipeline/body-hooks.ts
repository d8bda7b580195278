/**
 * The plugins' streaming body hooks (`requestBody`, `responseBody`: contracts.ts), picked out once at start-up:
 * with no plugin declaring one, nothing of this runs, per request or per chunk (the body stage and the relay
 * see `undefined` and take their usual paths).
 *
 * Where they run, and what that promises:
 * - A request body passes the `requestBody` hooks first, as it is read (HookedBody): the core's scans (the model,
 *   the budget's worst case, the tools), the size limit and a signer see the bytes that are sent upstream, never
 *   the caller's. So the hooks may see a piece before the plugin's `access` ran (a body a core stage reads is read
 *   during the body stage, 600). A body a hook may change cannot keep the caller's content-length: it goes
 *   upstream chunked (HTTP/1.1), or with the length of the bytes read whole (a signer's body, a pooled one).
 * - A response body passes the provider's usage reader first (what the provider billed is what it sent), then the
 *   `responseBody` hooks, then masking of the credential's secrets, which always runs last towards the caller:
 *   a hook can never un-mask a key, however it splits or joins the bytes. The response head waits until the first
 *   piece has passed every hook, and carries no content-length.
 * - Hooks run in pipeline order (priority, higher first) in both directions; each gets the pieces the one before it
 *   gave out, and at the end what the one before it flushed, then its own `null`.
 * - A refusal (a GatewayError thrown), a hook that holds back more than its plugin's `maxBuffer`, or one that fails
 *   (throws anything else: 502 `plugin_failed`, logged with its kind, never its message: it may quote the body) stops
 *   the body: no later piece passes, and the request's exit answers it (a refusal before any byte reached the caller
 *   is its JSON error and status; after, a cut). On a realtime session each message is a body of its own.
 */
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { Logger } from '../../log.js';
import { ApiError, Errors } from '../../errors.js';
import type { BodyHook, BodyHookResult, RequestView } from './contracts.js';

/** One hook as the host holds it: whose it is and how much it may hold. */
interface HookRef {
  readonly plugin: string;
  readonly hook: BodyHook;
  readonly maxBuffer: number;
}

/** The stages' part this file reads (a CoreStage is one). */
interface BodyHookStage {
  readonly name: string;
  readonly maxBuffer?: number;
  requestBody?: BodyHook<never>;
  responseBody?: BodyHook<never>;
}

export type BodySide = 'request' | 'response';

/** The body hooks of one pipeline, found once. */
export class BodyHooks {
  private constructor(
    private readonly requestHooks: readonly HookRef[],
    private readonly responseHooks: readonly HookRef[],
    private readonly log: Logger | undefined,
  ) {}

  /** The hooks among `stages` (already in pipeline order), or undefined when none declares one. */
  static of(stages: readonly BodyHookStage[], log?: Logger): BodyHooks | undefined {
    const pick = (side: 'requestBody' | 'responseBody'): HookRef[] => stages.filter((s) => s[side]).map((s) => ({
      plugin: s.name, hook: s[side] as BodyHook, maxBuffer: s.maxBuffer ?? 0,
    }));
    const request = pick('requestBody');
    const response = pick('responseBody');
    return request.length + response.length === 0 ? undefined : new BodyHooks(request, response, log);
  }

  get hasRequest(): boolean {
    return this.requestHooks.length > 0;
  }

  get hasResponse(): boolean {
    return this.responseHooks.length > 0;
  }

  /** One body's filter (one request, or one direction of a realtime session); undefined when that side has no hook. */
  filter(side: BodySide, ctx: RequestView): BodyFilter | undefined {
    const hooks = side === 'request' ? this.requestHooks : this.responseHooks;
    return hooks.length === 0 ? undefined : new BodyFilter(hooks, side, ctx, this.log);
  }
}

const EMPTY = Buffer.alloc(0);

/** A hook's answer as bytes: the piece itself when it passed unchanged. */
function answerBytes(answer: BodyHookResult, piece: Buffer): Buffer | undefined {
  if (answer === undefined) return piece;
  if (typeof answer === 'string') return Buffer.from(answer, 'utf8');
  if (answer instanceof Uint8Array) return Buffer.isBuffer(answer) ? answer : Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength);
  return undefined;
}

/**
 * One body through every hook of its side: `push` each piece, `end` once; each returns what goes on (undefined:
 * nothing yet) or throws the ApiError that stops the body. After a throw, nothing more passes.
 */
export class BodyFilter {
  /** Per hook: bytes taken in and not given out (never below 0: a longer replacement banks nothing). */
  private readonly held: number[];
  private stopped: ApiError | undefined;

  constructor(private readonly hooks: readonly HookRef[], private readonly side: BodySide, private readonly ctx: RequestView, private readonly log: Logger | undefined) {
    this.held = hooks.map(() => 0);
  }

  /** Whether the body was refused (nothing passes any more). */
  get refused(): ApiError | undefined {
    return this.stopped;
  }

  push(chunk: Buffer): Buffer | undefined {
    if (this.stopped) throw this.stopped;
    let piece: Buffer | undefined = chunk;
    for (let i = 0; i < this.hooks.length && piece !== undefined; i++) piece = this.call(i, piece);
    return piece === undefined || piece.length === 0 ? undefined : piece;
  }

  /** The end: each hook in turn gets what the ones before it flushed, then its own `null`. */
  end(): Buffer | undefined {
    if (this.stopped) throw this.stopped;
    let pending: Buffer | undefined;
    for (let i = 0; i < this.hooks.length; i++) {
      const passed = pending === undefined ? undefined : this.call(i, pending);
      const flushed = this.call(i, null);
      pending = passed && flushed ? Buffer.concat([passed, flushed]) : passed ?? flushed;
    }
    for (let i = 0; i < this.held.length; i++) this.held[i] = 0;
    return pending === undefined || pending.length === 0 ? undefined : pending;
  }

  /** A realtime message, a body of its own (its bytes, then `null`): what goes on, if anything. A refusal stops this message only. */
  message(data: Buffer): Buffer | undefined {
    try {
      const passed = this.push(data);
      const flushed = this.end();
      return passed && flushed ? Buffer.concat([passed, flushed]) : passed ?? flushed;
    } finally {
      this.stopped = undefined;
      for (let i = 0; i < this.held.length; i++) this.held[i] = 0;
    }
  }

  /** Hook `i` on `piece` (null: its flush); what it gives out, undefined for nothing. */
  private call(i: number, piece: Buffer | null): Buffer | undefined {
    const ref = this.hooks[i]!;
    let out: Buffer | undefined;
    try {
      const answer = ref.hook(piece, this.ctx);
      out = answerBytes(answer, piece ?? EMPTY);
      if (out === undefined) throw new TypeError(`a body hook answered ${answer === null ? 'null' : typeof answer} (undefined, bytes or a string only; hooks are synchronous)`);
    } catch (err) {
      throw this.stop(ref, err);
    }
    const held = Math.max(0, this.held[i]! + (piece?.length ?? 0) - out.length);
    this.held[i] = held;
    if (held > ref.maxBuffer) throw this.stop(ref, Errors.bodyBufferExceeded(ref.plugin, this.side, ref.maxBuffer));
    return out.length === 0 ? undefined : out;
  }

  private stop(ref: HookRef, err: unknown): ApiError {
    if (err instanceof ApiError) {
      this.stopped = err;
    } else {
      // The kind of error only: its message may quote the body (the very content a redacting hook exists to hide).
      this.log?.warn({ plugin: ref.plugin, request_id: this.ctx.requestId, side: this.side, err_kind: (err as Error)?.name ?? typeof err }, 'plugin body hook failed');
      this.stopped = Errors.pluginFailed(ref.plugin, this.side);
    }
    return this.stopped;
  }
}

/**
 * A request body through its `requestBody` hooks, as a stream its readers (the body scan, the size limiter, the
 * upstream request, a signer reading it whole) take in place of the caller's. A hook's refusal is this stream's
 * error (the ApiError itself); a caller's body that breaks (a reset, a closed connection) is one too, so it never
 * passes for a whole one, and the hooks' flush runs only at a true end.
 */
export class HookedBody extends Transform {
  constructor(source: Readable, private readonly hooks: BodyFilter) {
    super();
    // Its readers listen for the error they care about; one nobody reads is no crash.
    this.on('error', () => {});
    source.on('error', (err: Error) => this.destroy(err));
    source.on('close', () => {
      // An HTTP/1.1 request is complete once parsed whole; HTTP/2's guarded body once it ended.
      if (!((source as IncomingMessage).complete ?? source.readableEnded)) this.destroy(new Error('the request body was cut'));
    });
    source.pipe(this);
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let out: Buffer | undefined;
    try {
      out = this.hooks.push(chunk);
    } catch (err) {
      done(err as Error);
      return;
    }
    done(null, out);
  }

  override _flush(done: TransformCallback): void {
    let out: Buffer | undefined;
    try {
      out = this.hooks.end();
    } catch (err) {
      done(err as Error);
      return;
    }
    done(null, out);
  }
}
