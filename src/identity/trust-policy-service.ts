/**
 * Trust policies: an organisation says which workload identities may exchange their OIDC token
 * for a proxy token (issuer, audience, subject exact or a `prefix*` that fixes the owner:
 * subjects.ts, exact claim values), for which credential, with which ttl and token scopes. Created
 * only for an issuer the operator allows (KEYWARD_OIDC_ISSUERS, else 400 issuer_not_allowed), a
 * credential of the organisation (404), a ttl and scopes that a mint for that credential would take
 * (the token service's own checks, so the API, the CLI and the exchange share one rule). A policy
 * ends when its creator's credential does (an admin key's ttl: `expires_at`); a retiring org token
 * makes none (403 token_retiring).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import { parseScopes } from '../catalog/scopes.js';
import { newId } from '../ids.js';
import { BAD_CURSOR, type CredentialStore, type Page, type PageQuery, type TrustPolicyRecord, type TrustPolicyStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { CLI_CREATOR, endWithin, type Creator } from '../vault/authority.js';
import { TokenService } from '../vault/token-service.js';
import { checkSubject } from './subjects.js';

/** Claims the verifier and the policy's own fields already decide: a `claims` entry may not name them. */
export const RESERVED_CLAIMS = ['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti'] as const;

/** A policy as the API body and the CLI's flags give it (shapes checked by the schema; meaning checked here). */
export interface TrustPolicyInput {
  issuer: string;
  audience: string;
  subject: string;
  claims?: Record<string, string | number | boolean>;
  credentialId: string;
  ttl: unknown;
  /** Token scopes as POST /v1/tokens takes them (`models`, `paths`, `max_requests`, …). */
  scopes: Record<string, unknown>;
}

@injectable()
export class TrustPolicyService {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.TrustPolicyStore) private readonly store: TrustPolicyStore,
    @inject(Symbols.CredentialStore) private readonly credentials: CredentialStore,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
    @inject(TokenService) private readonly tokens: TokenService,
  ) {}

  async create(orgId: string, input: TrustPolicyInput, creator: Creator = CLI_CREATOR): Promise<TrustPolicyRecord> {
    // A retiring token is on its way out (perhaps leaked): it may not hand out a lasting way in.
    if (creator.retiring) throw Errors.tokenRetiring('This organisation token is being retired by a rotation; only a current token may create trust policies.');
    if (!this.config.oidcIssuers.includes(input.issuer)) throw Errors.issuerNotAllowed(this.config.oidcIssuers.join(', '));
    if (input.subject === '*') throw Errors.invalidRequest('`subject` must name a subject or a non-empty prefix before `*`: a bare `*` would trust every workload of the issuer.', 'subject');
    if (input.subject.indexOf('*') !== -1 && input.subject.indexOf('*') !== input.subject.length - 1) {
      throw Errors.invalidRequest('`subject` may hold `*` only as its last character (a prefix).', 'subject');
    }
    checkSubject(input.issuer, input.subject);
    const reserved = Object.keys(input.claims ?? {}).find((k) => (RESERVED_CLAIMS as readonly string[]).includes(k));
    if (reserved) throw Errors.invalidRequest(`\`claims\` may not name \`${reserved}\`: the issuer, audience, subject and times are checked by their own fields.`, 'claims');
    this.tokens.parseTtl(input.ttl);
    const credential = await this.credentials.getCredential(orgId, input.credentialId);
    if (!credential) throw Errors.notFound('No such credential.');
    const provider = this.providers.get(credential.provider);
    if (!provider) throw Errors.unknownProvider(credential.provider);
    parseScopes(input.scopes, provider);
    const record: TrustPolicyRecord = {
      id: newId('tp'), orgId, issuer: input.issuer, audience: input.audience, subject: input.subject, claims: input.claims ?? {},
      credentialId: credential.id, ttl: input.ttl as string, scopes: input.scopes, createdAt: this.clock.now(),
      // The policy lives as long as its creator's credential (an admin key with a ttl), never longer.
      expiresAt: endWithin(creator, null, 'A trust policy'),
    };
    await this.store.createTrustPolicy(record);
    return record;
  }

  async get(orgId: string, id: string): Promise<TrustPolicyRecord> {
    const p = await this.store.getTrustPolicy(orgId, id);
    if (!p) throw Errors.notFound('No such trust policy.');
    return p;
  }

  async list(orgId: string, page: PageQuery): Promise<Page<TrustPolicyRecord>> {
    const p = await this.store.listTrustPolicies(orgId, page);
    if (p === BAD_CURSOR) throw Errors.invalidRequest('`starting_after` names no trust policy of this organisation.', 'starting_after');
    return p;
  }

  async delete(orgId: string, id: string): Promise<void> {
    if (!(await this.store.deleteTrustPolicy(orgId, id))) throw Errors.notFound('No such trust policy.');
  }
}
