/**
 * /v1/admin-keys: create, list, read, rename and delete scoped admin keys (owner or admin only). The key's value is
 * answered once; lists and reads never show it. A caller never creates or deletes a key above itself, nor one
 * that outlives its own token (the admin key service says how).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { AdminKeyService } from '../vault/admin-key-service.js';
import { WRITERS } from '../vault/roles.js';
import { creatorOf, orgOf } from './params.js';
import { AdminKey, ADMIN_KEY_CREATE, AdminKeyCreated, AdminKeyList, AdminKeyRevoked } from './schemas/admin-keys.js';
import { NAME_CHANGE } from './schemas/common.js';
import { NAMED_PAGE } from './schemas/query.js';
import { adminKeyView, createdAdminKeyView, listView } from './views.js';

@injectable()
export class AdminKeysApi {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(AdminKeyService) private readonly keys: AdminKeyService,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/admin-keys', {
      auth: 'org', roles: WRITERS, action: 'admin_key.create', idempotent: true, body: ADMIN_KEY_CREATE,
      operationId: 'createAdminKey', tag: 'admin keys', summary: 'Create a scoped admin key',
      description: 'An `otok_…` key with a role (`admin`, `minter`, `viewer`), used as `Authorization: Bearer` like the organisation token. Shown once. A caller creates only roles it covers, and a key made by an expiring key ends with it at the latest.',
      response: { status: 201, schema: AdminKeyCreated, description: 'The key (its value shown once).' },
      errors: ['invalid_ttl', 'forbidden', 'not_found'],
    }, async (r) => {
      const org = orgOf(r);
      const input = await r.body();
      const { record, token } = await this.keys.create(org.id, creatorOf(r), {
        ...(input.name !== undefined ? { name: input.name } : {}), role: input.role, ...(input.credential_ids ? { credentialIds: input.credential_ids } : {}), ...(input.ttl !== undefined ? { ttl: input.ttl } : {}),
      });
      return { status: 201, body: createdAdminKeyView(record, token, this.clock.now()), secretFields: ['token'] };
    });

    router.add('GET', '/v1/admin-keys', {
      auth: 'org', roles: WRITERS, query: NAMED_PAGE, operationId: 'listAdminKeys', tag: 'admin keys', summary: 'List admin keys',
      description: '`name` keeps those whose name starts with it (case-insensitive).',
      response: { status: 200, schema: AdminKeyList, description: 'A page of admin keys, newest first (never a key value).' },
    }, async (r) => {
      const page = await this.keys.list(orgOf(r).id, r.query);
      const now = this.clock.now();
      return { status: 200, body: listView(page, (k) => adminKeyView(k, now)) };
    });

    router.add('GET', '/v1/admin-keys/:id', {
      auth: 'org', roles: WRITERS, operationId: 'getAdminKey', tag: 'admin keys', summary: 'Get an admin key',
      response: { status: 200, schema: AdminKey, description: 'The admin key (never its value).' },
      errors: ['not_found'],
    }, async (r) => ({ status: 200, body: adminKeyView(await this.keys.get(orgOf(r).id, r.params.id!), this.clock.now()) }));

    router.add('PATCH', '/v1/admin-keys/:id', {
      auth: 'org', roles: WRITERS, action: 'admin_key.update', body: NAME_CHANGE, operationId: 'updateAdminKey', tag: 'admin keys', summary: 'Rename an admin key',
      description: 'Sets its `name` (null removes it); only a key the caller could create (an admin renames no owner-level key).',
      response: { status: 200, schema: AdminKey, description: 'The admin key with its new name.' },
      errors: ['forbidden', 'not_found'],
    }, async (r) => {
      const { name } = await r.body();
      return { status: 200, body: adminKeyView(await this.keys.rename(orgOf(r).id, creatorOf(r).role, r.params.id!, name), this.clock.now()) };
    });

    router.add('DELETE', '/v1/admin-keys/:id', {
      auth: 'org', roles: WRITERS, action: 'admin_key.revoke', operationId: 'revokeAdminKey', tag: 'admin keys', summary: 'Revoke an admin key',
      description: 'Refused at once on every instance (admin keys are read on each request, never cached); later GET or DELETE → 404.',
      response: { status: 200, schema: AdminKeyRevoked, description: 'Revoked.' },
      errors: ['forbidden', 'not_found'],
    }, async (r) => {
      const gone = await this.keys.delete(orgOf(r).id, creatorOf(r).role, r.params.id!);
      return { status: 200, body: { id: r.params.id!, object: 'admin_key' as const, revoked: true as const }, ...(gone.name !== undefined ? { targetName: gone.name } : {}) };
    });
  }
}
