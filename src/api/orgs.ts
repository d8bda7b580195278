/** POST /v1/orgs (the operator's admin token), GET /v1/orgs/self (who is calling), PATCH /v1/orgs/self (the monthly spend limit) and the org token's rotation (owner only). */
import { inject, injectable } from 'tsyringe';
import type { Config } from '../settings/config.js';
import { Errors } from '../errors.js';
import { Symbols } from '../symbols.js';
import type { Router } from '../http/router.js';
import { OrgService } from '../vault/org-service.js';
import { orgOf } from './params.js';
import { EVERYONE, OWNER } from '../vault/roles.js';
import { ORG_CREATE, ORG_TOKEN_ROTATE, ORG_UPDATE, Organization, OrganizationSettings, OrgSelf, OrgTokenRotated } from './schemas/orgs.js';
import { orgSelfView, orgSettingsView, orgView } from './views.js';

@injectable()
export class OrgsApi {
  constructor(
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(Symbols.Config) private readonly config: Config,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/orgs', {
      auth: 'admin', action: 'org.create', idempotent: true, body: ORG_CREATE,
      operationId: 'createOrg', tag: 'organisations', summary: 'Create an organisation',
      description: 'With the operator\'s token (`KEYWARD_ADMIN_TOKEN`). Answers the organisation token once. (`npx keyward org create <name>` does the same on the store.)',
      response: { status: 201, schema: Organization, description: 'The organisation and its token (shown once).' },
    }, async ({ body }) => {
      const input = await body();
      const { org, token } = await this.orgs.create(this.orgs.validateName(input.name));
      return { status: 201, body: orgView(org, token), org: org.id, secretFields: ['token'] };
    });

    router.add('GET', '/v1/orgs/self', {
      auth: 'org', roles: EVERYONE, operationId: 'getOrgSelf', tag: 'organisations', summary: 'The calling organisation and key',
      description: '`caller` names the presented key and its role, so a client (the console) knows what it may do. `federation`: the issuer and subject a cloud\'s trust policy names for this organisation\'s federated credentials (null when this gateway is no OIDC issuer).',
      response: { status: 200, schema: OrgSelf, description: 'The organisation and the caller.' },
    }, async (r) => {
      const p = r.principal;
      if (p.kind !== 'org') throw Errors.unauthenticated();
      return { status: 200, body: orgSelfView(p.org, { id: p.actor, role: p.role, ...(p.credentialIds ? { credential_ids: [...p.credentialIds] } : {}) }, this.config.issuerUrl) };
    });

    router.add('POST', '/v1/orgs/self/token/rotate', {
      auth: 'org', roles: OWNER, action: 'org.token_rotate', idempotent: true, body: ORG_TOKEN_ROTATE,
      operationId: 'rotateOrgToken', tag: 'organisations', summary: 'Rotate the calling organisation\'s token',
      description: 'Answers a new `otok_…` once; the current token keeps working `grace_s` more seconds (a token already retiring never gets longer). Only the organisation token (owner), and only one that is not retiring, may call this; admin keys are not touched.',
      response: { status: 200, schema: OrgTokenRotated, description: 'The new organisation token (shown once).' },
      errors: ['token_retiring', 'forbidden'],
    }, async (r) => {
      const org = orgOf(r);
      // Omitted means 0; an explicit null is refused by the schema (it would end the current token at once).
      const grace = (await r.body()).grace_s ?? 0;
      const { token, tokenId } = await this.orgs.rotateToken(org.id, r.principal.kind === 'org' ? r.principal.actor : '', grace);
      return { status: 200, body: { id: org.id, object: 'organization' as const, token, token_id: tokenId }, target: tokenId, secretFields: ['token'] };
    });

    router.add('PATCH', '/v1/orgs/self', {
      auth: 'org', action: 'org.update', body: ORG_UPDATE,
      operationId: 'updateOrg', tag: 'organisations', summary: 'Set the calling organisation\'s monthly spend limit',
      description: '`spend_limit_usd`: the most the organisation\'s proxied requests may cost per UTC calendar month (null: no limit). Every instance applies a change within a second. A proxied request reserves its worst-case cost first; one that does not fit is refused with 429 `budget_exhausted` (Retry-After: the month\'s end).',
      response: { status: 200, schema: OrganizationSettings, description: 'The organisation with its limit.' },
    }, async (r) => {
      const org = orgOf(r);
      const input = await r.body();
      const micros = input.spend_limit_usd === null ? null : this.orgs.parseSpendLimit(input.spend_limit_usd);
      await this.orgs.setSpendLimit(org.id, micros);
      return { status: 200, body: orgSettingsView({ ...org, spendLimitMicros: micros }), target: org.id };
    });
  }
}
