/**
 * The upstream leg's entry (Envoy's router filter is the model): the gateway hands it an admitted exchange
 * once, and everything after is the leg's. It picks the credential of each attempt (the token's own, or a
 * pool's members in turn: pool-router.ts, which also decides whether a failed attempt is made again and with
 * what body), and makes each attempt on the proxy (upstream.ts: built and signed for that credential, sent,
 * its answer relayed). A retry runs upstream.ts → pool-router.ts → here → upstream.ts; nothing calls back
 * into the gateway, and the caller hears only through the exchange (its refusals, faults, head and cuts).
 */
import type { Config } from '../../settings/config.js';
import type { Metrics } from '../../telemetry/metrics.js';
import type { CredentialSecrets } from '../../catalog/provider.js';
import { actingFor, type CredentialService } from '../../vault/credential-service.js';
import type { PoolService } from '../../vault/pool-service.js';
import type { BufferBudget } from '../entry/buffer-budget.js';
import type { Exchange } from '../exit/exchange.js';
import { PoolRouter, type AttemptMaker, type Failover } from './pool-router.js';
import type { UpstreamProxy } from './upstream.js';

export class UpstreamRouter implements AttemptMaker {
  /** A pooled token's requests: which member, and the next one when a member fails. */
  private readonly pools: PoolRouter;

  constructor(
    private readonly proxy: UpstreamProxy,
    private readonly credentials: CredentialService,
    /** What a body read whole for a signer, or kept for another member, is charged to (the gateway's one budget). */
    private readonly budget: BufferBudget,
    config: Config,
    pools: PoolService,
    metrics: Metrics,
    now: () => number,
  ) {
    this.pools = new PoolRouter(config, credentials, pools, metrics, now, budget, this);
  }

  /** An admitted request: its attempts, from here to its end. A key that cannot be had is refused through the exchange. */
  route(exchange: Exchange): void {
    if (exchange.ctx.auth!.pool) return this.pools.route(exchange);
    // Every secret and plain field of the credential: the provider's signer decides what goes upstream.
    let credential: CredentialSecrets | Promise<CredentialSecrets>;
    try {
      credential = this.credentials.secretsFor(exchange.ctx.auth!.credential);
    } catch (err) {
      exchange.refuse(err);
      return;
    }
    if (credential instanceof Promise) credential.then((c) => this.attempt(exchange, c, undefined, undefined), (err: unknown) => exchange.refuse(err));
    else this.attempt(exchange, credential, undefined, undefined);
  }

  /** One attempt with `credential` (a pooled request's member, with its failover and the body to replay after the first). */
  attempt(exchange: Exchange, credential: CredentialSecrets, failover: Failover | undefined, replay: Buffer | undefined): void {
    // The caller left while we checked: nothing is forwarded, so nothing counts.
    if (exchange.gone) {
      // (A pooled request's later attempt: the exchange ended when the caller left, counted as forwarded.)
      if (!exchange.ctx.forwarded) exchange.abandon();
      return;
    }
    try {
      // A member's token (a personal one, an MCP grant's) acts for its member: a per-member OAuth account is theirs.
      this.proxy.forward(exchange, actingFor(credential, exchange.ctx.auth!.token.memberId), this.budget, failover, replay);
    } catch (err) {
      exchange.refuse(err);
    }
  }
}
