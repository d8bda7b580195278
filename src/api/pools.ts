/**
 * /v1/pools: create, list (by name prefix too), read with each member's health, change (name, strategy,
 * members) and delete pools (owner or admin; viewers read). Deleting a pool deletes its tokens, at once
 * here and within a second on every other instance.
 */
import type { Static } from '@sinclair/typebox';
import { inject, injectable } from 'tsyringe';
import type { Router } from '../http/router.js';
import type { PoolRecord } from '../store/ports.js';
import { PoolService } from '../vault/pool-service.js';
import { READERS } from '../vault/roles.js';
import { orgOf } from './params.js';
import { Pool, POOL_CREATE, POOL_UPDATE, PoolDeleted, PoolList } from './schemas/pools.js';
import { NAMED_PAGE } from './schemas/query.js';
import { listView } from './views.js';

const iso = (ms: number): string => new Date(ms).toISOString();

@injectable()
export class PoolsApi {
  constructor(@inject(PoolService) private readonly pools: PoolService) {}

  /** The pool as the API shows it: each member with its cooling (shared) and recent outcomes (this instance's). */
  private view(p: PoolRecord): Static<typeof Pool> {
    return {
      id: p.id, object: 'pool', ...(p.name !== undefined ? { name: p.name } : {}), provider: p.provider, strategy: p.strategy,
      members: p.members.map((m) => {
        const h = this.pools.health(p, m.credentialId);
        return { credential_id: m.credentialId, weight: m.weight, cooling_until: h.coolingUntil === null ? null : iso(h.coolingUntil), recent: h.recent };
      }),
      created_at: iso(p.createdAt), updated_at: iso(p.updatedAt),
    };
  }

  register(router: Router): void {
    router.add('POST', '/v1/pools', {
      auth: 'org', roles: ['owner', 'admin'], action: 'pool.create', idempotent: true, body: POOL_CREATE,
      operationId: 'createPool', tag: 'pools', summary: 'Create a pool of credentials',
      description: 'Members: 1 to 16 distinct credentials of this organisation (404 for one that is not) sharing one provider (400 otherwise). Mint tokens for it with `pool_id`.',
      response: { status: 201, schema: Pool, description: 'The pool.' },
      errors: ['not_found'],
    }, async (r) => {
      const body = await r.body();
      return { status: 201, body: this.view(await this.pools.create(orgOf(r).id, body)) };
    });

    router.add('GET', '/v1/pools', {
      auth: 'org', roles: READERS, query: NAMED_PAGE, operationId: 'listPools', tag: 'pools', summary: 'List pools',
      description: '`name` keeps those whose name starts with it (case-insensitive).',
      response: { status: 200, schema: PoolList, description: 'A page of pools, newest first.' },
    }, async (r) => {
      const page = await this.pools.list(orgOf(r).id, r.query);
      return { status: 200, body: listView(page, (p) => this.view(p)) };
    });

    router.add('GET', '/v1/pools/:id', {
      auth: 'org', roles: READERS, operationId: 'getPool', tag: 'pools', summary: 'Get a pool, with each member\'s health',
      response: { status: 200, schema: Pool, description: 'The pool.' },
      errors: ['not_found'],
    }, async (r) => ({ status: 200, body: this.view(await this.pools.get(orgOf(r).id, r.params.id!)) }));

    router.add('PATCH', '/v1/pools/:id', {
      auth: 'org', roles: ['owner', 'admin'], action: 'pool.update', body: POOL_UPDATE, operationId: 'updatePool', tag: 'pools', summary: 'Change a pool',
      description: 'Its `name` (null removes it), `strategy` or `members` (of the pool\'s provider); its tokens use the change within a second everywhere.',
      response: { status: 200, schema: Pool, description: 'The pool after the change.' },
      errors: ['not_found'],
    }, async (r) => ({ status: 200, body: this.view(await this.pools.update(orgOf(r).id, r.params.id!, await r.body())) }));

    router.add('DELETE', '/v1/pools/:id', {
      auth: 'org', roles: ['owner', 'admin'], action: 'pool.delete', operationId: 'deletePool', tag: 'pools', summary: 'Delete a pool and its tokens',
      description: 'Takes effect at once on this instance, within a second on every other; a second DELETE → 404.',
      response: { status: 200, schema: PoolDeleted, description: 'Deleted.' },
      errors: ['not_found'],
    }, async (r) => {
      const gone = await this.pools.delete(orgOf(r).id, r.params.id!);
      return { status: 200, body: { id: gone.id, object: 'pool' as const, deleted: true as const }, ...(gone.name !== undefined ? { targetName: gone.name } : {}) };
    });
  }
}
