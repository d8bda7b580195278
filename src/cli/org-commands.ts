/**
 * `keyward org create|list`: the operator's organisations, straight on the store (the API's POST /v1/orgs takes
 * KEYWARD_ADMIN_TOKEN; the CLI has the store itself). A new organisation's token is printed once; a list never
 * shows a token.
 */
import { orgSettingsView, orgView } from '../api/views.js';
import { BAD_CURSOR } from '../store/ports.js';
import { audited, emit, emitCreated, listText, one, SHOWN_ONCE, type Command } from './command-kit.js';
import { fields, UsageError } from './io.js';

export const ORG_COMMANDS: Command[] = [
  {
    words: ['org', 'create'],
    args: ['<name>'],
    options: [],
    creates: true,
    summary: 'create an organisation and print its id and token',
    details: 'The token (otok_…) authenticates the admin API and the console as this organisation. It is shown once.\n'
      + 'With --json: {"id", "name", "token", "created_at"}. With --quiet: the id alone (the token on stderr).',
    async run(ctx) {
      const vault = await ctx.vault();
      const { org, token } = await vault.orgs.create(vault.orgs.validateName(ctx.args[0]));
      await audited(vault, org.id, 'org.create', org.id, org.name);
      // The API's view without its `object` (the CLI's JSON is {id, name, token, created_at}).
      const { object: _, ...json } = orgView(org, token);
      emitCreated(ctx, json, `${fields([['id', org.id], ['name', org.name], ['token', token], ['created_at', json.created_at]])}\n${SHOWN_ONCE}`, `token: ${token}`);
    },
  },
  {
    words: ['org', 'list'],
    args: [],
    options: ['limit', 'starting-after'],
    summary: 'list every organisation on the store, newest first (never a token)',
    details: 'With --json: {"data": [{"id", "name", "created_at", "spend_limit_usd"}], "has_more"}.',
    async run(ctx) {
      const raw = one(ctx, 'limit');
      const limit = raw === undefined ? 20 : /^[1-9][0-9]*$/.test(raw) && Number(raw) <= 100 ? Number(raw) : undefined;
      if (limit === undefined) throw new UsageError('--limit must be a whole number from 1 to 100');
      const after = one(ctx, 'starting-after');
      const vault = await ctx.vault();
      const p = await vault.store.listOrgs({ limit, ...(after !== undefined ? { startingAfter: after } : {}) });
      if (p === BAD_CURSOR) throw new UsageError(`--starting-after: no organisation ${JSON.stringify(after!.slice(0, 40))}`);
      const data = p.data.map((o) => {
        const { object: _, ...view } = orgSettingsView(o);
        return view;
      });
      const rows = data.map((o) => [o.id, o.name, o.created_at, o.spend_limit_usd ?? '']);
      emit(ctx, { data, has_more: p.hasMore }, listText(data, p.hasMore, ['ID', 'NAME', 'CREATED', 'MONTHLY LIMIT'], rows, 'No organisations: make one with keyward org create <name>.'));
    },
  },
];
