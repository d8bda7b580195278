/**
 * One open session: two `ws` sockets (the caller's and the provider's) and the
 * messages between them, in order, each way.
 *
 * Caller → provider: every message is parsed as JSON (a text message that is
 * not one JSON object closes with 1007; a binary one where the protocol takes
 * none, 1003) and handed to the protocol, which may make it wait for a hold;
 * messages behind it wait too (the caller is paused meanwhile), so order
 * holds. Provider → caller: the protocol reads each message, then it goes on
 * masked for every secret of the credential (and what its signer minted).
 *
 * Back-pressure: bytes handed to a socket and not yet written are counted per
 * direction; past HIGH_WATER the other side is paused (its socket is not read,
 * so TCP pushes back on the sender) and resumed below LOW_WATER. A reader that
 * never reads holds at most HIGH_WATER plus one message (≤ KEYWARD_WS_MAX_MESSAGE)
 * here. A message over that limit closes the session with 1009 (ws enforces it
 * on both legs). Either side's close closes the other; codes a peer may not send
 * (1005, 1006) become 1000 from the caller and 1014 (bad gateway) from the
 * provider; the provider's close reason is masked like its messages.
 */
import type WebSocket from 'ws';
import type { GatewayError as ApiError } from '../../../sdk/src/errors.js';
import type { Logger } from '../../log.js';
import { maskAll, maskString } from '../wire/masking.js';
import type { RealtimeSessionProtocol as SessionProtocol, RealtimeVerdict as Verdict } from '../../../sdk/src/realtime.js';
import type { BodyFilter } from '../pipeline/body-hooks.js';

const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;
/** How long a closing handshake may take before the socket is cut. */
const CLOSE_GRACE_MS = 5000;
/** ws's error code for a message over maxPayload (it closes with 1009 itself). */
const TOO_BIG = 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH';

export interface SessionWiring {
  readonly log: Logger;
  readonly requestId: string;
  readonly protocol: SessionProtocol;
  /** The credential's secrets as bytes (and as strings, for a close reason). */
  readonly masks: readonly Buffer[];
  /** A refusal was answered (an error event or a close): for the audit and metrics. */
  refused(err: ApiError): void;
  /** Both sockets are closed: the session's exit. */
  ended(session: Session): void;
  /** Milliseconds now, from the injected clock. */
  now(): number;
  /** The plugins' requestBody / responseBody hooks, when any plugin has one: each message passes them. */
  readonly fromCallerHooks?: BodyFilter | undefined;
  readonly fromProviderHooks?: BodyFilter | undefined;
}

/** A close reason fits in 123 bytes (RFC 6455 §5.5). */
export function closeReason(text: string): string {
  let out = text;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -1);
  return out;
}

export class Session {
  /** When a message last passed either way (clock ms). */
  lastActivity: number;
  bytesToCaller = 0;
  /** How the session ended, as the caller was told (for the log). */
  closeCode: number | undefined;
  private inflightToCaller = 0;
  private inflightToUpstream = 0;
  private readonly queue: Array<[Buffer, boolean]> = [];
  private waiting = false;
  private callerOpen = true;
  private upstreamOpen = true;
  private finished = false;
  private cause: number | undefined;
  private readonly maskStrings: readonly string[];

  constructor(private readonly w: SessionWiring, readonly caller: WebSocket, readonly upstream: WebSocket) {
    this.lastActivity = w.now();
    this.maskStrings = w.masks.map((m) => m.toString('utf8'));
  }

  start(): void {
    this.caller.on('message', (data: Buffer, isBinary: boolean) => {
      this.lastActivity = this.w.now();
      this.queue.push([data, isBinary]);
      this.pump();
    });
    this.upstream.on('message', (data: Buffer, isBinary: boolean) => this.fromUpstream(data, isBinary));
    this.caller.on('error', (err: NodeJS.ErrnoException) => this.onError('caller', err));
    this.upstream.on('error', (err: NodeJS.ErrnoException) => this.onError('upstream', err));
    this.caller.on('close', (code: number, reason: Buffer) => {
      this.callerOpen = false;
      this.closeCode ??= code;
      if (this.upstreamOpen) this.shut(this.upstream, this.cause ?? (code === 1005 || code === 1006 ? 1000 : code), reason.toString('utf8'));
      this.maybeEnd();
    });
    this.upstream.on('close', (code: number, reason: Buffer) => {
      this.upstreamOpen = false;
      if (this.callerOpen) {
        const sent = this.cause ?? (code === 1005 ? 1000 : code === 1006 ? 1014 : code);
        this.closeCode = sent;
        this.shut(this.caller, sent, maskString(reason.toString('utf8'), this.maskStrings));
      }
      this.maybeEnd();
    });
    this.upstream.resume();
  }

  /** Ends the session from the gateway's side (revocation, idle, drain): the caller hears `code`, the provider 1000. */
  close(code: number, reason: string): void {
    if (this.finished) return;
    this.cause = code;
    this.closeCode = code;
    if (this.callerOpen) this.shut(this.caller, code, reason);
    if (this.upstreamOpen) this.shut(this.upstream, 1000, '');
  }

  /** Cut by the exchange (a stage that can no longer hold what the session holds: a lost concurrency slot). */
  cut(): void {
    this.close(1011, 'internal error');
  }

  /** The protocol refused or ended on its own (a response the provider started that no hold covers). */
  fail(err: ApiError, code: number, eventId?: string): void {
    this.w.refused(err);
    const event = this.w.protocol.errorEvent(err, eventId);
    if (event !== undefined && this.callerOpen) this.toCaller(Buffer.from(event), false);
    this.close(code, closeReason(`${err.code}: ${err.message}`));
  }

  private onError(side: 'caller' | 'upstream', err: NodeJS.ErrnoException): void {
    if (err.code === TOO_BIG) {
      // ws has closed that side with 1009; the other side hears the same.
      this.cause = 1009;
      this.closeCode = 1009;
      const other = side === 'caller' ? this.upstream : this.caller;
      if (side === 'caller' ? this.upstreamOpen : this.callerOpen) this.shut(other, 1009, 'message too big');
      return;
    }
    this.w.log.debug({ request_id: this.w.requestId, side, code: err.code }, 'realtime socket error');
  }

  /** Caller messages, one at a time: a message whose verdict must wait holds the ones behind it. */
  private pump(): void {
    while (!this.waiting && this.queue.length > 0 && !this.finished && this.upstreamOpen) {
      let [data, isBinary] = this.queue.shift()!;
      if (this.w.fromCallerHooks) {
        const passed = this.hooked(this.w.fromCallerHooks, data, true);
        if (passed === undefined) continue;
        data = passed;
      }
      const verdict = this.decide(data, isBinary);
      if (verdict instanceof Promise) {
        this.waiting = true;
        this.caller.pause();
        verdict.then((v) => this.apply(v, data, isBinary), (err: unknown) => {
          this.w.log.error({ request_id: this.w.requestId, err }, 'realtime message check failed');
          this.close(1011, 'internal error');
        }).finally(() => {
          this.waiting = false;
          this.resumeCaller();
          this.pump();
        });
        return;
      }
      if (verdict) this.apply(verdict, data, isBinary);
    }
  }

  private decide(data: Buffer, isBinary: boolean): Verdict | Promise<Verdict> | undefined {
    if (isBinary && !this.w.protocol.binaryJson) {
      this.close(1003, 'this session takes JSON text messages only');
      return undefined;
    }
    let message: unknown;
    try {
      message = JSON.parse(data.toString('utf8'));
    } catch {
      message = undefined;
    }
    if (!message || typeof message !== 'object' || Array.isArray(message)) {
      this.close(1007, 'each message must be one JSON object');
      return undefined;
    }
    return this.w.protocol.fromClient(message as Record<string, unknown>, data.length);
  }

  private apply(v: Verdict, data: Buffer, isBinary: boolean): void {
    if (this.finished || !this.upstreamOpen) return;
    if (v.kind === 'forward') {
      this.toUpstream(data, isBinary);
    } else if (v.kind === 'refuse') {
      this.w.refused(v.error);
      const event = this.w.protocol.errorEvent(v.error, v.eventId);
      if (event === undefined) this.close(1008, closeReason(`${v.error.code}: ${v.error.message}`));
      else this.toCaller(Buffer.from(event), false);
    } else {
      this.fail(v.error, v.code, v.eventId);
    }
  }

  private fromUpstream(data: Buffer, isBinary: boolean): void {
    this.lastActivity = this.w.now();
    try {
      this.w.protocol.fromServer(data);
    } catch (err) {
      this.w.log.warn({ request_id: this.w.requestId, err: String((err as Error)?.message).slice(0, 200) }, 'realtime message reading failed');
    }
    let out = data;
    if (this.w.fromProviderHooks) {
      const passed = this.hooked(this.w.fromProviderHooks, data, false);
      if (passed === undefined) return;
      out = passed;
    }
    for (const m of this.w.masks) out = maskAll(out, m);
    if (this.callerOpen) this.toCaller(out, isBinary);
  }

  /** A message through the hooks of its direction: what goes on, or undefined (held back, or refused and answered here). */
  private hooked(hooks: BodyFilter, data: Buffer, fromCaller: boolean): Buffer | undefined {
    try {
      return hooks.message(data);
    } catch (err) {
      if (fromCaller) this.apply({ kind: 'refuse', error: err as ApiError }, data, false);
      else this.fail(err as ApiError, 1008);
      return undefined;
    }
  }

  private toCaller(data: Buffer, isBinary: boolean): void {
    this.inflightToCaller += data.length;
    this.bytesToCaller += data.length;
    this.caller.send(data, { binary: isBinary }, () => {
      this.inflightToCaller -= data.length;
      if (this.inflightToCaller < LOW_WATER && this.upstreamOpen && this.upstream.isPaused) this.upstream.resume();
    });
    if (this.inflightToCaller > HIGH_WATER && this.upstreamOpen) this.upstream.pause();
  }

  private toUpstream(data: Buffer, isBinary: boolean): void {
    this.inflightToUpstream += data.length;
    this.upstream.send(data, { binary: isBinary }, () => {
      this.inflightToUpstream -= data.length;
      if (this.inflightToUpstream < LOW_WATER) this.resumeCaller();
    });
    if (this.inflightToUpstream > HIGH_WATER && this.callerOpen) this.caller.pause();
  }

  /** The caller is read again once nothing holds it back: no verdict pending, the provider's side drained. */
  private resumeCaller(): void {
    if (this.callerOpen && !this.waiting && this.inflightToUpstream < LOW_WATER && this.caller.isPaused) this.caller.resume();
  }

  private shut(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code, closeReason(reason));
    } catch {
      ws.terminate();
      return;
    }
    // A peer that never answers the close (or never reads) is cut after a grace period.
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
  }

  private maybeEnd(): void {
    if (this.finished || this.callerOpen || this.upstreamOpen) return;
    this.finished = true;
    this.queue.length = 0;
    this.w.ended(this);
  }
}
