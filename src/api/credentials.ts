/** /v1/credentials: store, list (by name prefix too), read, rename, rotate and delete provider keys (org token). */
import { inject, injectable } from 'tsyringe';
import type { TObject } from '@sinclair/typebox';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import type { BodyContract, Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import { orgOf } from './params.js';
import {
  credentialRotateContract, CredentialDeleted, credentialCreateContract, credentialCreateSchema, credentialDeclarations, credentialListSchema,
  credentialViewSchema, type CredentialCreateBody,
} from './schemas/credentials.js';
import { NAME_CHANGE } from './schemas/common.js';
import { NAMED_PAGE } from './schemas/query.js';
import { credentialView, listView } from './views.js';
import { OAuthConnectApi } from './oauth-connect.js';
import { oauthCredentialCreateSchema } from './schemas/oauth-connect.js';
import { isOAuthCredential } from '../vault/oauth-credential.js';
import type { AdminRequest } from '../http/router.js';
import type { CredentialRecord } from '../store/ports.js';

@injectable()
export class CredentialsApi {
  /** Built once at start from the loaded providers' declarations. */
  private readonly create: BodyContract<CredentialCreateBody>;
  private readonly view: TObject;
  private readonly rotateBody: BodyContract<Record<string, string>>;

  constructor(
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(Symbols.ProviderRegistry) providers: ProviderRegistry,
    @inject(OAuthConnectApi) private readonly oauth: OAuthConnectApi,
  ) {
    const declarations = credentialDeclarations(providers);
    const oauthCreate = oauthCredentialCreateSchema(providers);
    this.create = credentialCreateContract(credentialCreateSchema(declarations, oauthCreate), oauthCreate);
    this.rotateBody = credentialRotateContract(declarations);
    this.view = credentialViewSchema(providers, declarations);
  }

  register(router: Router): void {
    router.add('POST', '/v1/credentials', {
      auth: 'org', action: 'credential.create', idempotent: true, body: this.create,
      operationId: 'createCredential', tag: 'credentials', summary: 'Store a provider key',
      description: 'Encrypted with a fresh data key; never shown again.',
      response: { status: 201, schema: this.view, description: 'The stored credential.' },
      errors: ['unknown_provider', 'limit_exceeded'],
    }, async (r) => {
      const org = orgOf(r);
      const input = await r.body();
      if (input.kind === 'oauth') return { status: 201, body: await this.viewOf(r, await this.credentials.createOAuth(org.id, input.provider, input, input.name)) };
      // The provider's own rules have the last word on each field (shared with the CLI).
      const values = this.credentials.parseCredentialInput(input.provider, input);
      return { status: 201, body: credentialView(await this.credentials.create(org.id, input.provider, values.secrets, values.plain, input.name)) };
    });

    router.add('GET', '/v1/credentials', {
      auth: 'org', query: NAMED_PAGE, operationId: 'listCredentials', tag: 'credentials', summary: 'List credentials',
      description: '`name` keeps those whose name starts with it (case-insensitive).',
      response: { status: 200, schema: credentialListSchema(this.view), description: 'A page of credentials, newest first.' },
    }, async (r) => {
      const page = await this.credentials.list(orgOf(r).id, r.query);
      const views = await Promise.all(page.data.map((c) => this.viewOf(r, c)));
      return { status: 200, body: { ...listView(page, (c) => credentialView(c)), data: views } };
    });

    router.add('GET', '/v1/credentials/:id', {
      auth: 'org', operationId: 'getCredential', tag: 'credentials', summary: 'Get a credential, with its usage',
      response: { status: 200, schema: this.view, description: 'The credential with `usage`.' },
      errors: ['not_found'],
    }, async (r) => {
      const record = await this.credentials.get(orgOf(r).id, r.params.id!);
      const usage = await this.usage.get('cred', record.id);
      return { status: 200, body: { ...(await this.viewOf(r, record)), usage: credentialView(record, usage).usage! } };
    });

    router.add('PATCH', '/v1/credentials/:id', {
      auth: 'org', action: 'credential.update', body: NAME_CHANGE, operationId: 'updateCredential', tag: 'credentials', summary: 'Rename a credential',
      description: 'Sets its `name` (null removes it). Its key, fields and tokens are untouched.',
      response: { status: 200, schema: this.view, description: 'The credential with its new name.' },
      errors: ['not_found'],
    }, async (r) => {
      const { name } = await r.body();
      return { status: 200, body: await this.viewOf(r, await this.credentials.rename(orgOf(r).id, r.params.id!, name)) };
    });

    router.add('POST', '/v1/credentials/:id/rotate', {
      auth: 'org', action: 'credential.rotate', idempotent: true, body: this.rotateBody,
      operationId: 'rotateCredential', tag: 'credentials', summary: 'Replace a credential\'s key in place',
      description: 'Its tokens keep working, with the new key.',
      response: { status: 200, schema: this.view, description: 'The credential with its new `key_hint`.' },
      errors: ['not_found'],
    }, async (r) => {
      const org = orgOf(r);
      // The provider's secret fields (`api_key` for a key-based one); plain fields are fixed at creation.
      return { status: 200, body: await this.viewOf(r, await this.credentials.rotate(org.id, r.params.id!, await r.body())) };
    });

    // Upstream OAuth credentials: connect (start, complete) and disconnect (api/oauth-connect.ts).
    this.oauth.register(router, this.view);

    router.add('DELETE', '/v1/credentials/:id', {
      auth: 'org', action: 'credential.delete', operationId: 'deleteCredential', tag: 'credentials', summary: 'Delete a credential and its tokens',
      description: 'Takes effect at once on this instance, within a second on every other; a second DELETE → 404.',
      response: { status: 200, schema: CredentialDeleted, description: 'Deleted.' },
      errors: ['not_found'],
    }, async (r) => {
      const gone = await this.credentials.delete(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: r.params.id!, object: 'credential' as const, deleted: true as const }, ...(gone.name !== undefined ? { targetName: gone.name } : {}) };
    });
  }

  /** The view, with an OAuth credential's connection state (the caller's own, for a per-member one). */
  private viewOf(r: AdminRequest<unknown, unknown>, record: CredentialRecord) {
    return isOAuthCredential(record.fields) ? this.oauth.viewOf(r, record) : Promise.resolve(credentialView(record));
  }
}
