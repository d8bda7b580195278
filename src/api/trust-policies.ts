/** /v1/trust-policies: which workload identities may exchange their OIDC token for a proxy token (org token). */
import type { Static } from '@sinclair/typebox';
import { inject, injectable } from 'tsyringe';
import type { Router } from '../http/router.js';
import { TrustPolicyService } from '../identity/trust-policy-service.js';
import type { TrustPolicyRecord } from '../store/ports.js';
import { creatorOf, orgOf } from './params.js';
import { PAGE } from './schemas/query.js';
import { TRUST_POLICY_CREATE, TrustPolicy, TrustPolicyDeleted, TrustPolicyList } from './schemas/trust-policies.js';
import { iso, listView } from './views.js';

/** A policy as the API shows it: its scopes as POST /v1/tokens takes them. */
export function trustPolicyView(p: TrustPolicyRecord): Static<typeof TrustPolicy> {
  return {
    id: p.id, object: 'trust_policy', issuer: p.issuer, audience: p.audience, subject: p.subject, claims: p.claims,
    credential_id: p.credentialId, ttl: p.ttl, created_at: iso(p.createdAt), expires_at: p.expiresAt === null ? null : iso(p.expiresAt), ...(p.scopes as Partial<Static<typeof TrustPolicy>>),
  };
}

@injectable()
export class TrustPoliciesApi {
  constructor(@inject(TrustPolicyService) private readonly policies: TrustPolicyService) {}

  register(router: Router): void {
    router.add('POST', '/v1/trust-policies', {
      auth: 'org', action: 'trust_policy.create', idempotent: true, body: TRUST_POLICY_CREATE,
      operationId: 'createTrustPolicy', tag: 'identity', summary: 'Trust a workload identity',
      description: 'Workloads whose OIDC token (issuer, audience, subject, claims) matches may exchange it at POST /v1/tokens/exchange for a proxy token of `credential_id`, with `ttl` and the scopes given here. A `subject` prefix must fix the owner (`repo:<owner>/…*`, `project_path:<group>/…*`). Made with an admin key that has a ttl, the policy ends with that key (`expires_at`), and so do the tokens exchanged through it; a retiring organisation token makes none (403 `token_retiring`).',
      response: { status: 201, schema: TrustPolicy, description: 'The policy.' },
      errors: ['issuer_not_allowed', 'invalid_ttl', 'invalid_scope', 'unknown_provider', 'not_found', 'token_retiring'],
    }, async (r) => {
      const { issuer, audience, subject, claims, credential_id: credentialId, ttl, ...scopes } = await r.body();
      const record = await this.policies.create(orgOf(r).id, { issuer, audience, subject, ...(claims ? { claims } : {}), credentialId, ttl, scopes }, creatorOf(r));
      return { status: 201, body: trustPolicyView(record) };
    });

    router.add('GET', '/v1/trust-policies', {
      auth: 'org', query: PAGE, operationId: 'listTrustPolicies', tag: 'identity', summary: 'List trust policies',
      response: { status: 200, schema: TrustPolicyList, description: 'A page of trust policies, newest first.' },
    }, async (r) => ({ status: 200, body: listView(await this.policies.list(orgOf(r).id, r.query), trustPolicyView) }));

    router.add('GET', '/v1/trust-policies/:id', {
      auth: 'org', operationId: 'getTrustPolicy', tag: 'identity', summary: 'Get a trust policy',
      response: { status: 200, schema: TrustPolicy, description: 'The policy.' },
      errors: ['not_found'],
    }, async (r) => ({ status: 200, body: trustPolicyView(await this.policies.get(orgOf(r).id, r.params.id!)) }));

    router.add('DELETE', '/v1/trust-policies/:id', {
      auth: 'org', action: 'trust_policy.delete', operationId: 'deleteTrustPolicy', tag: 'identity', summary: 'Delete a trust policy',
      description: 'No exchange uses it from now on; proxy tokens it minted live out their ttl (revoke them at DELETE /v1/tokens/{id}).',
      response: { status: 200, schema: TrustPolicyDeleted, description: 'Deleted.' },
      errors: ['not_found'],
    }, async (r) => {
      await this.policies.delete(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: r.params.id!, object: 'trust_policy' as const, deleted: true as const } };
    });
  }
}
