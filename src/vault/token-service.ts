/**
 * Proxy tokens: minted for one credential with a ttl (and optional scopes),
 * shown once, stored as SHA-256 only. `resolve` is the proxy's hot lookup:
 * checksum first (a typo never reaches the store), then a bounded LRU by hash,
 * then the store. Revocation and credential deletion drop entries at once here
 * and, through the change feed, within a second everywhere else (while the feed
 * is down, a cached token is trusted one second at most).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import type { Config } from '../settings/config.js';
import { parseDuration } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import { parseScopes } from '../catalog/scopes.js';
import { BAD_CURSOR, isPoolId, type ChangeFeed, type PoolStore, type PoolStrategy, type CredentialStore, type NamedPageQuery, type Page, type RevokedTokenRecord, type TokenRecord, type TokenScopes, type TokenStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { CoalescingCache } from './coalescing-cache.js';
import { endWithin, type Creator } from './authority.js';
import { isWellFormedToken, newId, newToken, sha256Hex } from '../ids.js';
import { parseName } from './names.js';
import { TeamService } from './team-service.js';

/** A token's credential as the hot path needs it. */
export interface ResolvedCredential {
  id: string;
  orgId: string;
  provider: string;
  /** The credential's plain fields, so the hot path sends them with no store read. */
  fields?: Readonly<Record<string, string>>;
}

/** A pooled token's pool: its live members in the pool's order (deleted credentials left out). */
export interface ResolvedPool {
  id: string;
  strategy: PoolStrategy;
  members: ReadonlyArray<ResolvedCredential & { weight: number }>;
  /** Members' cooling ends as stored when the pool was read (the pool service keeps them current after). */
  cooling: Readonly<Record<string, number>>;
}

/** What the auth stage resolves a proxy token to. */
export interface ResolvedToken {
  token: TokenRecord;
  /** The credential whose key is used: a pooled token's first member here, then the member each attempt goes to. */
  credential: ResolvedCredential;
  /** A pooled token's pool. */
  pool?: ResolvedPool;
}

const TOKEN_CACHE_TTL_MS = 60_000;
const TOKEN_CACHE_MAX = 50_000;

/** A token as the API's body and the CLI's flags ask for it: unchecked ttl and scopes (`models`, `paths`, `max_requests`, `rate_limit`). */
export interface MintRequest {
  /** Exactly one of credentialId and poolId (else 400). */
  credentialId?: string | undefined;
  poolId?: string | undefined;
  ttl: unknown;
  scopes: Record<string, unknown>;
  /** Who is minting (`otk_`/`akey_` id, `cli`): recorded on the token, so a minter can list its own. */
  createdBy?: string;
  /** Unchecked: vault/names.ts decides. */
  name?: unknown;
  /** The minting caller's own end: a token that would outlive it is refused (403 forbidden; authority.ts). */
  creator?: Pick<Creator, 'expiresAt'>;
  /** The source's end (an exchange's trust policy): the token's end is cut to it. */
  endsBy?: number;
  /**
   * The team and member the token is bound to (checked by the team service: its credentials and pools, its max_ttl).
   * A personal token's member (`usr_…`) revokes it when removed.
   */
  teamId?: string | undefined;
  memberId?: string | undefined;
}

@injectable()
export class TokenService {
  /** Resolved tokens by SHA-256 of the token, indexed by token id and grouped by credential; its hits and misses are exported as metrics. */
  readonly cache: CoalescingCache<ResolvedToken>;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.TokenStore) private readonly store: TokenStore,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
    @inject(Symbols.Timers) timers: Timers,
    @inject(Symbols.PoolStore) private readonly pools: PoolStore,
    @inject(TeamService) private readonly teams: TeamService,
  ) {
    this.cache = new CoalescingCache<ResolvedToken>({
      now: () => timers.elapsed(),
      max: TOKEN_CACHE_MAX,
      ttlMs: TOKEN_CACHE_TTL_MS,
      tagsOf: (r) => ({ id: r.token.id, group: r.pool?.id ?? r.credential.id }),
      isLive: () => feed.isLive(),
    });
    // O(1) per event: a credential's deletion arrives as one `credential` change, however many tokens it had.
    feed.watch((c) => {
      if (c.kind === 'token') this.cache.forgetId(c.id);
      else if (c.kind === 'credential' || c.kind === 'pool') this.cache.forgetGroup(c.id);
    });
  }

  parseTtl(ttl: unknown): number {
    if (typeof ttl !== 'string') throw Errors.invalidTtl('`ttl` is required: a positive integer and one unit of s, m, h, d, such as "15m".');
    const ms = parseDuration(ttl);
    if (ms === undefined) throw Errors.invalidTtl('`ttl` must be a positive integer without leading zeros and one unit of s, m, h, d, such as "15m".');
    if (ms > this.config.maxTtlMs) throw Errors.invalidTtl(`\`ttl\` may be at most ${this.config.maxTtlMs / 1000} seconds (KEYWARD_MAX_TTL).`);
    return ms;
  }

  /**
   * Mints for the API and the CLI alike: the ttl grammar and bound, then the credential (404), then the
   * scopes against the credential's provider (a path scope must be reachable on its routes).
   */
  async mintFor(orgId: string, request: MintRequest): Promise<{ record: TokenRecord; token: string }> {
    if ((request.credentialId === undefined) === (request.poolId === undefined)) {
      throw Errors.invalidRequest('Exactly one of `credential_id` and `pool_id` is required.', request.credentialId === undefined ? 'credential_id' : 'pool_id');
    }
    const ttlMs = this.parseTtl(request.ttl);
    const name = parseName(request.name) ?? undefined;
    const bound = request.poolId !== undefined
      ? await this.pools.getPool(orgId, request.poolId).then((p) => p && { id: p.id, provider: p.provider })
      : await this.credentials.getCredential(orgId, request.credentialId!);
    if (!bound) throw Errors.notFound(request.poolId !== undefined ? 'No such pool.' : 'No such credential.');
    const provider = this.providers.get(bound.provider);
    if (!provider) throw Errors.unknownProvider(bound.provider);
    const binding = { teamId: request.teamId, memberId: request.memberId };
    await this.teams.checkMint(orgId, binding, bound.id, ttlMs);
    return this.mint(orgId, bound.id, ttlMs, parseScopes(request.scopes, provider), request.createdBy, { ...request, name });
  }

  /** A token that ends after `ttlMs`, and never after its creator (refused) nor its source (cut): authority never outlives its source. */
  async mint(orgId: string, credentialId: string, ttlMs: number, scopes: TokenScopes, createdBy?: string, bounds: Pick<MintRequest, 'creator' | 'endsBy' | 'teamId' | 'memberId'> & { name?: string | undefined } = {}): Promise<{ record: TokenRecord; token: string }> {
    const name = bounds.name;
    const createdAt = this.clock.now();
    const expiresAt = Math.min(endWithin(bounds.creator ?? { expiresAt: null }, createdAt + ttlMs, 'A token')!, bounds.endsBy ?? Infinity);
    if (expiresAt <= createdAt) throw Errors.forbidden('The source of this token has already ended.');
    const token = newToken('ptok');
    const record: TokenRecord = {
      id: newId('tok'), orgId, credentialId, tokenHash: sha256Hex(token), scopes, createdAt, expiresAt,
      ...(createdBy !== undefined ? { createdBy } : {}), ...(name !== undefined ? { name } : {}),
      ...(bounds.teamId !== undefined ? { teamId: bounds.teamId } : {}), ...(bounds.memberId !== undefined ? { memberId: bounds.memberId } : {}),
    };
    if ((await this.store.createToken(record)) === 'no_credential') throw Errors.notFound(isPoolId(credentialId) ? 'No such pool.' : 'No such credential.');
    return { record, token };
  }

  async get(orgId: string, id: string): Promise<TokenRecord> {
    const t = await this.store.getToken(orgId, id);
    if (!t) throw Errors.notFound('No such token.');
    return t;
  }

  /** `createdBy`: only the tokens that caller minted (a minter's list). */
  async list(orgId: string, page: NamedPageQuery, createdBy?: string): Promise<Page<TokenRecord>> {
    const p = await this.store.listTokens(orgId, page, createdBy);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no token of this organisation.', 'starting_after');
    return p;
  }

  /** Revoked tokens, most recently revoked first (a cursor is a revoked token's id). */
  async listRevoked(orgId: string, page: NamedPageQuery, createdBy?: string): Promise<Page<RevokedTokenRecord>> {
    const p = await this.store.listRevokedTokens(orgId, page, createdBy);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no revoked token of this organisation.', 'starting_after');
    return p;
  }

  /** `by`: who revokes (the audit actor). The token is gone from the lookup path at once; what is kept of it is returned. */
  async revoke(orgId: string, id: string, by: string): Promise<RevokedTokenRecord> {
    const revoked = await this.store.revokeToken(orgId, id, this.clock.now(), by);
    if (!revoked) throw Errors.notFound('No such token.');
    this.cache.forgetId(id);
    return revoked;
  }

  /** Names (a string) or unnames (null) a live token; the name is checked here whoever calls. */
  async rename(orgId: string, id: string, name: unknown): Promise<TokenRecord> {
    const checked = parseName(name) ?? null;
    if (!(await this.store.setTokenName(orgId, id, checked))) throw Errors.notFound('No such token.');
    return this.get(orgId, id);
  }

  /** Drops every cached token of a credential (it was deleted on this instance: refuse them at once, not at the next feed poll). */
  forgetCredential(credentialId: string): void {
    this.cache.forgetGroup(credentialId);
  }

  isActive(t: TokenRecord): boolean {
    return this.clock.now() < t.expiresAt;
  }

  /**
   * The token's record and credential if `presented` is a live proxy token now; undefined otherwise. At once
   * (no promise) when the token is cached, the usual case.
   */
  resolve(presented: string): ResolvedToken | undefined | Promise<ResolvedToken | undefined> {
    if (!isWellFormedToken('ptok', presented)) return undefined;
    const hash = sha256Hex(presented);
    const cached = this.cache.get(hash, () => this.load(hash));
    return cached instanceof Promise ? cached.then((r) => this.live(r)) : this.live(cached);
  }

  private live(resolved: ResolvedToken | undefined): ResolvedToken | undefined {
    return !resolved || this.clock.now() >= resolved.token.expiresAt ? undefined : resolved;
  }

  private async load(hash: string): Promise<ResolvedToken | undefined> {
    const token = await this.store.findTokenByHash(hash);
    if (!token) return undefined;
    if (isPoolId(token.credentialId)) return this.loadPool(token);
    const credential = await this.credentials.getCredential(token.orgId, token.credentialId);
    if (!credential) return undefined;
    // The plain fields ride along (account-selection headers), so a proxied request needs no other read.
    return { token, credential: { id: credential.id, orgId: credential.orgId, provider: credential.provider, fields: credential.fields ?? {} } };
  }

  /** A pooled token: its pool and every member that still exists (none: the token resolves to nothing). */
  private async loadPool(token: TokenRecord): Promise<ResolvedToken | undefined> {
    const pool = await this.pools.getPool(token.orgId, token.credentialId);
    if (!pool) return undefined;
    const found = await Promise.all(pool.members.map((m) => this.credentials.getCredential(token.orgId, m.credentialId)));
    const members = pool.members.flatMap((m, i) => {
      const c = found[i];
      return c ? [{ id: c.id, orgId: c.orgId, provider: c.provider, fields: c.fields ?? {}, weight: m.weight }] : [];
    });
    if (members.length === 0) return undefined;
    return { token, credential: members[0]!, pool: { id: pool.id, strategy: pool.strategy, members, cooling: pool.cooling } };
  }
}
