/**
 * `keyward pools create|list|rename|delete`: pools of one provider's credentials that a token's requests fail
 * over across (docs/operate/pools.md). Straight on the store through the pool service, so the CLI and the API share
 * every rule (members of one provider, 1 to 16, names as vault/names.ts says); audited with actor `cli`.
 * Member health (cooling, recent answers) is a running gateway's: `GET /v1/pools/:id`.
 */
import { isId } from '../ids.js';
import type { PoolRecord } from '../store/pool-port.js';
import { audited, emit, emitCreated, listText, one, page, required, withOrg, type Command, type Context } from './command-kit.js';
import { fields, UsageError } from './io.js';

const STRATEGIES = ['round_robin', 'ordered', 'least_busy'] as const;

/** The pool as the CLI prints it (the API's view without the health a running gateway keeps). */
const view = (p: PoolRecord) => ({
  id: p.id, object: 'pool' as const, ...(p.name !== undefined ? { name: p.name } : {}), provider: p.provider, strategy: p.strategy,
  members: p.members.map((m) => ({ credential_id: m.credentialId, weight: m.weight })),
});

function poolId(ctx: Context): string {
  const id = ctx.args[0]!;
  if (!isId('pool', id)) throw new UsageError(`the pool must be an id such as pool_…, got ${JSON.stringify(id.slice(0, 40))}`);
  return id;
}

function strategy(ctx: Context): (typeof STRATEGIES)[number] | undefined {
  const s = one(ctx, 'strategy');
  if (s === undefined) return undefined;
  if (!(STRATEGIES as readonly string[]).includes(s)) throw new UsageError(`--strategy must be one of ${STRATEGIES.join(', ')}`);
  return s as (typeof STRATEGIES)[number];
}

/** `--credential cred_…[:weight]`, repeatable: the members in order. */
function members(ctx: Context): Array<{ credential_id: string; weight?: number }> {
  const given = ctx.options.credential === undefined ? [] : ([] as string[]).concat(ctx.options.credential);
  if (given.length === 0) throw new UsageError('--credential is required (repeat it for each member; cred_…:2 gives a weight)');
  return given.map((g) => {
    const [id, weight] = g.split(':');
    if (weight !== undefined && !/^[1-9][0-9]{0,2}$/.test(weight)) throw new UsageError(`a member's weight is a whole number from 1 to 100, got ${JSON.stringify(weight)}`);
    return { credential_id: id!, ...(weight !== undefined ? { weight: Number(weight) } : {}) };
  });
}

const text = (v: ReturnType<typeof view>) => fields([
  ['id', v.id], ['name', v.name], ['provider', v.provider], ['strategy', v.strategy],
  ['members', v.members.map((m) => `${m.credential_id}${m.weight !== 1 ? `:${m.weight}` : ''}`).join(' ')],
]);

export const POOL_COMMANDS: Command[] = [
  {
    words: ['pools', 'create'],
    args: [],
    options: ['org', 'credential', 'strategy', 'name'],
    flags: {
      credential: 'a member credential of the new pool, cred_… or cred_…:weight (repeat it for each member, in order)',
      name: 'the new pool\'s name (optional)',
    },
    creates: true,
    summary: 'make a pool of credentials of one provider (--credential per member, cred_…:2 for a weight)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const name = one(ctx, 'name');
      const s = strategy(ctx);
      const record = await vault.pools.create(org.id, { members: members(ctx), ...(s ? { strategy: s } : {}), ...(name !== undefined ? { name } : {}) });
      await audited(vault, org.id, 'pool.create', record.id, record.name);
      emitCreated(ctx, view(record), text(view(record)));
    },
  },
  {
    words: ['pools', 'list'],
    args: [],
    options: ['org', 'name', 'limit', 'starting-after'],
    summary: 'list an organisation\'s pools, newest first',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const p = await vault.pools.list(org.id, page(ctx));
      const data = p.data.map(view);
      const rows = data.map((v) => [v.id, v.name ?? '', v.provider, v.strategy, String(v.members.length)]);
      emit(ctx, { data, has_more: p.hasMore }, listText(data, p.hasMore, ['ID', 'NAME', 'PROVIDER', 'STRATEGY', 'MEMBERS'], rows, 'No pools.'));
    },
  },
  {
    words: ['pools', 'rename'],
    args: ['<pool_id>'],
    options: ['org', 'name'],
    flags: { name: 'the pool\'s new name (\'\' removes it)' },
    summary: 'name a pool, or remove its name with --name \'\'',
    async run(ctx) {
      const given = one(ctx, 'name');
      if (given === undefined) throw new UsageError("--name is required (--name '' removes the name)");
      const [vault, org] = await withOrg(ctx);
      const id = poolId(ctx);
      const record = await vault.pools.update(org.id, id, { name: given === '' ? null : given });
      await audited(vault, org.id, 'pool.update', id, record.name);
      emit(ctx, view(record), record.name === undefined ? `Removed the name of pool ${id}.` : `Named pool ${id} "${record.name}".`);
    },
  },
  {
    words: ['pools', 'delete'],
    args: ['<pool_id>'],
    options: ['org'],
    summary: 'delete a pool and the tokens minted for it',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = poolId(ctx);
      const gone = await vault.pools.delete(org.id, id);
      await audited(vault, org.id, 'pool.delete', id, gone.name);
      emit(ctx, { id, object: 'pool', deleted: true }, `Deleted pool ${id} and its tokens.`);
    },
  },
];
