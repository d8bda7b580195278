/**
 * RFC 8693 token exchange: a workload's OIDC token in, a proxy token out. Rate-limited per client
 * address (KEYWARD_ADMIN_RATE a minute, the admin API's figure); the token is verified
 * (oidc-verifier.ts); then a live (unexpired) trust policy is chosen: the one `policy_id` names,
 * if the identity matches it, else the most specific of the policies for the token's issuer and
 * audiences that match (subjects.ts; equals: the oldest). If policies of two organisations match,
 * at any specificity, none is used: an organisation must not capture another's workloads by
 * writing a narrower policy, nor take them by writing a broader one (name one with `policy_id`).
 * The proxy token is minted through the token service (its ttl the policy's, at most
 * KEYWARD_MAX_TTL, ending no later than the policy; its scopes checked again) and audited as `token.exchange`
 * with the identity's `iss` and `sub` as the actor. A refusal is one `invalid_grant` (or, for a
 * malformed request, `invalid_request` / `unsupported_grant_type`), audited `denied` (aggregated
 * per address and minute), never with the token.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { parseDuration } from '../settings/config.js';
import { ApiError, OAuthError } from '../errors.js';
import type { Logger } from '../log.js';
import { isId } from '../ids.js';
import type { TrustPolicyRecord, TrustPolicyStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { RateLimiter } from '../accounting/rate-limiter.js';
import { AuditLog } from '../controls/audit-log.js';
import { addressBucket } from '../controls/client-address.js';
import { TokenService } from '../vault/token-service.js';
import { OidcVerifier, type WorkloadIdentity } from './oidc-verifier.js';
import { bySpecificity, subjectFixesOwner } from './subjects.js';

export const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** An OIDC ID token is a JWT: both names are taken for `subject_token_type`. */
export const SUBJECT_TOKEN_TYPES = ['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token'];
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** A token naming more audiences than this is matched on the first ones only. */
const MAX_AUDIENCES = 10;
const ACTOR_MAX = 512;

/** The request's fields (RFC 8693 §2.1) as the route's schema checked them. */
export interface ExchangeRequest {
  grant_type: string;
  subject_token: string;
  subject_token_type: string;
  policy_id?: string;
  requested_token_type?: string;
  actor_token?: string;
}

export interface ExchangeResponse {
  access_token: string;
  issued_token_type: typeof ACCESS_TOKEN_TYPE;
  token_type: 'Bearer';
  expires_in: number;
}

const grantRefused = (description: string) => new OAuthError('invalid_grant', description);

/**
 * Does the identity satisfy the policy: issuer, one of its audiences, subject (exact, or a `prefix*` that fixes
 * the owner: one written before that rule matches nothing), every listed claim exactly?
 */
export function policyMatches(p: TrustPolicyRecord, id: WorkloadIdentity): boolean {
  if (p.issuer !== id.issuer || !id.audiences.includes(p.audience)) return false;
  const subjectOk = p.subject.endsWith('*')
    ? subjectFixesOwner(p.issuer, p.subject) && id.subject.startsWith(p.subject.slice(0, -1))
    : id.subject === p.subject;
  return subjectOk && Object.entries(p.claims).every(([k, v]) => Object.hasOwn(id.claims, k) && id.claims[k] === v);
}

/** A policy without an end, or before it. */
const isLive = (p: TrustPolicyRecord, now: number): boolean => p.expiresAt === null || now < p.expiresAt;

/** The audit actor of an exchange: the workload's issuer and subject (bounded). */
export const workloadActor = (id: WorkloadIdentity): string => `oidc:${id.issuer}#${id.subject}`.slice(0, ACTOR_MAX);

@injectable()
export class TokenExchange {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.Logger) private readonly log: Logger,
    @inject(Symbols.TrustPolicyStore) private readonly policies: TrustPolicyStore,
    @inject(OidcVerifier) private readonly verifier: OidcVerifier,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(AuditLog) private readonly audit: AuditLog,
    @inject(RateLimiter) private readonly limiter: RateLimiter,
  ) {}

  async exchange(req: ExchangeRequest, ip: string, requestId: string): Promise<ExchangeResponse> {
    let identity: WorkloadIdentity | undefined;
    let named: TrustPolicyRecord | undefined;
    try {
      this.limiter.take(`exchange:${addressBucket(ip)}`, this.config.adminRate,
        (s) => new OAuthError('temporarily_unavailable', 'Too many token exchanges from this address; slow down.', 429, { 'retry-after': String(s) }));
      checkRequest(req);
      if (req.policy_id !== undefined) named = await this.policies.findTrustPolicy(req.policy_id);
      identity = await this.verifier.verify(req.subject_token);
      const policy = await this.choose(identity, req.policy_id, named);
      const { record, token } = await this.mint(policy);
      const actor = workloadActor(identity);
      await this.audit.record({ requestId, org: policy.orgId, actor, action: 'token.exchange', target: record.id, outcome: 'success', ip });
      this.log.info({ request_id: requestId, org: policy.orgId, policy: policy.id, token: record.id, iss: identity.issuer, sub: identity.subject }, 'token exchanged');
      return { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: 'Bearer', expires_in: Math.round((record.expiresAt - record.createdAt) / 1000) };
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) {
        this.audit.refused({
          requestId, org: named?.orgId ?? '', actor: identity ? workloadActor(identity) : 'anonymous', action: 'token.exchange',
          target: named?.id ?? '/v1/tokens/exchange', outcome: 'denied', ip,
        });
        this.log.info({ request_id: requestId, reason: err.message, ...(identity ? { iss: identity.issuer, sub: identity.subject } : {}) }, 'token exchange refused');
      }
      throw err;
    }
  }

  /** The named policy if live and the identity matches it; else the most specific live match (then the oldest), if all matches are one organisation's. */
  private async choose(identity: WorkloadIdentity, policyId: string | undefined, named: TrustPolicyRecord | undefined): Promise<TrustPolicyRecord> {
    const now = this.clock.now();
    if (policyId !== undefined) {
      if (!named || !policyMatches(named, identity)) throw grantRefused('The token does not satisfy the trust policy `policy_id` names.');
      if (!isLive(named, now)) throw grantRefused('The trust policy `policy_id` names has expired (it ended with the key that created it).');
      return named;
    }
    const audiences = [...new Set(identity.audiences)].slice(0, MAX_AUDIENCES);
    const found = (await Promise.all(audiences.map((aud) => this.policies.findTrustPolicies(identity.issuer, aud)))).flat();
    const matching = found.filter((p) => isLive(p, now) && policyMatches(p, identity))
      .sort((a, b) => bySpecificity(a, b) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (matching.length === 0) throw grantRefused('No trust policy matches the token\'s issuer, audience, subject and claims.');
    if (new Set(matching.map((p) => p.orgId)).size > 1) throw grantRefused('Trust policies of more than one organisation match this token: name one with `policy_id`.');
    return matching[0]!;
  }

  /**
   * The policy's ttl (at most KEYWARD_MAX_TTL, which may have been lowered since; the token ends by the policy's own
   * end at the latest) and scopes, through the token service's own checks.
   */
  private async mint(policy: TrustPolicyRecord): Promise<{ record: { id: string; createdAt: number; expiresAt: number }; token: string }> {
    const ttlMs = parseDuration(policy.ttl) ?? this.config.maxTtlMs;
    const ttl = ttlMs > this.config.maxTtlMs ? `${Math.floor(this.config.maxTtlMs / 1000)}s` : policy.ttl;
    try {
      return await this.tokens.mintFor(policy.orgId, {
        credentialId: policy.credentialId, ttl, scopes: policy.scopes, createdBy: policy.id, ...(policy.expiresAt !== null ? { endsBy: policy.expiresAt } : {}),
      });
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) throw grantRefused('The trust policy can no longer mint a token (its credential was deleted or its scopes no longer fit it).');
      throw err;
    }
  }
}

/** RFC 8693's fields: the grant type (else unsupported_grant_type), the token types, no delegation. */
function checkRequest(req: ExchangeRequest): void {
  if (req.grant_type !== GRANT_TYPE) throw new OAuthError('unsupported_grant_type', `\`grant_type\` must be ${GRANT_TYPE}.`);
  if (!SUBJECT_TOKEN_TYPES.includes(req.subject_token_type)) throw new OAuthError('invalid_request', `\`subject_token_type\` must be ${SUBJECT_TOKEN_TYPES[0]}.`);
  if (req.requested_token_type !== undefined && req.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new OAuthError('invalid_request', `\`requested_token_type\` may only be ${ACCESS_TOKEN_TYPE}.`);
  }
  if (req.actor_token !== undefined) throw new OAuthError('invalid_request', 'Delegation (`actor_token`) is not supported.');
  if (req.policy_id !== undefined && !isId('tp', req.policy_id)) throw new OAuthError('invalid_request', '`policy_id` must be a trust policy id (tp_…).');
}
