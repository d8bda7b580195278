/**
 * `keyward admin-keys create|list|delete`: scoped admin keys on the store, through the admin key service
 * the API uses (same roles, credential checks and ttl rules). The CLI acts for the operator, so it may
 * create any key role; its actions are audited with actor `cli`. A key's value is printed once.
 */
import { adminKeyView, createdAdminKeyView } from '../api/views.js';
import type { AdminKeyRole } from '../store/ports.js';
import { CLI_CREATOR } from '../vault/admin-key-service.js';
import { audited, emit, emitCreated, idArg, listText, one, page, required, SHOWN_ONCE, withOrg, type Command } from './command-kit.js';
import { fields } from './io.js';

export const ADMIN_KEY_COMMANDS: Command[] = [
  {
    words: ['admin-keys', 'create'],
    args: [],
    options: ['org', 'name', 'role', 'credential', 'ttl'],
    flags: {
      name: 'the new key\'s name (optional)',
      credential: 'a credential a minter may mint tokens for (repeatable; none: every credential)',
      ttl: 'how long the new key lasts, up to 366d (default: until deleted)',
    },
    creates: true,
    summary: 'create a scoped admin key (otok_…) with a role: admin, minter or viewer',
    details: [
      'admin: everything but rotating the organisation token; minter: only minting proxy tokens',
      '(for the --credential ids given, repeatable; none: every credential) and reading its own;',
      'viewer: read only. --ttl (up to 366d) makes it expire; without it, it lasts until deleted.',
      'The key is printed once. With --json: {"id", "token", "name", "role", "credential_ids"?, "expires_at", …}.',
    ].join('\n'),
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const name = one(ctx, 'name');
      const credentials = ctx.options.credential === undefined ? undefined : ([] as string[]).concat(ctx.options.credential);
      const ttl = one(ctx, 'ttl');
      const { record, token } = await vault.adminKeys.create(org.id, CLI_CREATOR, {
        ...(name !== undefined ? { name } : {}), role: required(ctx, 'role') as AdminKeyRole, ...(credentials ? { credentialIds: credentials } : {}), ...(ttl !== undefined ? { ttl } : {}),
      });
      await audited(vault, org.id, 'admin_key.create', record.id, record.name);
      const view = createdAdminKeyView(record, token, Date.now());
      emitCreated(ctx, view, `${fields([
        ['id', view.id], ['token', token], ['name', view.name], ['role', view.role], ['credentials', view.credential_ids?.join(', ')], ['expires_at', view.expires_at ?? 'never'],
      ])}\n${SHOWN_ONCE}`, `token: ${token}`);
    },
  },
  {
    words: ['admin-keys', 'list'],
    args: [],
    options: ['org', 'name', 'limit', 'starting-after'],
    summary: 'list an organisation\'s admin keys, newest first (never their values)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const p = await vault.adminKeys.list(org.id, page(ctx));
      const now = Date.now();
      const data = p.data.map((k) => adminKeyView(k, now));
      const rows = data.map((k) => [k.id, k.name ?? '', k.role, k.status, k.expires_at ?? 'never']);
      emit(ctx, { data, has_more: p.hasMore }, listText(data, p.hasMore, ['ID', 'NAME', 'ROLE', 'STATUS', 'EXPIRES'], rows, 'No admin keys.'));
    },
  },
  {
    words: ['admin-keys', 'delete'],
    args: ['<akey_id>'],
    options: ['org'],
    summary: 'revoke an admin key (refused at once by every running server)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = idArg(ctx, 'akey', 'the admin key');
      const gone = await vault.adminKeys.delete(org.id, CLI_CREATOR.role, id);
      await audited(vault, org.id, 'admin_key.revoke', id, gone.name);
      emit(ctx, { id, revoked: true }, `Revoked admin key ${id}.`);
    },
  },
];
