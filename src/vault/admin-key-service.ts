/**
 * Admin keys: scoped bearer keys of an organisation (`otok_…` on the wire, as
 * the org token, known by an `akey_` id), each with a role (vault/roles.ts).
 * Shown once, stored as SHA-256 only. Shared by the API and the CLI.
 *
 * "Never above yourself" has two sides: a caller creates (or deletes) only
 * keys of roles it covers, and a key made by a caller whose own token ends
 * (an expiring admin key, a retiring org token) ends no later than it, so a
 * leaked short-lived key cannot mint itself a lasting one.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { parseDuration } from '../settings/config.js';
import { Errors } from '../errors.js';
import { newId, newToken, sha256Hex } from '../ids.js';
import { BAD_CURSOR, type AdminKeyRecord, type AdminKeyRole, type AdminKeyStore, type CredentialStore, type NamedPageQuery, type Page } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { parseName } from './names.js';
import { CLI_CREATOR, endWithin, type Creator } from './authority.js';
import { KEY_ROLES, mayCreate, type Role } from './roles.js';
import { PrincipalRemovals } from './principal-removals.js';

/** The longest an admin key may be given (omit `ttl` for a key that lasts until deleted). */
export const MAX_ADMIN_KEY_TTL_MS = 366 * 86_400_000;
export const MAX_CREDENTIAL_IDS = 100;

/** Who is creating or deleting (authority.ts). */
export type KeyCreator = Creator;

export interface AdminKeyRequest {
  /** Unchecked: vault/names.ts decides; absent: unnamed. */
  name?: unknown;
  role: AdminKeyRole;
  credentialIds?: readonly string[];
  /** Unchecked duration (`30d`), or undefined for no expiry. */
  ttl?: unknown;
}

export { CLI_CREATOR };

@injectable()
export class AdminKeyService {
  constructor(
    @inject(Symbols.AdminKeyStore) private readonly store: AdminKeyStore,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(PrincipalRemovals) private readonly removals: PrincipalRemovals,
  ) {}

  async create(orgId: string, creator: KeyCreator, request: AdminKeyRequest): Promise<{ record: AdminKeyRecord; token: string }> {
    if (!KEY_ROLES.includes(request.role)) throw Errors.invalidRequest(`\`role\` must be one of ${KEY_ROLES.join(', ')}.`, 'role');
    if (!mayCreate(creator.role, request.role)) throw Errors.forbidden(`A ${creator.role} may not create a ${request.role} key.`);
    const now = this.clock.now();
    // A key made by an ending token ends with it at the latest; asking for longer is refused, not silently cut.
    const expiresAt = endWithin(creator, request.ttl === undefined ? null : now + this.parseTtl(request.ttl), 'A key');
    const name = parseName(request.name) ?? undefined;
    const credentialIds = await this.checkCredentials(orgId, request);
    const token = newToken('otok');
    const record: AdminKeyRecord = {
      id: newId('akey'), orgId, ...(name !== undefined ? { name } : {}), role: request.role, ...(credentialIds ? { credentialIds } : {}),
      tokenHash: sha256Hex(token), createdAt: now, expiresAt, createdBy: creator.id,
    };
    await this.store.createAdminKey(record);
    return { record, token };
  }

  async get(orgId: string, id: string): Promise<AdminKeyRecord> {
    const k = await this.store.getAdminKey(orgId, id);
    if (!k) throw Errors.notFound('No such admin key.');
    return k;
  }

  async list(orgId: string, page: NamedPageQuery): Promise<Page<AdminKeyRecord>> {
    const p = await this.store.listAdminKeys(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no admin key of this organisation.', 'starting_after');
    return p;
  }

  /** Names or unnames a key the caller covers (as deleting it would need). */
  async rename(orgId: string, caller: Role, id: string, name: unknown): Promise<AdminKeyRecord> {
    const checked = parseName(name) ?? null;
    const k = await this.get(orgId, id);
    if (!mayCreate(caller, k.role)) throw Errors.forbidden(`A ${caller} may not rename a ${k.role} key.`);
    if (!(await this.store.setAdminKeyName(orgId, id, checked))) throw Errors.notFound('No such admin key.');
    return this.get(orgId, id);
  }

  /** Deletes a key the caller covers; later requests with it get 401 on every instance at once (nothing caches it). */
  async delete(orgId: string, caller: Role, id: string): Promise<AdminKeyRecord> {
    const k = await this.get(orgId, id);
    if (!mayCreate(caller, k.role)) throw Errors.forbidden(`A ${caller} may not delete a ${k.role} key.`);
    if (!(await this.store.deleteAdminKey(orgId, id))) throw Errors.notFound('No such admin key.');
    // The MCP access it consented to ends with it.
    await this.removals.removed(id, 'oauth:principal-removed');
    return k;
  }

  private parseTtl(ttl: unknown): number {
    const ms = typeof ttl === 'string' ? parseDuration(ttl) : undefined;
    if (ms === undefined) throw Errors.invalidTtl('`ttl` must be a positive integer without leading zeros and one unit of s, m, h, d, such as "90d" (or left out: no expiry).');
    if (ms > MAX_ADMIN_KEY_TTL_MS) throw Errors.invalidTtl('`ttl` may be at most 366d for an admin key (leave it out for a key that lasts until deleted).');
    return ms;
  }

  /** Only a minter is limited to credentials; each must be one of this organisation's (404 otherwise, as a mint would). */
  private async checkCredentials(orgId: string, request: AdminKeyRequest): Promise<string[] | undefined> {
    if (request.credentialIds === undefined) return undefined;
    if (request.role !== 'minter') throw Errors.invalidRequest('`credential_ids` limits a minter key only.', 'credential_ids');
    const ids = [...new Set(request.credentialIds)];
    if (ids.length === 0 || ids.length > MAX_CREDENTIAL_IDS) {
      throw Errors.invalidRequest(`\`credential_ids\` must list 1 to ${MAX_CREDENTIAL_IDS} credentials (leave it out for every credential).`, 'credential_ids');
    }
    for (const id of ids) {
      if (!(await this.credentials.getCredential(orgId, id))) throw Errors.notFound(`No such credential: ${JSON.stringify(id.slice(0, 64))}.`);
    }
    return ids;
  }
}
