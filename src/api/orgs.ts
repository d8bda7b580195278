/** POST /v1/orgs (operator's admin token) and the org token's rotation. */
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import { asObject, onlyFields, readJsonBody } from '../http/body.js';
import { sendJson } from '../http/reply.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { OrgService } from '../vault/org-service.js';
import { noQuery } from './params.js';
import { iso } from './views.js';

@injectable()
export class OrgsApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(OrgService) private readonly orgs: OrgService,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/orgs', async ({ req, res, query }) => {
      if (!this.orgs.isAdmin(req.headers.authorization)) throw Errors.unauthenticated();
      noQuery(query);
      const body = asObject(await readJsonBody(req, this.config.maxBody));
      onlyFields(body, ['name']);
      const { org, token } = await this.orgs.create(this.orgs.validateName(body.name));
      sendJson(res, 201, { id: org.id, object: 'organization', name: org.name, token, created_at: iso(org.createdAt) });
    });

    router.add('POST', '/v1/orgs/self/token/rotate', async ({ req, res, query }) => {
      const principal = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const body = asObject((await readJsonBody(req, this.config.maxBody)) ?? {});
      onlyFields(body, ['grace_s']);
      // Omitted means 0; an explicit null is a mistake, not a default (it would end the current token at once).
      const grace = body.grace_s === undefined ? 0 : body.grace_s;
      if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > 30 * 86_400) {
        throw Errors.invalidRequest('`grace_s` must be an integer number of seconds from 0 to 2592000.', 'grace_s');
      }
      const { token, tokenId } = await this.orgs.rotateToken(principal.org.id, grace);
      sendJson(res, 200, { id: principal.org.id, object: 'organization', token, token_id: tokenId });
    });
  }
}
