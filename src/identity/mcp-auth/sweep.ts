/**
 * The authorization server's clean-up: once a minute after start, then hourly (on the injected timers), grants that
 * can no longer be used are deleted (an unredeemed code or consent page expired, refresh tokens ended, a revoked
 * grant whose access tokens would have ended; mcpGrantEnd), then dynamically registered clients unused for
 * CLIENT_UNUSED_MS that no grant names. In batches, yielding between them, at most MAX_BATCHES a run; a store failure
 * is logged and the next run tries again. Several instances may sweep at once: a delete of what another deleted
 * deletes nothing.
 */
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import type { Timers } from '../../clock.js';
import type { Logger } from '../../log.js';
import type { McpGrantStore } from '../../store/ports.js';

const FIRST_MS = 60_000;
const EVERY_MS = 3_600_000;
const BATCH = 500;
const MAX_BATCHES = 40;
/** A registered client nobody has consented to for this long, and no grant names, is removed (it registers again). */
export const CLIENT_UNUSED_MS = 30 * 86_400_000;

export class McpGrantSweep {
  private stop: (() => void) | undefined;
  private closed = false;

  constructor(
    private readonly store: Pick<McpGrantStore, 'purgeMcpGrants' | 'purgeMcpClients'>,
    private readonly now: () => number,
    private readonly timers: Timers,
    private readonly log: Logger,
  ) {}

  start(): void {
    if (this.stop || this.closed) return;
    this.stop = this.timers.after(FIRST_MS, () => {
      this.stop = this.timers.every(EVERY_MS, () => this.run());
      return this.run();
    });
  }

  close(): void {
    this.closed = true;
    this.stop?.();
    this.stop = undefined;
  }

  /** One run: how many grants and clients were deleted. Never rejects. */
  async run(): Promise<{ grants: number; clients: number }> {
    const done = { grants: 0, clients: 0 };
    try {
      done.grants = await this.batches((limit) => this.store.purgeMcpGrants(this.now(), limit));
      done.clients = await this.batches((limit) => this.store.purgeMcpClients(this.now() - CLIENT_UNUSED_MS, limit));
    } catch (err) {
      this.log.warn({ err, ...done }, 'the MCP authorization clean-up failed; the next hourly run retries');
    }
    if (done.grants + done.clients > 0) this.log.info(done, 'MCP authorization clean-up: ended grants and unused clients deleted');
    return done;
  }

  private async batches(purge: (limit: number) => Promise<number>): Promise<number> {
    let deleted = 0;
    for (let i = 0; i < MAX_BATCHES && !this.closed; i++) {
      const n = await purge(BATCH);
      deleted += n;
      if (n < BATCH) break;
      await yieldToEvents();
    }
    return deleted;
  }
}
