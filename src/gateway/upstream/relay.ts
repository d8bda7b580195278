/**
 * The byte-moving pieces of the upstream leg: the chunked request body's size
 * limiter, the response relay (masked, read by the taps and counted in one pass,
 * with backpressure; or, with plugins' responseBody hooks, read, changed by the
 * hooks, then masked) and the decompressor for an upstream that compresses
 * although asked not to. None holds more than one chunk (the hooks hold what
 * their maxBuffer lets them).
 */
import type { ServerResponse } from 'node:http';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import zlib from 'node:zlib';
import type { ApiError } from '../../errors.js';
import type { ProxyContext } from '../pipeline/contracts.js';
import type { BodyFilter } from '../pipeline/body-hooks.js';
import type { ChunkStage } from '../wire/mcp/tools-list-filter.js';

/** A reader of the masked response bytes as they pass; it never changes them. */
export interface ResponseTap {
  scan(chunk: Buffer): void;
}

/** Where a failed response ends: the request's exit (exchange.ts), which cuts the caller's stream. */
export interface Cut {
  cut(): void;
}

/** The exit as the hooked relay needs it: a refusal before the head went out is answered as one (exchange.ts fail). */
export interface HookedExit extends Cut {
  fail(err: ApiError): void;
}

/** What the hooked relay is handed besides the plain relay's: the hooks, the deferred head, how to stop the upstream. */
export interface ResponseHooks {
  readonly filter: BodyFilter;
  /** Writes the response head; false when it could not (the leg answered the fault itself). */
  head(): boolean;
  /** Stops the upstream response (and its decoder): nothing more of it is read. */
  stop(): void;
  /** The upstream's answer broke before any byte reached the caller: the fault to answer with. */
  broken(): ApiError;
}

/** Counts request body bytes; past the limit it stops the flow and reports once. */
export class BodyLimiter extends Transform {
  private seen = 0;
  constructor(private readonly limit: number, private readonly onOverflow: () => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.limit) {
      this.onOverflow();
      done();
      return;
    }
    done(null, chunk);
  }
}

/**
 * The response body, upstream to caller: masked, read by the taps and counted in one pass, with
 * backpressure. Plain listeners rather than stream.pipeline over a Transform chain: per response,
 * pipeline builds an AbortController and, on completion, an AbortError and a premature-close error
 * (stack traces included), which cost more than everything else on this leg.
 */
export function relay(source: Readable, complete: () => boolean, res: ServerResponse, masker: ChunkStage, taps: ResponseTap[], ctx: ProxyContext, exit: Cut): void {
  const send = (chunk: Buffer | undefined): void => {
    if (chunk === undefined || res.destroyed) return;
    for (const tap of taps) tap.scan(chunk);
    ctx.bytesOut += chunk.length;
    if (!res.write(chunk)) source.pause();
  };
  res.on('drain', () => source.resume());
  source.on('data', (chunk: Buffer) => send(masker.push(chunk)));
  source.on('end', () => {
    send(masker.end());
    if (!res.destroyed) res.end();
  });
  // An upstream that dies mid-body ('aborted', ECONNRESET): the exit cuts the caller's stream (an error,
  // never a clean end). A caller who leaves stops the upstream response.
  source.on('error', () => {});
  source.on('close', () => {
    if (!complete() && !res.destroyed) exit.cut();
  });
  res.on('close', () => {
    if (!complete()) source.destroy();
  });
}

/**
 * The relay with plugins' responseBody hooks (pipeline/body-hooks.ts): the taps read the provider's bytes as they
 * came (its usage is what it billed), the hooks change them, the masker runs last towards the caller. The head goes
 * out with the first bytes every hook passed (or at the end). A refusal, or a provider's answer that breaks, before
 * the head went out is answered as a refusal (its JSON error and status); after it, a cut. No piece passes after.
 */
export function hookedRelay(source: Readable, complete: () => boolean, res: ServerResponse, masker: ChunkStage, taps: ResponseTap[], ctx: ProxyContext, exit: HookedExit, hooks: ResponseHooks): void {
  let headed = false;
  let stopped = false;
  const send = (chunk: Buffer | undefined): void => {
    if (chunk === undefined || res.destroyed) return;
    ctx.bytesOut += chunk.length;
    if (!res.write(chunk)) source.pause();
  };
  const pass = (bytes: Buffer | undefined, last: boolean): void => {
    if (bytes === undefined && !last) return;
    if (!headed) {
      headed = true;
      if (!hooks.head()) {
        stopped = true;
        return;
      }
      setImmediate(flushIdleHead, res, ctx);
    }
    if (bytes) send(masker.push(bytes));
  };
  const stop = (err: ApiError): void => {
    stopped = true;
    hooks.stop();
    if (!headed) return exit.fail(err);
    ctx.error = err;
    exit.cut();
  };
  res.on('drain', () => source.resume());
  source.on('data', (chunk: Buffer) => {
    if (stopped) return;
    for (const tap of taps) tap.scan(chunk);
    let out: Buffer | undefined;
    try {
      out = hooks.filter.push(chunk);
    } catch (err) {
      return stop(err as ApiError);
    }
    pass(out, false);
  });
  source.on('end', () => {
    if (stopped) return;
    let out: Buffer | undefined;
    try {
      out = hooks.filter.end();
    } catch (err) {
      return stop(err as ApiError);
    }
    pass(out, true);
    if (stopped) return;
    send(masker.end());
    if (!res.destroyed) res.end();
  });
  source.on('error', () => {});
  source.on('close', () => {
    if (stopped || complete() || res.destroyed) return;
    stopped = true;
    if (headed) exit.cut();
    else exit.fail(hooks.broken());
  });
  res.on('close', () => {
    if (!complete()) source.destroy();
  });
}

/**
 * Run on the turn after the response head was written: sends the head alone if no body byte has carried it
 * yet (a stream whose first event is slow, or bytes the masker holds back), so a stream's caller sees the
 * status at once. Otherwise the head went out with the first body bytes, in one write: a separate write of
 * the head alone cost ~6 % of the CPU of a JSON request.
 */
export function flushIdleHead(res: ServerResponse, ctx: ProxyContext): void {
  if (ctx.bytesOut === 0 && !res.destroyed && !res.writableEnded) res.flushHeaders();
}

/**
 * Upstream is asked for identity encoding so the key can be seen; one that compresses anyway is
 * decompressed here (the caller gets identity bytes), so masking never goes blind.
 */
/** A decompressor for `encoding`; undefined for identity; null for one the gateway cannot undo. */
export function decoderFor(encoding: string | undefined): Transform | undefined | null {
  switch (encoding?.trim().toLowerCase()) {
    case undefined: case '': case 'identity': return undefined;
    case 'gzip': case 'x-gzip': return zlib.createGunzip();
    case 'deflate': return zlib.createInflate();
    case 'br': return zlib.createBrotliDecompress();
    case 'zstd': return (zlib as unknown as { createZstdDecompress?: () => Transform }).createZstdDecompress?.() ?? null;
    default: return null;
  }
}
