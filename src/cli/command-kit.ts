/**
 * What every `keyward` command is made of: the command and context types, each flag's help, and the
 * helpers the command tables share (reading flags and ids, paging, the organisation a command acts on,
 * auditing, printing a created record). The tables themselves are commands.ts and the *-commands.ts files.
 */
import { NAMED_PAGE } from '../api/schemas/query.js';
import type { Vault } from '../boot/vault.js';
import type { AuditAction } from '../controls/audit-actions.js';
import type { NamedPageQuery, OrgRecord } from '../store/ports.js';
import { isId } from '../ids.js';
import { fields, NotFound, table, UsageError, type Io } from './io.js';

export type OptionName =
  | 'org' | 'provider' | 'credential' | 'ttl' | 'limit' | 'starting-after'
  | 'model' | 'path' | 'max-requests' | 'rate-limit' | 'budget-usd' | 'tools' | 'name' | 'role'
  | 'issuer' | 'audience' | 'subject' | 'claim' | 'status' | 'activate-in' | 'pool' | 'tokens-per-minute' | 'max-concurrent' | 'by' | 'from' | 'to' | 'strategy' | 'gateway';

export interface Context {
  io: Io;
  json: boolean;
  /** --quiet: a create command prints the new id alone (createdOutput). */
  quiet: boolean;
  /** Positional arguments after the command's words. */
  args: string[];
  options: Partial<Record<OptionName, string | string[]>>;
  vault(): Promise<Vault>;
}

export interface Command {
  words: string[];
  args: string[];
  options: OptionName[];
  /** What a flag sets for this command, where the shared words (OPTION_HELP) do not fit it. */
  flags?: Partial<Record<OptionName, string>>;
  /** A create command: --quiet prints the new id alone. */
  creates?: true;
  summary: string;
  details?: string;
  run(ctx: Context): Promise<void>;
}

/**
 * Each flag's synopsis and what it sets, as most commands use it; a command whose flag sets something else says so in
 * its own `flags` (a pool's --credential is a member, a create command's --name the new record's name).
 * test/cli/help.test.ts reads every command's help against what the command does.
 */
export const OPTION_HELP: Record<OptionName | 'json' | 'help' | 'quiet', string> = {
  org: '--org <org_id>            the organisation (org_…)',
  provider: '--provider <id>           the provider the key belongs to, such as openai or anthropic',
  credential: '--credential <cred_id>    the credential the new token is bound to',
  ttl: '--ttl <duration>          the new token\'s lifetime: a positive integer and one unit of s m h d (default 15m)',
  limit: '--limit <n>               how many to list, 1 to 100 (default 20)',
  'starting-after': '--starting-after <id>     list the page after this id',
  model: '--model <name|prefix*>    allow only this model (repeatable)',
  path: '--path <pattern>          allow only this provider path (repeatable)',
  'max-requests': '--max-requests <n>        at most n proxied requests over the token\'s life',
  'rate-limit': '--rate-limit <n>          at most n proxied requests per minute',
  pool: '--pool <pool_id>          the pool the new token spreads over (instead of --credential)',
  'tokens-per-minute': '--tokens-per-minute <n>   at most n input + output tokens per rolling minute',
  'max-concurrent': '--max-concurrent <n>      at most n requests or streams open at once',
  issuer: '--issuer <url>            the OIDC issuer, one of KEYWARD_OIDC_ISSUERS',
  audience: '--audience <aud>          the audience the workload asks its OIDC token for',
  subject: '--subject <sub|prefix*>   the token\'s subject, exactly or as a prefix and *',
  claim: '--claim <name=value>      a further claim the token must hold with this value (repeatable)',
  name: '--name <text>             list only those whose name starts with this (any case)',
  status: '--status revoked          list the revoked tokens instead of the live ones',
  role: '--role <role>             the new key\'s role: admin, minter or viewer',
  'budget-usd': '--budget-usd <amount>     at most this many US dollars over the token\'s life, e.g. 25.00',
  tools: '--tools <name,prefix*,…>  an MCP server\'s tools it may call, comma-separated (repeatable)',
  'activate-in': '--activate-in <duration>  how long a new signing key is published before it signs (default 5m; 0s: at once)',
  by: '--by <what>               what to break usage down by: token, credential or model',
  strategy: '--strategy <name>         how the pool picks a member: round_robin (default), ordered or least_busy',
  from: '--from <YYYY-MM-DD>       the first day (UTC; default: the first of the month)',
  to: '--to <YYYY-MM-DD>         the last day (UTC; default: today)',
  gateway: '--gateway <url>           the gateway\'s public URL (https)',
  json: '--json                    print JSON on stdout instead of text',
  quiet: '--quiet                   print only the new id (a secret shown once goes to stderr instead)',
  help: '--help, -h                show this help',
};

/** A flag's help line for a command: its synopsis, then what it sets for this command. */
export function optionLine(c: Command, o: OptionName): string {
  const own = c.flags?.[o];
  if (own === undefined) return OPTION_HELP[o];
  return `${OPTION_HELP[o].split(/\s{2,}/)[0]!.padEnd(26)}${own}`;
}

// ---- shared helpers ---------------------------------------------------------

/** The CLI's actions are admin actions too: audited with actor `cli`, stored before the command reports success. */
export function audited(vault: Vault, org: string, action: AuditAction, target: string, targetName?: string): Promise<void> {
  return vault.audit.record({ requestId: 'cli', org, actor: 'cli', action, target, ...(targetName !== undefined ? { targetName } : {}), outcome: 'success', ip: '' });
}

export function one(ctx: Context, name: OptionName): string | undefined {
  const v = ctx.options[name];
  return Array.isArray(v) ? v[v.length - 1] : v;
}

export function required(ctx: Context, name: OptionName): string {
  const v = one(ctx, name);
  if (v === undefined || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function idArg(ctx: Context, prefix: 'cred' | 'tok' | 'akey', what: string): string {
  const id = ctx.args[0]!;
  if (!isId(prefix, id)) throw new UsageError(`${what} must be an id such as ${prefix}_…, got ${JSON.stringify(id.slice(0, 40))}`);
  return id;
}

/** Checks --org's shape before the store is opened, then that the organisation exists (exit 3 if not). */
export async function withOrg(ctx: Context): Promise<[Vault, OrgRecord]> {
  const id = required(ctx, 'org');
  if (!isId('org', id)) throw new UsageError(`--org must be an organisation id such as org_…, got ${JSON.stringify(id.slice(0, 40))}`);
  const vault = await ctx.vault();
  const org = await vault.store.getOrg(id);
  if (!org) throw new NotFound(`no organisation ${id}`);
  return [vault, org];
}

/** --limit, --starting-after and (a list of named records) --name, checked as the API checks its query. */
export function page(ctx: Context): NamedPageQuery {
  const q = new URLSearchParams();
  const limit = one(ctx, 'limit');
  const after = one(ctx, 'starting-after');
  const name = one(ctx, 'name');
  if (limit !== undefined) q.set('limit', limit);
  if (after !== undefined) q.set('starting_after', after);
  if (name !== undefined) q.set('name', name);
  return NAMED_PAGE.parse(q);
}

/** A list's text: its table, or `none` when empty, and how to read on. */
export function listText(data: Array<{ id: string }>, hasMore: boolean, header: string[], rows: string[][], none: string): string {
  if (data.length === 0) return none;
  return table(header, rows) + (hasMore ? `\n(more: --starting-after ${data[data.length - 1]!.id})` : '');
}

/** The scope flags as the API's body fields; the token service checks them as it checks the API's. */
export function scopeFlags(ctx: Context): Record<string, unknown> {
  const scopes: Record<string, unknown> = {};
  const list = (name: OptionName) => ctx.options[name] === undefined ? undefined : ([] as string[]).concat(ctx.options[name]!);
  const int = (name: OptionName) => {
    const v = one(ctx, name);
    return v === undefined ? undefined : /^-?[0-9]+$/.test(v) ? Number(v) : v;
  };
  if (list('model')) scopes.models = list('model');
  if (list('path')) scopes.paths = list('path');
  if (int('max-requests') !== undefined) scopes.max_requests = int('max-requests');
  if (int('rate-limit') !== undefined) scopes.rate_limit = int('rate-limit');
  if (int('tokens-per-minute') !== undefined) scopes.tokens_per_minute = int('tokens-per-minute');
  if (int('max-concurrent') !== undefined) scopes.max_concurrent = int('max-concurrent');
  if (one(ctx, 'budget-usd') !== undefined) scopes.budget_usd = one(ctx, 'budget-usd');
  if (list('tools')) scopes.tools = list('tools')!.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  return scopes;
}

export function emit(ctx: Context, json: unknown, text: string): void {
  ctx.io.stdout.write(ctx.json ? JSON.stringify(json, null, 2) + '\n' : text + '\n');
}

export const SHOWN_ONCE = 'This token is shown once: store it now.';

/**
 * A create command's answer: as emit, or with --quiet the new id alone on stdout (for `ID=$(keyward … --quiet)`);
 * a secret shown once (`shownOnce`, e.g. `token: ptok_…`) then goes to stderr, so it is seen and never lost.
 */
export function emitCreated(ctx: Context, json: { id: string }, text: string, shownOnce?: string): void {
  if (!ctx.quiet) return emit(ctx, json, text);
  ctx.io.stdout.write(`${json.id}\n`);
  if (shownOnce !== undefined) ctx.io.stderr.write(`${shownOnce}\n${SHOWN_ONCE}\n`);
}
