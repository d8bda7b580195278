/** POST /v1/orgs (the operator's admin token) and the org token's rotation. */
import { inject, injectable } from 'tsyringe';
import { Errors } from '../errors.js';
import { asObject, onlyFields } from '../http/body.js';
import type { AdminRequest, Router } from '../http/router.js';
import { OrgService } from '../vault/org-service.js';
import { noQuery, orgOf } from './params.js';
import { iso } from './views.js';

@injectable()
export class OrgsApi {
  constructor(@inject(OrgService) private readonly orgs: OrgService) {}

  register(router: Router): void {
    router.add('POST', '/v1/orgs', { auth: 'admin', action: 'org.create', idempotent: true }, async ({ query, body }) => {
      noQuery(query);
      const input = asObject(await body());
      onlyFields(input, ['name']);
      const { org, token } = await this.orgs.create(this.orgs.validateName(input.name));
      return {
        status: 201,
        body: { id: org.id, object: 'organization', name: org.name, token, created_at: iso(org.createdAt) },
        org: org.id,
        secretFields: ['token'],
      };
    });

    router.add('POST', '/v1/orgs/self/token/rotate', { auth: 'org', action: 'org.token_rotate', idempotent: true }, async (r: AdminRequest) => {
      const org = orgOf(r);
      noQuery(r.query);
      // No body means the defaults; any body must be a JSON object (`null` is not one).
      const raw = await r.body();
      const input = raw === undefined ? {} : asObject(raw);
      onlyFields(input, ['grace_s']);
      // Omitted means 0; an explicit null is a mistake, not a default (it would end the current token at once).
      const grace = input.grace_s === undefined ? 0 : input.grace_s;
      if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > 30 * 86_400) {
        throw Errors.invalidRequest('`grace_s` must be an integer number of seconds from 0 to 2592000.', 'grace_s');
      }
      const { token, tokenId } = await this.orgs.rotateToken(org.id, r.principal.kind === 'org' ? r.principal.actor : '', grace);
      return { status: 200, body: { id: org.id, object: 'organization', token, token_id: tokenId }, target: tokenId, secretFields: ['token'] };
    });
  }
}
