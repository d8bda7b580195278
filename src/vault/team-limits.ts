/**
 * Each team's limits and each member's budget as the proxy needs them: in memory, so a proxied request of a
 * team's token reads no store at steady state (OrgLimits' rules, org-limits.ts). `peekTeam` / `peekMember`
 * answer synchronously (undefined: not known here yet); `team` / `member` load once per key (concurrent
 * callers share the load). A change (PATCH /v1/teams/:id, a deletion, a member's budget) is announced on the
 * change feed (`team`, `member`), which drops the entry on every instance within a second; while the feed is
 * down an entry is trusted one second at most, and a minute at most in any case. A load begun before a drop
 * is served once and not kept. Bounded: the least recently used entries go first.
 *
 * A deleted team reads as GONE: its tokens are refused at once on every instance (their records are deleted
 * with the team, but a token cached by another instance would otherwise live until its cache entry ends).
 */
import { inject, injectable } from 'tsyringe';
import { boundedLru } from '../lru.js';
import type { Timers } from '../clock.js';
import type { ChangeFeed, TeamStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';

const TTL_MS = 60_000;
const UNTRUSTED_MS = 1000;
const MAX_ENTRIES = 50_000;

/** A team's limits: µ$ per month and tokens per rolling minute (null: none). */
export interface TeamLimit {
  readonly budgetMicros: number | null;
  readonly tokensPerMinute: number | null;
}

/** A team that no longer exists. */
export const GONE = null;

/** One cached value per key, dropped by a change, trusted as OrgLimits trusts its entries. */
class LimitCache<V> {
  private readonly entries = boundedLru<string, { value: V; loadedAt: number }>(MAX_ENTRIES);
  private readonly loads = new Map<string, Promise<V>>();
  private generation = 0;

  constructor(private readonly feed: ChangeFeed, private readonly timers: Timers) {}

  peek(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    const age = this.timers.elapsed() - e.loadedAt;
    if (age >= TTL_MS || (age >= UNTRUSTED_MS && !this.feed.isLive())) return undefined;
    return e.value;
  }

  get(key: string, load: () => Promise<V>): Promise<V> {
    const known = this.peek(key);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.loads.get(key);
    if (!pending) {
      const generation = this.generation;
      const promise = load().then((value) => {
        if (this.generation === generation) this.entries.set(key, { value, loadedAt: this.timers.elapsed() });
        return value;
      }).finally(() => {
        if (this.loads.get(key) === promise) this.loads.delete(key);
      });
      this.loads.set(key, (pending = promise));
    }
    return pending;
  }

  forget(key: string): void {
    this.generation++;
    this.entries.delete(key);
    this.loads.delete(key);
  }

  /** Drops every entry whose key `match` picks (a member's budget is keyed by organisation and member). */
  forgetWhere(match: (key: string) => boolean): void {
    this.generation++;
    for (const key of [...this.entries.keys()]) if (match(key)) this.entries.delete(key);
    for (const key of [...this.loads.keys()]) if (match(key)) this.loads.delete(key);
  }
}

const memberKey = (orgId: string, memberId: string): string => `${orgId}|${memberId}`;

@injectable()
export class TeamLimits {
  private readonly teams: LimitCache<TeamLimit | typeof GONE>;
  private readonly members: LimitCache<number | null>;

  constructor(
    @inject(Symbols.TeamStore) private readonly store: TeamStore,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
    @inject(Symbols.Timers) timers: Timers,
  ) {
    this.teams = new LimitCache(feed, timers);
    this.members = new LimitCache(feed, timers);
    feed.watch((c) => {
      if (c.kind === 'team') this.teams.forget(c.id);
      else if (c.kind === 'member') this.forgetMember(c.id);
    });
  }

  /** The team's limits, GONE (deleted), or undefined when this instance does not know them now (then call `team`). */
  peekTeam(teamId: string): TeamLimit | typeof GONE | undefined {
    return this.teams.peek(teamId);
  }

  team(orgId: string, teamId: string): Promise<TeamLimit | typeof GONE> {
    return this.teams.get(teamId, async () => {
      const t = await this.store.getTeam(orgId, teamId);
      return t ? { budgetMicros: t.budgetMicros, tokensPerMinute: t.tokensPerMinute } : GONE;
    });
  }

  /** The member's monthly budget in µ$ (null: none), or undefined when not known here now (then call `member`). */
  peekMember(orgId: string, memberId: string): number | null | undefined {
    return this.members.peek(memberKey(orgId, memberId));
  }

  member(orgId: string, memberId: string): Promise<number | null> {
    return this.members.get(memberKey(orgId, memberId), () => this.store.getMemberBudget(orgId, memberId));
  }

  /** The team changed (here, or anywhere through the feed). */
  forgetTeam(teamId: string): void {
    this.teams.forget(teamId);
  }

  /** The member's budget changed (here, or anywhere through the feed). */
  forgetMember(memberId: string): void {
    this.members.forgetWhere((key) => key.endsWith(`|${memberId}`));
  }
}
