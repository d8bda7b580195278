/**
 * One attempt in the air on the upstream leg (upstream.ts): what the leg's router gave it (the exchange, the
 * credential, a pooled request's failover and replayed body) and what the exit asks of it (a Flight is the
 * exchange's UpstreamLeg). A pooled request has one Flight per attempt. What goes wrong while it reads the
 * provider's usage is told to the exchange, never to the proxy that sent it.
 */
import type http from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Provider } from '../../catalog/registry.js';
import type { CredentialSecrets, UsageReader } from '../../catalog/provider.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import type { Exchange, UpstreamLeg } from '../exit/exchange.js';
import { maskString } from '../wire/masking.js';
import type { CredentialWire, WholeBody } from './outgoing.js';
import type { Failover } from './pool-router.js';
import type { ResponseEnd } from '../exit/settlement.js';
import { applyUsage, type UsageFailures } from '../wire/usage-scanner.js';

/** Response content types that are streams of events: their usage is final only at the provider's end-of-message event. */
export const EVENT_STREAM = /^\s*(?:text\/event-stream|application\/vnd\.amazon\.eventstream)/i;

/** One attempt in the air: what the exit asks of the upstream leg (UpstreamLeg). */
export class Flight implements UpstreamLeg, UsageFailures {
  readonly provider: Provider;
  wire?: CredentialWire;
  proxyReq?: http.ClientRequest;
  /** The caller's body grew past the limit or broke its scan, or a signer refused: abort as soon as we can. */
  overflow = false;
  /** Handed to http-proxy-3 (a signer may make us wait before it). */
  sent = false;
  /** The body being read whole for a signer. */
  whole?: WholeBody;
  /** The upstream's response, once its head arrived. */
  response?: IncomingMessage;
  /** Whether the response arrived whole (set with the relay). */
  complete?: () => boolean;
  /** The response is a stream of events (its content type). */
  eventStream = false;
  /** This response's usage reader. */
  usage?: UsageReader;

  constructor(
    /** The request's one exit: its context, the caller's request and response, and every way to answer it. */
    readonly exchange: Exchange,
    /** The credential's secret and plain values for this attempt (a pooled request's member). */
    readonly credential: CredentialSecrets,
    /** The process-wide budget a body read whole for a signer is charged to (the token's share of it). */
    readonly budget: BufferBudget,
    /** A pooled request's router (pool-router.ts): asked before a failure or an answer reaches the caller. */
    readonly failover: Failover | undefined,
    /** A pooled request's body, read whole by its first attempt, sent again to this member. */
    readonly replay: Buffer | undefined,
  ) {
    this.provider = exchange.ctx.provider!;
  }

  abandon(): void {
    this.whole?.abort();
  }

  ended(): ResponseEnd | undefined {
    const reader = this.usage;
    this.usage = undefined;
    const endOfMessage = reader !== undefined && applyUsage(this.exchange.ctx.usage, reader, this);
    if (!this.response || !this.complete) return undefined;
    return { complete: this.complete(), eventStream: this.eventStream, endOfMessage };
  }

  /**
   * A provider file's usage reader threw: its reading stops (the relay never knew), and the exchange is told once.
   * Its message is provider code's: only its first line, with every secret of the credential masked.
   */
  usageFailed(err: unknown): void {
    this.usage = undefined;
    const message = maskString(String((err as Error)?.message ?? err).split('\n')[0]!.slice(0, 200), this.wire?.maskStrings ?? []);
    this.exchange.usageUnread(message);
  }
}
