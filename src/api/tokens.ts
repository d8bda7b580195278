/** /v1/tokens: mint, list, read and revoke proxy tokens (org token). */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import { asObject, onlyFields } from '../http/body.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import { parseScopes } from '../catalog/scopes.js';
import { TokenService } from '../vault/token-service.js';
import { noQuery, orgOf, pageQuery } from './params.js';
import { tokenView } from './views.js';

@injectable()
export class TokensApi {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/tokens', { auth: 'org', action: 'token.create', idempotent: true }, async (r) => {
      const org = orgOf(r);
      noQuery(r.query);
      const input = asObject(await r.body());
      onlyFields(input, ['credential_id', 'ttl', 'models', 'paths', 'max_requests', 'rate_limit']);
      if (typeof input.credential_id !== 'string' || input.credential_id === '') {
        throw Errors.invalidRequest('`credential_id` is required: the id of a stored credential.', 'credential_id');
      }
      const ttlMs = this.tokens.parseTtl(input.ttl);
      const credential = await this.credentials.get(org.id, input.credential_id);
      const provider = this.providers.get(credential.provider);
      if (!provider) throw Errors.unknownProvider(credential.provider);
      const scopes = parseScopes(input, provider);
      const { record, token } = await this.tokens.mint(org.id, input.credential_id, ttlMs, scopes);
      const { id, object, ...rest } = tokenView(record, this.clock.now());
      return { status: 201, body: { id, object, token, ...rest }, secretFields: ['token'] };
    });

    router.add('GET', '/v1/tokens', { auth: 'org' }, async (r) => {
      const page = await this.tokens.list(orgOf(r).id, pageQuery(r.query));
      const now = this.clock.now();
      return { status: 200, body: { object: 'list', data: page.data.map((t) => tokenView(t, now)), has_more: page.hasMore } };
    });

    router.add('GET', '/v1/tokens/:id', { auth: 'org' }, async (r) => {
      noQuery(r.query);
      const record = await this.tokens.get(orgOf(r).id, r.params.id!);
      return { status: 200, body: tokenView(record, this.clock.now(), await this.usage.get('tok', record.id)) };
    });

    router.add('DELETE', '/v1/tokens/:id', { auth: 'org', action: 'token.revoke' }, async (r) => {
      noQuery(r.query);
      await this.tokens.revoke(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: r.params.id, object: 'token', revoked: true } };
    });
  }
}
