/**
 * An organisation's single sign-on configuration: its OpenID provider (`issuer`), its confidential client
 * (`client_id`, `client_secret`), the e-mail domains it admits, the claim that lists groups and the map of
 * groups to roles. The client secret is sealed like a provider key (vault/envelope.ts: its own DEK, bound
 * to this organisation's record, so a ciphertext moved to another never opens) and never returned: the API
 * shows its last four characters. Saving fetches the provider's discovery document first (under the SSRF
 * rules), so a configuration that cannot sign anyone in is refused when it is made.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { ProviderClient, SsoClient } from '../identity/sso-client.js';
import { MEMBER_ROLES, type MemberRole, type PeopleStore, type SsoConfigRecord } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { Envelope, type CredentialRef } from './envelope.js';

export interface SsoConfigInput {
  issuer: string;
  client_id: string;
  client_secret: string;
  allowed_domains?: string[] | undefined;
  groups_claim?: string | null | undefined;
  role_map?: Record<string, string> | undefined;
}

/** What binds the sealed secret to its record: the organisation and what it is. */
const secretRef = (orgId: string): CredentialRef => ({ orgId, id: 'sso', provider: 'oidc-client-secret' });
const DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

@injectable()
export class SsoConfigService {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.PeopleStore) private readonly store: PeopleStore,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Envelope) private readonly envelope: Envelope,
    @inject(Symbols.SsoClient) private readonly client: SsoClient,
  ) {}

  /** The callback to register at the provider; 400 when the gateway has no public URL. */
  redirectUri(): string {
    const base = this.config.publicUrl;
    if (base === undefined) throw Errors.invalidRequest('Single sign-on needs the gateway\'s public URL: set KEYWARD_PUBLIC_URL (or KEYWARD_ISSUER_URL).');
    return `${base}/v1/sso/callback`;
  }

  async put(orgId: string, input: SsoConfigInput): Promise<SsoConfigRecord> {
    this.redirectUri();
    const issuer = input.issuer;
    const allowedDomains = [...new Set((input.allowed_domains ?? []).map((d) => d.toLowerCase()))];
    for (const d of allowedDomains) if (!DOMAIN.test(d)) throw Errors.invalidRequest('`allowed_domains` must hold domain names such as "example.com".', 'allowed_domains');
    const roleMap: Record<string, MemberRole> = {};
    for (const [group, role] of Object.entries(input.role_map ?? {})) {
      if (!(MEMBER_ROLES as readonly string[]).includes(role)) throw Errors.invalidRequest(`\`role_map\` values must be one of ${MEMBER_ROLES.join(', ')}.`, 'role_map');
      roleMap[group] = role as MemberRole;
    }
    const groupsClaim = input.groups_claim ?? (Object.keys(roleMap).length > 0 ? 'groups' : null);
    const updatedAt = this.clock.now();
    // The provider must answer for this client before anything is stored.
    await this.client.configuration({ issuer, clientId: input.client_id, clientSecret: input.client_secret, version: updatedAt });
    const sealed = await this.envelope.seal(secretRef(orgId), input.client_secret);
    const record: SsoConfigRecord = {
      orgId, issuer, clientId: input.client_id, allowedDomains, groupsClaim, roleMap, secretHint: input.client_secret.slice(-4), updatedAt, ...sealed,
    };
    await this.store.putSsoConfig(record);
    return record;
  }

  /** The configuration, or undefined when the organisation has none. */
  find(orgId: string): Promise<SsoConfigRecord | undefined> {
    return this.store.getSsoConfig(orgId);
  }

  /** The configuration, or 404 when the organisation has none. */
  async get(orgId: string): Promise<SsoConfigRecord> {
    const record = await this.store.getSsoConfig(orgId);
    if (!record) throw Errors.notFound('This organisation has no single sign-on configured.');
    return record;
  }

  /** The provider client of a configuration, its secret opened (kept no longer than the call that needs it). */
  async providerClient(record: SsoConfigRecord): Promise<ProviderClient> {
    return { issuer: record.issuer, clientId: record.clientId, clientSecret: await this.envelope.open(secretRef(record.orgId), record), version: record.updatedAt };
  }
}
