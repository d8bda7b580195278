/** /v1/credentials: store, list, read, rotate and delete provider keys (org token). */
import { inject, injectable } from 'tsyringe';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import { UsageRecorder } from '../gateway/usage-recorder.js';
import { asObject, onlyFields, readJsonBody } from '../http/body.js';
import { sendJson } from '../http/reply.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import { OrgService } from '../vault/org-service.js';
import { noQuery, pageQuery } from './params.js';
import { credentialView } from './views.js';

@injectable()
export class CredentialsApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/credentials', async ({ req, res, query }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const body = asObject(await readJsonBody(req, this.config.maxBody));
      onlyFields(body, ['provider', 'api_key']);
      if (typeof body.provider !== 'string' || body.provider === '') throw Errors.invalidRequest('`provider` is required: a provider id such as "openai".', 'provider');
      const apiKey = this.credentials.validateApiKey(body.api_key);
      const record = await this.credentials.create(org.id, body.provider, apiKey);
      sendJson(res, 201, credentialView(record));
    });

    router.add('GET', '/v1/credentials', async ({ req, res, query }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      const page = await this.credentials.list(org.id, pageQuery(query));
      sendJson(res, 200, { object: 'list', data: page.data.map((c) => credentialView(c)), has_more: page.hasMore });
    });

    router.add('GET', '/v1/credentials/:id', async ({ req, res, query, params }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const record = await this.credentials.get(org.id, params.id!);
      sendJson(res, 200, credentialView(record, await this.usage.get('cred', record.id)));
    });

    router.add('POST', '/v1/credentials/:id/rotate', async ({ req, res, query, params }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const body = asObject(await readJsonBody(req, this.config.maxBody));
      onlyFields(body, ['api_key']);
      const apiKey = this.credentials.validateApiKey(body.api_key);
      sendJson(res, 200, credentialView(await this.credentials.rotate(org.id, params.id!, apiKey)));
    });

    router.add('DELETE', '/v1/credentials/:id', async ({ req, res, query, params }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      await this.credentials.delete(org.id, params.id!);
      sendJson(res, 200, { id: params.id, object: 'credential', deleted: true });
    });
  }
}
