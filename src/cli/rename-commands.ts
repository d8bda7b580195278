/**
 * `keyward credentials|tokens|admin-keys rename <id> --name <text>`: the API's PATCH of a record's name,
 * through the same services (the name rule is vault/names.ts), audited with actor `cli`. `--name ''`
 * removes the name.
 */
import { adminKeyView, credentialView, tokenView } from '../api/views.js';
import type { Vault } from '../boot/vault.js';
import type { AuditAction } from '../controls/audit-actions.js';
import { CLI_CREATOR } from '../vault/admin-key-service.js';
import { audited, emit, idArg, one, withOrg, type Command } from './command-kit.js';
import { UsageError } from './io.js';

interface Renamed {
  id: string;
  name?: string;
}

function renameCommand(group: string, prefix: 'cred' | 'tok' | 'akey', what: string, action: AuditAction,
  rename: (vault: Vault, orgId: string, id: string, name: string | null) => Promise<Renamed>): Command {
  return {
    words: [group, 'rename'],
    args: [`<${prefix}_id>`],
    options: ['org', 'name'],
    flags: { name: `the ${what}'s new name ('' removes it)` },
    summary: `name ${/^[aeiou]/.test(what) ? 'an' : 'a'} ${what}, or remove its name with --name ''`,
    async run(ctx) {
      const given = one(ctx, 'name');
      if (given === undefined) throw new UsageError("--name is required (--name '' removes the name)");
      const [vault, org] = await withOrg(ctx);
      const id = idArg(ctx, prefix, `the ${what}`);
      const view = await rename(vault, org.id, id, given === '' ? null : given);
      await audited(vault, org.id, action, id, view.name);
      emit(ctx, view, view.name === undefined ? `Removed the name of ${what} ${id}.` : `Named ${what} ${id} "${view.name}".`);
    },
  };
}

export const RENAME_COMMANDS: Command[] = [
  renameCommand('credentials', 'cred', 'credential', 'credential.update', async (v, org, id, name) => credentialView(await v.credentials.rename(org, id, name))),
  renameCommand('tokens', 'tok', 'token', 'token.update', async (v, org, id, name) => tokenView(await v.tokens.rename(org, id, name), Date.now())),
  renameCommand('admin-keys', 'akey', 'admin key', 'admin_key.update', async (v, org, id, name) => adminKeyView(await v.adminKeys.rename(org, CLI_CREATOR.role, id, name), Date.now())),
];
