/**
 * Pools (src/store/pool-port.ts): CRUD for the admin API and the CLI, and each member's health as this
 * deployment sees it. A pool holds 1–16 distinct credentials of this organisation, all of one provider
 * (members of two providers → 400). Health has two parts:
 * - cooling: a member that answered 429/529 (for its Retry-After, bounded) or failed (5 s) is skipped until
 *   then. It is written to the store with a `pool` change, so every instance skips it within a second; the
 *   writing instance skips it at once. Only a cooling that starts (or lengthens) writes: not per request.
 * - recent outcomes (429s, 5xxs, connection errors) counted on this instance over the last five minutes.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import { BAD_CURSOR, type ChangeFeed, type CredentialStore, type NamedPageQuery, type Page, type PoolMember, type PoolRecord, type PoolStore, type PoolStrategy } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { parseName } from './names.js';
import { TokenService } from './token-service.js';

export const POOL_MEMBERS_MAX = 16;
/** Recent outcomes are counted over this window (two halves: the current one and the one before). */
const RECENT_MS = 5 * 60_000;

/** A member's recent outcomes on this instance. */
export interface RecentOutcomes {
  '429': number;
  '5xx': number;
  errors: number;
}
export type Outcome = keyof RecentOutcomes;

/** What POST /v1/pools and PATCH take, checked by the schema already (names and shapes); the rest here. */
export interface PoolInput {
  name?: string | null;
  strategy?: PoolStrategy;
  members?: Array<{ credential_id: string; weight?: number }>;
}

const emptyOutcomes = (): RecentOutcomes => ({ '429': 0, '5xx': 0, errors: 0 });

@injectable()
export class PoolService {
  /** Cooling ends by pool, then credential (epoch ms), as this instance knows them. */
  private readonly cooling = new Map<string, Map<string, number>>();
  /** Recent outcomes by `pool|credential`: this half-window's and the one before. */
  private recent = new Map<string, RecentOutcomes>();
  private previous = new Map<string, RecentOutcomes>();
  private halfEnds = 0;
  /** The organisation of each pool routed over here (track). */
  private readonly orgs = new Map<string, string>();

  constructor(
    @inject(Symbols.PoolStore) private readonly store: PoolStore,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {
    // Another instance cooled a member (or changed the pool): re-read the pools this instance routes over.
    feed.watch((c) => {
      if (c.kind === 'pool' && this.orgs.has(c.id)) void this.refresh(c.id);
    });
  }

  async create(orgId: string, input: PoolInput): Promise<PoolRecord> {
    const members = await this.checkMembers(orgId, input.members ?? []);
    const now = this.clock.now();
    const name = parseName(input.name) ?? undefined;
    const record: PoolRecord = {
      id: newId('pool'), orgId, provider: members.provider, strategy: input.strategy ?? 'round_robin', members: members.list, cooling: {},
      createdAt: now, updatedAt: now, ...(name !== undefined ? { name } : {}),
    };
    await this.store.createPool(record);
    return record;
  }

  async get(orgId: string, id: string): Promise<PoolRecord> {
    const p = await this.store.getPool(orgId, id);
    if (!p) throw Errors.notFound('No such pool.');
    return p;
  }

  async list(orgId: string, page: NamedPageQuery): Promise<Page<PoolRecord>> {
    const p = await this.store.listPools(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no pool of this organisation.', 'starting_after');
    return p;
  }

  /** A PATCH: name, strategy, members (the members' provider must stay the pool's). */
  async update(orgId: string, id: string, input: PoolInput): Promise<PoolRecord> {
    const current = await this.get(orgId, id);
    const members = input.members === undefined ? undefined : await this.checkMembers(orgId, input.members, current.provider);
    const name = parseName(input.name);
    const updated = await this.store.updatePool(orgId, id, {
      updatedAt: this.clock.now(), ...(name !== undefined ? { name } : {}), ...(input.strategy ? { strategy: input.strategy } : {}),
      ...(members ? { members: members.list } : {}),
    });
    if (!updated) throw Errors.notFound('No such pool.');
    this.tokens.forgetCredential(id);
    return updated;
  }

  /** Deletes the pool and its tokens; what it was (for the audit record's name). */
  async delete(orgId: string, id: string): Promise<PoolRecord> {
    const current = await this.get(orgId, id);
    if (!(await this.store.deletePool(orgId, id))) throw Errors.notFound('No such pool.');
    // Its tokens are refused here at once, not at the next feed poll (the feed tells the other instances).
    this.tokens.forgetCredential(id);
    this.cooling.delete(id);
    return current;
  }

  /** When `credentialId`'s cooling ends in `pool` (0: not cooling), as this instance knows it. */
  coolingUntil(poolId: string, credentialId: string, now = this.clock.now()): number {
    const until = this.cooling.get(poolId)?.get(credentialId) ?? 0;
    return until > now ? until : 0;
  }

  /** Cools a member until `until` here at once and, when that starts or lengthens it, everywhere (one store write). */
  cool(orgId: string, poolId: string, credentialId: string, until: number): void {
    let known = this.cooling.get(poolId);
    if (!known) this.cooling.set(poolId, (known = new Map()));
    if ((known.get(credentialId) ?? 0) >= until) return;
    known.set(credentialId, until);
    this.store.coolPoolMember(orgId, poolId, credentialId, until).catch((err: unknown) => {
      this.log.warn({ err: String((err as Error)?.message).slice(0, 200), pool: poolId, credential: credentialId }, 'could not share a pool member\'s cooling');
    });
  }

  /** Counts an attempt's outcome for the member's health. */
  record(poolId: string, credentialId: string, outcome: Outcome): void {
    this.rotate();
    const key = `${poolId}|${credentialId}`;
    let r = this.recent.get(key);
    if (!r) this.recent.set(key, (r = emptyOutcomes()));
    r[outcome]++;
  }

  /** A member's health: its cooling end (null: not cooling) and its recent outcomes on this instance. */
  health(pool: PoolRecord, credentialId: string): { coolingUntil: number | null; recent: RecentOutcomes } {
    this.rotate();
    const key = `${pool.id}|${credentialId}`;
    const a = this.recent.get(key) ?? emptyOutcomes();
    const b = this.previous.get(key) ?? emptyOutcomes();
    const stored = pool.cooling[credentialId] ?? 0;
    const until = Math.max(stored, this.cooling.get(pool.id)?.get(credentialId) ?? 0);
    return { coolingUntil: until > this.clock.now() ? until : null, recent: { '429': a['429'] + b['429'], '5xx': a['5xx'] + b['5xx'], errors: a.errors + b.errors } };
  }

  private rotate(): void {
    const now = this.clock.now();
    if (now < this.halfEnds) return;
    this.previous = now - this.halfEnds < RECENT_MS / 2 ? this.recent : new Map();
    this.recent = new Map();
    this.halfEnds = now + RECENT_MS / 2;
  }

  /** Re-reads a pool's cooling after a change (a pool gone: forgotten). */
  private async refresh(id: string): Promise<void> {
    const orgId = this.orgs.get(id);
    if (!orgId) return;
    try {
      const p = await this.store.getPool(orgId, id);
      if (!p) {
        this.cooling.delete(id);
        this.orgs.delete(id);
        return;
      }
      const mine = this.cooling.get(id) ?? new Map<string, number>();
      for (const [cred, until] of Object.entries(p.cooling)) if ((mine.get(cred) ?? 0) < until) mine.set(cred, until);
      this.cooling.set(id, mine);
    } catch (err) {
      this.log.warn({ err: String((err as Error)?.message).slice(0, 200), pool: id }, 'could not re-read a pool after a change');
    }
  }

  /** A pool this instance routes over: its organisation kept for re-reads after a change, its stored cooling known. */
  track(poolId: string, orgId: string, cooling: PoolRecord['cooling']): void {
    if (this.orgs.has(poolId)) return;
    this.orgs.set(poolId, orgId);
    const known = this.cooling.get(poolId) ?? new Map<string, number>();
    for (const [cred, until] of Object.entries(cooling)) if ((known.get(cred) ?? 0) < until) known.set(cred, until);
    this.cooling.set(poolId, known);
  }

  /** Members exist in this organisation, are distinct, and share one provider (`provider`: the pool's, on a PATCH). */
  private async checkMembers(orgId: string, members: NonNullable<PoolInput['members']>, provider?: string): Promise<{ provider: string; list: PoolMember[] }> {
    if (members.length < 1 || members.length > POOL_MEMBERS_MAX) throw Errors.invalidRequest(`\`members\` must hold 1 to ${POOL_MEMBERS_MAX} credentials.`, 'members');
    const ids = new Set(members.map((m) => m.credential_id));
    if (ids.size !== members.length) throw Errors.invalidRequest('`members` must not name a credential twice.', 'members');
    const records = await Promise.all(members.map((m) => this.credentials.getCredential(orgId, m.credential_id)));
    const missing = records.findIndex((r) => r === undefined);
    if (missing !== -1) throw Errors.notFound(`No such credential: ${members[missing]!.credential_id}.`);
    const providers = new Set(records.map((r) => r!.provider));
    if (providers.size > 1) throw Errors.invalidRequest(`A pool's members share one provider; these are of ${[...providers].sort().join(' and ')}.`, 'members');
    const theirs = records[0]!.provider;
    if (provider !== undefined && theirs !== provider) throw Errors.invalidRequest(`This pool's members are ${provider} credentials; these are ${theirs}.`, 'members');
    return { provider: theirs, list: members.map((m) => ({ credentialId: m.credential_id, weight: m.weight ?? 1 })) };
  }
}
