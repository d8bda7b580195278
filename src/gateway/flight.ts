/**
 * One request in the air on the upstream leg (upstream.ts): what the gateway hands it (Forward) and what
 * the exit asks of it (a Flight is the exchange's UpstreamLeg). A pooled request has one Flight per attempt.
 */
import type http from 'node:http';
import type { IncomingMessage } from 'node:http';
import type { Provider } from '../catalog/registry.js';
import type { CredentialSecrets, UsageReader } from '../catalog/provider.js';
import type { BodyScan } from './body-scan.js';
import type { BufferBudget } from './buffer-budget.js';
import type { Exchange, UpstreamLeg } from './exchange.js';
import type { CredentialWire, WholeBody } from './outgoing.js';
import type { Failover } from './pool-router.js';
import type { ResponseEnd } from './settlement.js';
import { applyUsage } from './usage-scanner.js';

/** What the gateway hands the upstream leg for one request. */
export interface Forward {
  /** The request's one exit: its context, the caller's request and response, and every way to answer it. */
  exchange: Exchange;
  provider: Provider;
  /** The credential's secret and plain values (CredentialService.secretsFor). */
  credential: CredentialSecrets;
  /** The body's scan when a scope read it: the held bytes, then the rest, scanned as they pass. */
  body?: BodyScan;
  /** The process-wide budget a body read whole for a signer is charged to (the token's share of it). */
  budget?: BufferBudget;
  /** A pooled request's router (pool-router.ts): asked before a failure or an answer reaches the caller. */
  failover?: Failover;
  /** A pooled request's body, read whole by its first attempt, sent again to this member. */
  replay?: Buffer;
}

/** Response content types that are streams of events: their usage is final only at the provider's end-of-message event. */
export const EVENT_STREAM = /^\s*(?:text\/event-stream|application\/vnd\.amazon\.eventstream)/i;

/** One request in the air: what the exit asks of the upstream leg (UpstreamLeg). */
export class Flight implements UpstreamLeg {
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

  constructor(readonly forward: Forward, private readonly usageFailed: (flight: Flight, err: unknown) => void) {}

  abandon(): void {
    this.whole?.abort();
  }

  ended(): ResponseEnd | undefined {
    const reader = this.usage;
    this.usage = undefined;
    const endOfMessage = reader !== undefined && applyUsage(this.forward.exchange.ctx.usage, reader, (err) => this.usageFailed(this, err));
    if (!this.response || !this.complete) return undefined;
    return { complete: this.complete(), eventStream: this.eventStream, endOfMessage };
  }
}
