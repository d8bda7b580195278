/**
 * Every open session of this instance, by token and by credential, and what
 * ends them from the gateway's side:
 *
 * - Revocation: a change of a token or credential (the store's change feed,
 *   which reaches every instance within a second, this one included) makes
 *   each of its sessions resolve its token again; a token that no longer
 *   resolves (revoked, expired, credential deleted) closes its sessions with
 *   1008. The token service has dropped its cache entry by then, so the
 *   answer is the store's. While the feed is not live, every session resolves
 *   again on each sweep (the token cache trusts what it holds one second at
 *   most then), so revocation still lands within about a second.
 * - A sweep every SWEEP_MS (only while sessions are open): a token past its
 *   `expires_at` closes with 1008, a session with no message either way for
 *   KEYWARD_UPSTREAM_IDLE_TIMEOUT_MS closes with 1001 (times from the injected
 *   clock).
 * - Drain (SIGTERM): no new session is accepted; open ones may go on up to the
 *   drain window like streams, then close with 1001.
 */
import type { Clock, Timers } from '../../clock.js';
import type { ChangeFeed } from '../../store/ports.js';
import type { ResolvedToken } from '../../vault/token-service.js';
import type { Session } from './session.js';

/** How often open sessions are checked (expiry, idleness, and revocation while the feed is down). */
export const SWEEP_MS = 250;

export interface TokenResolver {
  resolve(presented: string): ResolvedToken | undefined | Promise<ResolvedToken | undefined>;
}

interface Open {
  session: Session;
  auth: ResolvedToken;
  /** The presented proxy token: what re-resolving checks (held in memory only while the session is open). */
  presented: string;
}

export class SessionRegistry {
  private readonly open = new Set<Open>();
  private readonly byToken = new Map<string, Set<Open>>();
  private readonly byCredential = new Map<string, Set<Open>>();
  private stopSweep: (() => void) | undefined;
  private lastResolveAll = 0;
  private idleWaiters: Array<() => void> = [];
  private unwatch: (() => void) | undefined;
  draining = false;

  constructor(
    private readonly feed: ChangeFeed, private readonly tokens: TokenResolver, private readonly clock: Clock, private readonly timers: Timers, private readonly idleMs: number,
  ) {}

  get size(): number {
    return this.open.size;
  }

  add(session: Session, auth: ResolvedToken, presented: string): () => void {
    const entry: Open = { session, auth, presented };
    this.open.add(entry);
    index(this.byToken, auth.token.id, entry);
    index(this.byCredential, auth.credential.id, entry);
    this.unwatch ??= this.feed.watch((c) => {
      const affected = c.kind === 'token' ? this.byToken.get(c.id) : c.kind === 'credential' ? this.byCredential.get(c.id) : undefined;
      // After every listener ran: the token service's cache has forgotten the entry by then.
      if (affected) setImmediate(() => this.recheck([...affected]));
    });
    this.stopSweep ??= this.timers.every(SWEEP_MS, () => this.sweep());
    return () => this.remove(entry);
  }

  /** Stops accepting, lets open sessions go on up to `ms`, then closes what is left with 1001 and waits for them to end. */
  async drain(ms: number): Promise<void> {
    this.draining = true;
    if (this.open.size === 0) return;
    await this.whenIdle(ms);
    for (const e of this.open) e.session.close(1001, 'the gateway is shutting down');
    await this.whenIdle(1000);
  }

  private whenIdle(ms: number): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      // Real time: the drain bounds a real shutdown (and a test's teardown), whatever the injected timers do.
      const timer = setTimeout(resolve, ms);
      timer.unref();
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  private remove(entry: Open): void {
    if (!this.open.delete(entry)) return;
    unindex(this.byToken, entry.auth.token.id, entry);
    unindex(this.byCredential, entry.auth.credential.id, entry);
    if (this.open.size > 0) return;
    this.stopSweep?.();
    this.stopSweep = undefined;
    this.unwatch?.();
    this.unwatch = undefined;
    for (const w of this.idleWaiters.splice(0)) w();
  }

  private sweep(): void {
    const now = this.clock.now();
    const stale = !this.feed.isLive() && this.timers.elapsed() - this.lastResolveAll >= SWEEP_MS;
    if (stale) this.lastResolveAll = this.timers.elapsed();
    for (const e of this.open) {
      if (now >= e.auth.token.expiresAt) e.session.close(1008, 'the proxy token expired');
      else if (now - e.session.lastActivity >= this.idleMs) e.session.close(1001, 'idle timeout');
    }
    if (stale) this.recheck([...this.open]);
  }

  /** Resolves each session's token again; one that no longer resolves to the same token closes its session. */
  private recheck(entries: Open[]): void {
    for (const e of entries) {
      if (!this.open.has(e)) continue;
      let resolved: ResolvedToken | undefined | Promise<ResolvedToken | undefined>;
      try {
        resolved = this.tokens.resolve(e.presented);
      } catch {
        continue; // the store is down: the feed's outage rule applies on the next sweep
      }
      const judge = (r: ResolvedToken | undefined): void => {
        if (!r || r.token.id !== e.auth.token.id || r.credential.id !== e.auth.credential.id) e.session.close(1008, 'the proxy token was revoked or its credential deleted');
      };
      if (resolved instanceof Promise) resolved.then(judge, () => {});
      else judge(resolved);
    }
  }
}

function index(map: Map<string, Set<Open>>, key: string, entry: Open): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(entry);
}

function unindex(map: Map<string, Set<Open>>, key: string, entry: Open): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(entry);
  if (set.size === 0) map.delete(key);
}
