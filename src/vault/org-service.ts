/**
 * Organisations and their bearer tokens (`otok_`, each known by an `otk_` id
 * for the audit trail). The admin API authenticates by the token's SHA-256:
 * an org token is the `owner`; otherwise an admin key (`akey_`) of the same
 * shape carries its own role. Neither is cached, so a deleted key or a retired
 * token is refused at once on every instance. The operator's
 * KEYWARD_ADMIN_TOKEN is compared in constant time.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { AdminKeyStore, OrgRecord, OrgStore, OrgTokenRecord } from '../store/ports.js';
import type { Role } from './roles.js';
import { Symbols } from '../symbols.js';
import { isWellFormedToken, newId, newToken, secretEquals, sha256Hex } from '../ids.js';
import { parseUsd } from '../pricing/money.js';
import { OrgLimits } from './org-limits.js';
import { SpendLedger } from '../accounting/spend-ledger.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { periodOf } from '../accounting/periods.js';

export interface OrgPrincipal {
  org: OrgRecord;
  /** The `otk_` (org token) or `akey_` (admin key) id of the token used: the audit actor. */
  tokenId: string;
  role: Role;
  /** A minter limited to these credentials. */
  credentialIds?: readonly string[];
  /** When the presented token stops working (null: not before rotation or deletion). */
  expiresAt: number | null;
  /** An org token a rotation is retiring (it has an expiry): it may not rotate nor create trust policies. */
  retiring: boolean;
}

export const ORG_NAME = /^[\p{L}\p{N}][\p{L}\p{N} ._'&()-]{0,99}$/u;

@injectable()
export class OrgService {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.OrgStore) private readonly store: OrgStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.AdminKeyStore) private readonly adminKeys: AdminKeyStore,
    @inject(OrgLimits) private readonly limits: OrgLimits,
    @inject(SpendLedger) private readonly spend: SpendLedger,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
  ) {}

  /** `spend_limit_usd` → µ$: a decimal string above 0 with at most six places, else 400. */
  parseSpendLimit(value: unknown): number {
    const micros = parseUsd(value);
    if (micros === undefined || micros <= 0) {
      throw Errors.invalidRequest('`spend_limit_usd` must be a decimal string of US dollars above 0 with at most six decimal places, such as "250.00", or null.', 'spend_limit_usd');
    }
    return micros;
  }

  /** Sets (null: clears) the monthly spend cap; this instance applies it at once, the others through the change feed. */
  async setSpendLimit(orgId: string, micros: number | null): Promise<void> {
    // The month's spend so far counts against a new limit (the contract's cap is the calendar month's).
    if (micros !== null) await this.spend.seedOrgMonth(orgId, (await this.usage.get('org', orgId, periodOf(this.clock.now()))).spendMicros);
    if (!(await this.store.setOrgSpendLimit(orgId, micros))) throw Errors.notFound('No such organisation.');
    this.limits.forget(orgId);
  }

  validateName(name: unknown): string {
    if (typeof name !== 'string' || !ORG_NAME.test(name.trim()) || name.trim() !== name) {
      throw Errors.invalidRequest('`name` must be 1 to 100 letters, digits, spaces or ._\'&()- and start with a letter or digit.', 'name');
    }
    return name;
  }

  async create(name: string): Promise<{ org: OrgRecord; token: string; tokenId: string }> {
    const now = this.clock.now();
    const org: OrgRecord = { id: newId('org'), name: this.validateName(name), createdAt: now };
    const token = newToken('otok');
    const record: OrgTokenRecord = { id: newId('otk'), orgId: org.id, tokenHash: sha256Hex(token), createdAt: now, expiresAt: null };
    await this.store.createOrg(org, record);
    return { org, token, tokenId: record.id };
  }

  /** `Authorization: Bearer otok_…` (an org token or an admin key) → the organisation and the caller's role, or 401. */
  async authenticate(authorization: string | undefined): Promise<OrgPrincipal> {
    const presented = bearer(authorization);
    if (!presented || !isWellFormedToken('otok', presented)) throw Errors.unauthenticated();
    const found = await this.findCaller(sha256Hex(presented));
    if (!found || (found.caller.expiresAt !== null && this.clock.now() >= found.caller.expiresAt)) throw Errors.unauthenticated();
    const org = await this.store.getOrg(found.orgId);
    if (!org) throw Errors.unauthenticated();
    return { org, ...found.caller };
  }

  /** The org token (`owner`) or admin key with this hash; org tokens first, so the org token costs one read as before. */
  private async findCaller(hash: string): Promise<{ orgId: string; caller: Omit<OrgPrincipal, 'org'> } | undefined> {
    const token = await this.store.findOrgToken(hash);
    if (token) return { orgId: token.orgId, caller: { tokenId: token.id, role: 'owner', expiresAt: token.expiresAt, retiring: token.expiresAt !== null } };
    const key = await this.adminKeys.findAdminKeyByHash(hash);
    if (!key) return undefined;
    return {
      orgId: key.orgId,
      caller: { tokenId: key.id, role: key.role, expiresAt: key.expiresAt, retiring: false, ...(key.credentialIds ? { credentialIds: key.credentialIds } : {}) },
    };
  }

  /** True when `authorization` carries the operator's admin token. */
  isAdmin(authorization: string | undefined): boolean {
    const presented = bearer(authorization);
    return this.config.adminToken !== undefined && presented !== undefined && secretEquals(presented, this.config.adminToken);
  }

  /**
   * A new org token; the current ones keep working `graceS` more seconds (never longer than they already would).
   * Only a token that is not retiring may rotate (403 token_retiring): an old, possibly leaked token cannot
   * cut short its successor or mint itself a permanent one.
   */
  async rotateToken(orgId: string, callerTokenId: string, graceS: number): Promise<{ token: string; tokenId: string }> {
    const now = this.clock.now();
    const token = newToken('otok');
    const record: OrgTokenRecord = { id: newId('otk'), orgId, tokenHash: sha256Hex(token), createdAt: now, expiresAt: null };
    if ((await this.store.rotateOrgToken(record, now + graceS * 1000, callerTokenId)) === 'retiring') throw Errors.tokenRetiring();
    return { token, tokenId: record.id };
  }
}

/** The credential of a `Bearer` authorization header (scheme case-insensitive, one space). */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer ([^\s]+)$/i.exec(header);
  return m?.[1];
}
