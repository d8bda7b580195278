/**
 * Stored provider credentials: create (every secret field sealed together, the
 * plain fields in clear, within the free-tier count), list, get, delete (its
 * tokens with it), rotate the secrets in place, and `secretsFor`, the proxy's
 * decrypted-credential lookup: a bounded LRU with a short TTL in front of
 * store + KMS, with concurrent misses coalesced, dropped at once on local
 * changes and within a second on changes made elsewhere (the store's change feed).
 * Which fields a credential takes is its provider's declaration (catalog).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock, Timers } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { Provider, ProviderRegistry } from '../catalog/registry.js';
import { isFederated, type CredentialSecrets } from '../catalog/provider.js';
import { keyHint, parseCredentialInput, parseRotateInput } from '../catalog/credential-fields.js';
import { SecretsFormatError, decodeSecrets, encodeSecrets } from './secret-encoding.js';
import type { Logger } from '../log.js';
import { UnwrapFailed } from '../kms/key-wrapper.js';
import { BAD_CURSOR, type ChangeFeed, type CredentialRecord, type CredentialStore, type NamedPageQuery, type Page } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Envelope, type CredentialRef } from './envelope.js';
import { newId } from '../ids.js';
import { CoalescingCache } from './coalescing-cache.js';
import { parseName } from './names.js';
import { TokenService } from './token-service.js';
import { isOAuthCredential, parseOAuthCredentialInput, parseOAuthRotateInput } from './oauth-credential.js';
import type { OAuthConnectionStore } from '../store/oauth-port.js';

const KEY_CACHE_TTL_MS = 5 * 60_000;
const KEY_CACHE_MAX = 10_000;


/**
 * The credential as a request of a member's token uses it: `owner.memberId` names the member, so a per-member
 * upstream OAuth credential's signer picks that member's own connection. The same object without a member.
 */
export function actingFor(credential: CredentialSecrets, memberId: string | undefined): CredentialSecrets {
  if (memberId === undefined || credential.owner === undefined || credential.owner.memberId === memberId) return credential;
  return Object.freeze({ ...credential, owner: Object.freeze({ ...credential.owner, memberId }) });
}

@injectable()
export class CredentialService {
  /** Decrypted credentials (secret and plain values) by credential id; its hits and misses are exported as metrics. */
  readonly keys: CoalescingCache<CredentialSecrets>;

  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.CredentialStore) private readonly store: CredentialStore,
    @inject(Symbols.ChangeFeed) feed: ChangeFeed,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
    @inject(Envelope) private readonly envelope: Envelope,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(Symbols.Timers) timers: Timers,
    @inject(Symbols.OAuthConnectionStore) private readonly connections: OAuthConnectionStore,
  ) {
    // While the feed is down a decrypted key is trusted one second at most (a rotation elsewhere must land).
    this.keys = new CoalescingCache<CredentialSecrets>({ max: KEY_CACHE_MAX, ttlMs: KEY_CACHE_TTL_MS, isLive: () => feed.isLive(), now: () => timers.elapsed() });
    feed.watch((c) => {
      if (c.kind === 'credential') this.forget(c.id);
    });
  }

  /**
   * A create body → the credential's secret and plain values, as `provider` declares its fields: every key
   * other than `provider` must be one (else 400 naming it), every field not optional must be there.
   * Unknown provider → 400 unknown_provider.
   */
  parseCredentialInput(provider: string, body: Readonly<Record<string, unknown>>): CredentialSecrets {
    return parseCredentialInput(this.provider(provider), body, ['provider', 'name']);
  }

  /**
   * `secrets`: the secret fields, or (a key-based provider, the CLI) the main secret alone; `plain`: the plain
   * fields; `name`: what the organisation calls it (vault/names.ts). Checked against the provider's declaration whoever calls.
   */
  async create(
    orgId: string, provider: string, secrets: string | Readonly<Record<string, string>>, plain: Readonly<Record<string, string>> = {}, name?: unknown,
  ): Promise<CredentialRecord> {
    const p = this.provider(provider);
    const checkedName = parseName(name) ?? undefined;
    const values = parseCredentialInput(p, { ...plain, ...(typeof secrets === 'string' ? { [p.mainSecret]: secrets } : secrets) });
    // Its signer will sign as this gateway: refused now rather than at every request.
    if (isFederated(values) && this.config.issuerUrl === undefined) {
      throw Errors.invalidRequest('This gateway is not an OpenID Connect issuer (its operator has not set KEYWARD_ISSUER_URL), so it cannot hold a federated credential.', 'federated');
    }
    return this.insert(orgId, provider, values, keyHint(p, values.secrets), checkedName);
  }

  /**
   * An upstream OAuth credential (`kind: oauth`, vault/oauth-credential.ts) of an MCP or tool provider: its
   * client secret sealed, its endpoints, client id and scopes plain. It holds no tokens until it is connected.
   */
  async createOAuth(orgId: string, provider: string, body: Readonly<Record<string, unknown>>, name?: unknown): Promise<CredentialRecord> {
    const p = this.provider(provider);
    if (p.kind !== 'mcp' && p.kind !== 'tool') throw Errors.invalidRequest(`An OAuth credential is for an MCP server or a tool API; ${provider} is a model API.`, 'kind');
    const checkedName = parseName(name) ?? undefined;
    const values = parseOAuthCredentialInput(body, this.config.oidcAllowHttpLoopback);
    return this.insert(orgId, provider, values, `…${(values.secrets.client_secret ?? '').slice(-4)}`, checkedName);
  }

  private async insert(orgId: string, provider: string, values: CredentialSecrets, hint: string, name: string | undefined): Promise<CredentialRecord> {
    const now = this.clock.now();
    const ref: CredentialRef = { orgId, id: newId('cred'), provider };
    const sealed = await this.envelope.seal(ref, encodeSecrets(values.secrets));
    const record: CredentialRecord = {
      ...ref, ...sealed, keyHint: hint, fields: { ...values.plain }, ...(name !== undefined ? { name } : {}), createdAt: now, updatedAt: now,
    };
    const outcome = await this.store.createCredential(record, this.config.freeCredentials);
    if (outcome === 'limit') throw Errors.limitExceeded(this.config.freeCredentials);
    return record;
  }

  async get(orgId: string, id: string): Promise<CredentialRecord> {
    const c = await this.store.getCredential(orgId, id);
    if (!c) throw Errors.notFound('No such credential.');
    return c;
  }

  async list(orgId: string, page: NamedPageQuery): Promise<Page<CredentialRecord>> {
    const p = await this.store.listCredentials(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no credential of this organisation.', 'starting_after');
    return p;
  }

  /** Names (a string) or unnames (null) a credential. */
  async rename(orgId: string, id: string, name: unknown): Promise<CredentialRecord> {
    if (!(await this.store.setCredentialName(orgId, id, parseName(name) ?? null))) throw Errors.notFound('No such credential.');
    return this.get(orgId, id);
  }

  /** Its name, if it had one (for the audit trail). A delete that died part-way is finished (the store's deleteCredential) though it answers 404. */
  async delete(orgId: string, id: string): Promise<{ name?: string }> {
    const c = await this.store.getCredential(orgId, id);
    if (!(await this.store.deleteCredential(orgId, id))) throw Errors.notFound('No such credential.');
    this.forget(id);
    // An OAuth credential's connections (sealed refresh tokens) go with it.
    if (isOAuthCredential(c?.fields)) await this.connections.deleteOAuthConnections(orgId, id);
    // Its tokens died with it: this instance refuses them now (others within a second, by the change feed).
    this.tokens.forgetCredential(id);
    return c?.name !== undefined ? { name: c.name } : {};
  }

  /**
   * Replaces the secrets in place: same id, its tokens keep working with the new ones at once. `input`: a
   * rotate body (the secret fields; plain fields are fixed at creation), or the main secret alone.
   */
  async rotate(orgId: string, id: string, input: string | Readonly<Record<string, unknown>>): Promise<CredentialRecord> {
    const current = await this.get(orgId, id);
    const p = this.provider(current.provider);
    const oauth = isOAuthCredential(current.fields);
    const secrets = oauth
      ? parseOAuthRotateInput(typeof input === 'string' ? { client_secret: input } : input)
      : parseRotateInput(p, typeof input === 'string' ? { [p.mainSecret]: input } : input, current.fields ?? {});
    const sealed = await this.envelope.seal(current, encodeSecrets(secrets));
    const now = this.clock.now();
    const hint = oauth ? `…${secrets.client_secret!.slice(-4)}` : keyHint(p, secrets);
    if (!(await this.store.replaceCredentialKey(orgId, id, sealed, hint, now))) throw Errors.notFound('No such credential.');
    this.forget(id);
    return { ...current, ...sealed, keyHint: hint, updatedAt: now };
  }

  /**
   * The credential's secret and plain values for the proxy. Fails closed: a record that does not open is never
   * served. At once (no promise) when they are cached, the usual case.
   */
  secretsFor(ref: CredentialRef): CredentialSecrets | Promise<CredentialSecrets> {
    return this.keys.get(ref.id, () => this.load(ref)) as CredentialSecrets | Promise<CredentialSecrets>;
  }

  /** The main secret alone (a key-based provider's `api_key`). */
  async keyFor(ref: CredentialRef): Promise<string> {
    const { secrets } = await this.secretsFor(ref);
    const main = this.providers.get(ref.provider)?.mainSecret ?? 'api_key';
    return secrets[main] ?? Object.values(secrets)[0]!;
  }

  private async load(ref: CredentialRef): Promise<CredentialSecrets> {
    const record = await this.store.getCredential(ref.orgId, ref.id);
    // Deleted between token resolution and here: the token is dead too.
    if (!record || record.provider !== ref.provider) throw Errors.invalidToken();
    let secrets: Record<string, string>;
    try {
      secrets = decodeSecrets(await this.envelope.open(record, record));
    } catch (err) {
      if (err instanceof UnwrapFailed || err instanceof SecretsFormatError) {
        this.log.error({ credential: ref.id, org: ref.orgId }, 'credential failed its integrity check; refusing to use it');
        throw Errors.unavailable();
      }
      throw err;
    }
    return Object.freeze({
      secrets: Object.freeze(secrets), plain: Object.freeze({ ...(record.fields ?? {}) }), owner: Object.freeze({ orgId: record.orgId, credentialId: record.id }),
    });
  }

  private provider(id: string): Provider {
    const p = this.providers.get(id);
    if (!p) throw Errors.unknownProvider(id);
    return p;
  }

  private forget(id: string): void {
    this.keys.forgetKey(id);
  }

  /** Drops every decrypted key (tests, shutdown). */
  clear(): void {
    this.keys.clear();
  }
}
