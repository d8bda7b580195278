/** /v1/credentials: store, list, read, rotate and delete provider keys (org token). */
import { inject, injectable } from 'tsyringe';
import { Errors } from '../errors.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { asObject, onlyFields } from '../http/body.js';
import type { Router } from '../http/router.js';
import { CredentialService } from '../vault/credential-service.js';
import { noQuery, orgOf, pageQuery } from './params.js';
import { credentialView } from './views.js';

@injectable()
export class CredentialsApi {
  constructor(
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/credentials', { auth: 'org', action: 'credential.create', idempotent: true }, async (r) => {
      const org = orgOf(r);
      noQuery(r.query);
      const input = asObject(await r.body());
      if (typeof input.provider !== 'string' || input.provider === '') {
        onlyFields(input, ['provider', 'api_key']);
        throw Errors.invalidRequest('`provider` is required: a provider id such as "openai".', 'provider');
      }
      // Besides `provider`, the fields the provider declares: `api_key` for a key-based one, OpenAI's `organization`…
      const values = this.credentials.parseCredentialInput(input.provider, input);
      return { status: 201, body: credentialView(await this.credentials.create(org.id, input.provider, values.secrets, values.plain)) };
    });

    router.add('GET', '/v1/credentials', { auth: 'org' }, async (r) => {
      const page = await this.credentials.list(orgOf(r).id, pageQuery(r.query));
      return { status: 200, body: { object: 'list', data: page.data.map((c) => credentialView(c)), has_more: page.hasMore } };
    });

    router.add('GET', '/v1/credentials/:id', { auth: 'org' }, async (r) => {
      noQuery(r.query);
      const record = await this.credentials.get(orgOf(r).id, r.params.id!);
      return { status: 200, body: credentialView(record, await this.usage.get('cred', record.id)) };
    });

    router.add('POST', '/v1/credentials/:id/rotate', { auth: 'org', action: 'credential.rotate', idempotent: true }, async (r) => {
      const org = orgOf(r);
      noQuery(r.query);
      // The provider's secret fields (`api_key` for a key-based one); plain fields are fixed at creation.
      const input = asObject(await r.body());
      return { status: 200, body: credentialView(await this.credentials.rotate(org.id, r.params.id!, input)) };
    });

    router.add('DELETE', '/v1/credentials/:id', { auth: 'org', action: 'credential.delete' }, async (r) => {
      noQuery(r.query);
      await this.credentials.delete(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: r.params.id, object: 'credential', deleted: true } };
    });
  }
}
