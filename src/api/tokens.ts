/** /v1/tokens: mint, list, read and revoke proxy tokens (org token). */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import { Errors } from '../errors.js';
import { UsageRecorder } from '../gateway/usage-recorder.js';
import { asObject, onlyFields, readJsonBody } from '../http/body.js';
import { sendJson } from '../http/reply.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { OrgService } from '../vault/org-service.js';
import { TokenService } from '../vault/token-service.js';
import { CredentialService } from '../vault/credential-service.js';
import { parseScopes } from '../vault/scopes.js';
import type { ProviderRegistry } from '../gateway/providers.js';
import { noQuery, pageQuery } from './params.js';
import { tokenView } from './views.js';

@injectable()
export class TokensApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(OrgService) private readonly orgs: OrgService,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(Symbols.ProviderRegistry) private readonly providers: ProviderRegistry,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/tokens', async ({ req, res, query }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const body = asObject(await readJsonBody(req, this.config.maxBody));
      onlyFields(body, ['credential_id', 'ttl', 'models', 'paths', 'max_requests', 'rate_limit']);
      if (typeof body.credential_id !== 'string' || body.credential_id === '') {
        throw Errors.invalidRequest('`credential_id` is required: the id of a stored credential.', 'credential_id');
      }
      const ttlMs = this.tokens.parseTtl(body.ttl);
      const credential = await this.credentials.get(org.id, body.credential_id);
      const provider = this.providers.get(credential.provider);
      if (!provider) throw Errors.unknownProvider(credential.provider);
      const scopes = parseScopes(body, provider);
      const { record, token } = await this.tokens.mint(org.id, body.credential_id, ttlMs, scopes);
      const { id, object, ...rest } = tokenView(record, this.clock.now());
      sendJson(res, 201, { id, object, token, ...rest });
    });

    router.add('GET', '/v1/tokens', async ({ req, res, query }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      const page = await this.tokens.list(org.id, pageQuery(query));
      const now = this.clock.now();
      sendJson(res, 200, { object: 'list', data: page.data.map((t) => tokenView(t, now)), has_more: page.hasMore });
    });

    router.add('GET', '/v1/tokens/:id', async ({ req, res, query, params }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      const record = await this.tokens.get(org.id, params.id!);
      sendJson(res, 200, tokenView(record, this.clock.now(), await this.usage.get('tok', record.id)));
    });

    router.add('DELETE', '/v1/tokens/:id', async ({ req, res, query, params }) => {
      const { org } = await this.orgs.authenticate(req.headers.authorization);
      noQuery(query);
      await this.tokens.revoke(org.id, params.id!);
      sendJson(res, 200, { id: params.id, object: 'token', revoked: true });
    });
  }
}
