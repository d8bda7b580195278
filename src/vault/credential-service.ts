/**
 * Stored provider keys: create (sealed, within the free-tier count), list, get,
 * delete (its tokens with it), rotate in place, and `keyFor`, the proxy's
 * decrypted-key lookup: a bounded LRU with a short TTL in front of store + KMS,
 * with concurrent misses coalesced, dropped at once on local changes and
 * within a second on changes made elsewhere (the store's change feed).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import type { Logger } from '../log.js';
import { UnwrapFailed } from '../kms/key-wrapper.js';
import { BAD_CURSOR, type ChangeFeed, type CredentialRecord, type CredentialStore, type Page, type PageQuery } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Envelope, type CredentialRef } from './envelope.js';
import { newId } from '../ids.js';
import { CoalescingCache } from './coalescing-cache.js';
import { TokenService } from './token-service.js';

const KEY_CACHE_TTL_MS = 5 * 60_000;
const KEY_CACHE_MAX = 10_000;

/** Printable ASCII without spaces: a key goes into an HTTP header, so CR/LF can never be smuggled in. */
const API_KEY = /^[\x21-\x7e]{8,4096}$/;
/** A plain credential field's value: it is sent in a header too, so the same rule, shorter. */
const PLAIN_FIELD = /^[\x21-\x7e]{1,200}$/;

export const keyHint = (apiKey: string): string => `…${apiKey.slice(-4)}`;

@injectable()
export class CredentialService {
  /** Decrypted keys by credential id; its hits and misses are exported as metrics. */
  readonly keys: CoalescingCache<string>;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.CredentialStore) private readonly store: CredentialStore,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
    @inject(Envelope) private readonly envelope: Envelope,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {
    // While the feed is down a decrypted key is trusted one second at most (a rotation elsewhere must land).
    this.keys = new CoalescingCache<string>({ max: KEY_CACHE_MAX, ttlMs: KEY_CACHE_TTL_MS, isLive: () => feed.isLive() });
    feed.watch((c) => {
      if (c.kind === 'credential') this.forget(c.id);
    });
  }

  validateApiKey(apiKey: unknown): string {
    if (typeof apiKey !== 'string' || !API_KEY.test(apiKey)) {
      throw Errors.invalidRequest('`api_key` must be a string of 8 to 4096 printable characters without spaces.', 'api_key');
    }
    return apiKey;
  }

  /**
   * The plain fields `provider` declares, read from a create body: every key of `input` other
   * than `common` must be one of them (else 400 naming it). Unknown provider → 400 unknown_provider.
   */
  parseFields(provider: string, input: Record<string, unknown>, common: readonly string[]): Record<string, string> {
    const p = this.providers.get(provider);
    if (!p) throw Errors.unknownProvider(provider);
    const declared = p.credentialFields ?? [];
    const fields: Record<string, string> = {};
    for (const [name, value] of Object.entries(input)) {
      if (common.includes(name)) continue;
      // A list, not a keyed lookup: a body's `constructor` or `__proto__` finds nothing.
      if (!declared.some((f) => f.name === name)) {
        const accepted = [...common, ...declared.map((f) => f.name)].join(', ');
        throw Errors.invalidRequest(`Unknown field ${JSON.stringify(name.slice(0, 64))} for provider ${provider} (it takes ${accepted}).`, name.slice(0, 64));
      }
      if (typeof value !== 'string' || !PLAIN_FIELD.test(value)) {
        throw Errors.invalidRequest(`\`${name}\` must be a string of 1 to 200 printable characters without spaces.`, name);
      }
      fields[name] = value;
    }
    return fields;
  }

  async create(orgId: string, provider: string, apiKey: string, fields: Record<string, string> = {}): Promise<CredentialRecord> {
    if (!this.providers.get(provider)) throw Errors.unknownProvider(provider);
    const now = this.clock.now();
    const ref: CredentialRef = { orgId, id: newId('cred'), provider };
    const sealed = await this.envelope.seal(ref, apiKey);
    const record: CredentialRecord = { ...ref, ...sealed, keyHint: keyHint(apiKey), fields, createdAt: now, updatedAt: now };
    const outcome = await this.store.createCredential(record, this.config.freeCredentials);
    if (outcome === 'limit') throw Errors.limitExceeded(this.config.freeCredentials);
    return record;
  }

  async get(orgId: string, id: string): Promise<CredentialRecord> {
    const c = await this.store.getCredential(orgId, id);
    if (!c) throw Errors.notFound('No such credential.');
    return c;
  }

  async list(orgId: string, page: PageQuery): Promise<Page<CredentialRecord>> {
    const p = await this.store.listCredentials(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no credential of this organisation.', 'starting_after');
    return p;
  }

  async delete(orgId: string, id: string): Promise<void> {
    if (!(await this.store.deleteCredential(orgId, id))) throw Errors.notFound('No such credential.');
    this.forget(id);
    // Its tokens died with it: this instance refuses them now (others within a second, by the change feed).
    this.tokens.forgetCredential(id);
  }

  /** Replaces the key in place: same id, its tokens keep working with the new key at once. */
  async rotate(orgId: string, id: string, apiKey: string): Promise<CredentialRecord> {
    const current = await this.get(orgId, id);
    const sealed = await this.envelope.seal(current, apiKey);
    const now = this.clock.now();
    if (!(await this.store.replaceCredentialKey(orgId, id, sealed, keyHint(apiKey), now))) throw Errors.notFound('No such credential.');
    this.forget(id);
    return { ...current, ...sealed, keyHint: keyHint(apiKey), updatedAt: now };
  }

  /** The plaintext key for the proxy. Fails closed: a record that does not open is never served. */
  async keyFor(ref: CredentialRef): Promise<string> {
    return (await this.keys.get(ref.id, () => this.load(ref)))!;
  }

  private async load(ref: CredentialRef): Promise<string> {
    const record = await this.store.getCredential(ref.orgId, ref.id);
    // Deleted between token resolution and here: the token is dead too.
    if (!record || record.provider !== ref.provider) throw Errors.invalidToken();
    let key: string;
    try {
      key = await this.envelope.open(record, record);
    } catch (err) {
      if (err instanceof UnwrapFailed) {
        this.log.error({ credential: ref.id, org: ref.orgId }, 'credential failed its integrity check; refusing to use it');
        throw Errors.unavailable();
      }
      throw err;
    }
    return key;
  }

  private forget(id: string): void {
    this.keys.forgetKey(id);
  }

  /** Drops every decrypted key (tests, shutdown). */
  clear(): void {
    this.keys.clear();
  }
}
