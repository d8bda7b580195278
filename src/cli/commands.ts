/**
 * The `keyward` commands. Each works straight on the store with the same
 * configuration (environment) as the server, through the vault services, so
 * the CLI and the API share every rule (limits, ttl grammar, scopes). Changes
 * reach running servers through the store's change feed within a second.
 */
import { NAMED_PAGE } from '../api/schemas/query.js';
import { HELD_MEANS } from '../api/schemas/usage.js';
import { auditView, credentialView, mintedTokenView, revokedTokenView, tokenView, usageSummaryView } from '../api/views.js';
import type { Vault } from '../container.js';
import type { AuditAction } from '../controls/audit-actions.js';
import { AuditActors } from '../controls/audit-actors.js';
import type { NamedPageQuery, OrgRecord } from '../store/ports.js';
import { RewrapService } from '../vault/rewrap-service.js';
import { isId } from '../ids.js';
import { fields, NotFound, readSecret, table, UsageError, type Io } from './io.js';

export type OptionName =
  | 'org' | 'provider' | 'credential' | 'ttl' | 'limit' | 'starting-after'
  | 'model' | 'path' | 'max-requests' | 'rate-limit' | 'budget-usd' | 'tools' | 'name' | 'role'
  | 'issuer' | 'audience' | 'subject' | 'claim' | 'status' | 'activate-in' | 'pool' | 'tokens-per-minute' | 'max-concurrent' | 'by' | 'from' | 'to' | 'strategy';

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

// ---- the commands -----------------------------------------------------------

export const COMMANDS: Command[] = [
  {
    words: ['credentials', 'list'],
    args: [],
    options: ['org', 'name', 'limit', 'starting-after'],
    summary: 'list an organisation\'s credentials, newest first',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const p = await vault.credentials.list(org.id, page(ctx));
      const data = p.data.map((c) => credentialView(c));
      const rows = data.map((c) => [c.id, c.name ?? '', c.provider, c.key_hint, c.created_at]);
      emit(ctx, { data, has_more: p.hasMore }, listText(data, p.hasMore, ['ID', 'NAME', 'PROVIDER', 'KEY', 'CREATED'], rows, 'No credentials.'));
    },
  },
  {
    words: ['credentials', 'get'],
    args: ['<cred_id>'],
    options: ['org'],
    summary: 'show one credential (never its key)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const c = await vault.credentials.get(org.id, idArg(ctx, 'cred', 'the credential'));
      const view = credentialView(c, await vault.usage.get('cred', c.id));
      emit(ctx, view, fields([
        ['id', view.id], ['name', view.name], ['provider', view.provider], ['key_hint', view.key_hint], ['created_at', view.created_at], ['updated_at', view.updated_at],
        ['requests', view.usage!.requests], ['input_tokens', view.usage!.input_tokens], ['output_tokens', view.usage!.output_tokens],
        ['spend_usd', view.usage!.spend_usd],
      ]));
    },
  },
  {
    words: ['credentials', 'create'],
    args: [],
    options: ['org', 'provider', 'name'],
    flags: { name: 'the new credential\'s name (optional)' },
    creates: true,
    summary: 'store a provider API key, read from stdin or typed at a prompt',
    details: 'The key is read from stdin (a pipe or file), or typed at a prompt that does not echo.\nIt is never taken from the command line, where shell history and ps would keep it.\n\nExample:  keyward credentials create --org org_… --provider openai < openai.key',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const provider = required(ctx, 'provider');
      if (!vault.providers.get(provider)) throw new UsageError(`unknown provider ${JSON.stringify(provider.slice(0, 40))}; known: ${vault.providers.ids().join(', ')}`);
      // The provider's declared rules check the key (create and rotate run them): the same rules as the API's.
      const apiKey = await readSecret(ctx.io, `${provider} API key (not echoed): `);
      const c = credentialView(await vault.credentials.create(org.id, provider, apiKey, {}, one(ctx, 'name')));
      await audited(vault, org.id, 'credential.create', c.id, c.name);
      emitCreated(ctx, c, `Stored credential ${c.id}${c.name !== undefined ? ` "${c.name}"` : ''} (${c.provider}, key ${c.key_hint}).`);
    },
  },
  {
    words: ['credentials', 'rotate'],
    args: ['<cred_id>'],
    options: ['org'],
    summary: 'replace a credential\'s key in place (same id; its tokens keep working)',
    details: 'The new key is read from stdin, or typed at a prompt that does not echo; never from the command line.',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = idArg(ctx, 'cred', 'the credential');
      await vault.credentials.get(org.id, id); // not found before asking for a key
      const apiKey = await readSecret(ctx.io, 'new API key (not echoed): ');
      const c = credentialView(await vault.credentials.rotate(org.id, id, apiKey));
      await audited(vault, org.id, 'credential.rotate', id);
      emit(ctx, c, `Rotated credential ${c.id} (${c.provider}, key ${c.key_hint}).`);
    },
  },
  {
    words: ['credentials', 'delete'],
    args: ['<cred_id>'],
    options: ['org'],
    summary: 'delete a credential and every token bound to it',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = idArg(ctx, 'cred', 'the credential');
      const gone = await vault.credentials.delete(org.id, id);
      await audited(vault, org.id, 'credential.delete', id, gone.name);
      emit(ctx, { id, deleted: true }, `Deleted credential ${id} and its tokens.`);
    },
  },
  {
    words: ['tokens', 'list'],
    args: [],
    options: ['org', 'name', 'status', 'limit', 'starting-after'],
    summary: 'list an organisation\'s proxy tokens, newest first (never their values); --status revoked: the revoked ones',
    async run(ctx) {
      const status = one(ctx, 'status');
      if (status !== undefined && status !== 'revoked') throw new UsageError('--status takes only revoked (leave it out for live tokens)');
      const [vault, org] = await withOrg(ctx);
      const now = Date.now();
      const p = status === 'revoked'
        ? await vault.tokens.listRevoked(org.id, page(ctx)).then((r) => ({ hasMore: r.hasMore, data: r.data.map(revokedTokenView) }))
        : await vault.tokens.list(org.id, page(ctx)).then((r) => ({ hasMore: r.hasMore, data: r.data.map((t) => tokenView(t, now)) }));
      const rows = p.data.map((t) => [t.id, t.name ?? '', t.credential_id ?? t.pool_id ?? '', t.status, t.revoked_at ?? t.expires_at]);
      emit(ctx, { data: p.data, has_more: p.hasMore }, listText(p.data, p.hasMore, ['ID', 'NAME', 'BOUND TO', 'STATUS', status ? 'REVOKED' : 'EXPIRES'], rows, status ? 'No revoked tokens.' : 'No tokens.'));
    },
  },
  {
    words: ['tokens', 'get'],
    args: ['<tok_id>'],
    options: ['org'],
    summary: 'show one proxy token (never its value)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const t = await vault.tokens.get(org.id, idArg(ctx, 'tok', 'the token'));
      const view = tokenView(t, Date.now(), await vault.usage.get('tok', t.id));
      emit(ctx, view, fields([
        ['id', view.id], ['name', view.name], ['credential_id', view.credential_id], ['status', view.status], ['created_at', view.created_at], ['expires_at', view.expires_at],
        ['models', view.models?.join(', ')], ['paths', view.paths?.join(', ')], ['max_requests', view.max_requests], ['rate_limit', view.rate_limit],
        ['budget_usd', view.budget_usd], ['tools', view.tools?.join(', ')], ['requests', view.usage!.requests], ['spend_usd', view.usage!.spend_usd],
      ]));
    },
  },
  {
    words: ['tokens', 'create'],
    args: [],
    options: ['org', 'credential', 'pool', 'ttl', 'name', 'model', 'path', 'max-requests', 'rate-limit', 'budget-usd', 'tools', 'tokens-per-minute', 'max-concurrent'],
    flags: { name: 'the new token\'s name (optional)' },
    creates: true,
    summary: 'mint a proxy token (ptok_…) bound to a credential (or a pool)',
    details: 'The token is printed once. With --json: {"id", "token", "credential_id", "created_at", "expires_at", …}.',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const poolId = one(ctx, 'pool');
      const credentialId = poolId === undefined ? required(ctx, 'credential') : one(ctx, 'credential');
      const scopes = scopeFlags(ctx);
      const { record, token } = await vault.tokens.mintFor(org.id, { credentialId, poolId, ttl: one(ctx, 'ttl') ?? '15m', scopes, createdBy: 'cli', name: one(ctx, 'name') });
      await audited(vault, org.id, 'token.create', record.id, record.name);
      const view = mintedTokenView(record, token, Date.now());
      emitCreated(ctx, view, `${fields([['id', view.id], ['name', view.name], ['token', token], [view.pool_id ? 'pool_id' : 'credential_id', view.pool_id ?? view.credential_id], ['expires_at', view.expires_at]])}\n${SHOWN_ONCE}`, `token: ${token}`);
    },
  },
  {
    words: ['tokens', 'revoke'],
    args: ['<tok_id>'],
    options: ['org'],
    summary: 'revoke a proxy token (running servers refuse it within a second)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = idArg(ctx, 'tok', 'the token');
      const gone = await vault.tokens.revoke(org.id, id, 'cli');
      await audited(vault, org.id, 'token.revoke', id, gone.name);
      emit(ctx, { id, revoked: true }, `Revoked token ${id}.`);
    },
  },
  {
    words: ['usage'],
    args: [],
    options: ['org'],
    summary: 'this month\'s proxied requests and stored credentials against the free tier, tokens and spend',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      // The same summary as GET /v1/usage (without its `object`).
      const { object: _, ...json } = usageSummaryView(await vault.usageSummaries.of(org));
      emit(ctx, json, `${fields([
        ['period', json.period],
        ['proxy requests', `${json.proxy_requests.used} of ${json.proxy_requests.limit} (${json.proxy_requests.held} held)`],
        ['credentials', `${json.credentials.used} of ${json.credentials.limit}`],
        ['input tokens', json.tokens.input],
        ['output tokens', json.tokens.output],
        ['spend', json.spend_usd.limit === null ? `$${json.spend_usd.used}` : `$${json.spend_usd.used} of $${json.spend_usd.limit} ($${json.spend_usd.held} held)`],
      ])}\n${HELD_MEANS}`);
    },
  },
  {
    words: ['audit'],
    args: [],
    options: ['org', 'limit', 'starting-after'],
    summary: 'an organisation\'s audit trail, newest first: admin actions, failed authentications, quota refusals',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      // The audit log's own listing (pending refusal counts flushed, retention applied), as GET /v1/audit.
      const p = await vault.audit.list(org.id, page(ctx));
      const names = await new AuditActors(vault.store, vault.store).names(org.id, p.data.map((e) => e.actor));
      const data = p.data.map((e) => auditView(e, names.get(e.actor)));
      const named = (id: string, name: string | undefined) => (name !== undefined ? `${id} (${name})` : id);
      const rows = data.map((e) => [e.time, e.action, e.outcome, named(e.actor, e.actor_name), named(e.target, e.target_name), e.ip, String(e.count)]);
      emit(ctx, { data, has_more: p.hasMore }, listText(data, p.hasMore, ['TIME', 'ACTION', 'OUTCOME', 'ACTOR', 'TARGET', 'IP', 'COUNT'], rows, 'No audit records.'));
    },
  },
  {
    words: ['keys', 'rewrap'],
    args: [],
    options: [],
    summary: 're-wrap every credential\'s data key (and the deployment\'s secrets and OIDC signing keys) under the current key-encryption key',
    details: [
      'Run after rotating the key-encryption key: Cloud KMS (a new primary version), or',
      'KEYWARD_LOCAL_KEK set to the new key with the old one in KEYWARD_LOCAL_KEK_PREVIOUS.',
      'Ciphertexts are not touched; records already under the current key are skipped.',
      'Once it reports no failures, the previous key can be retired.',
      'With --json: {"kek_id", "scanned", "rewrapped", "already_current", "changed", "failed": [...]}.',
      'Exits 1 if any data key could not be unwrapped.',
    ].join('\n'),
    async run(ctx) {
      const vault = await ctx.vault();
      // Deployment secrets and the OIDC signing keys are wrapped like DEKs: they move too.
      const secrets = { rewrap: async () => vault.secrets.rewrap(await vault.signingKeys.storedNames()) };
      const report = await new RewrapService(vault.store, vault.envelope, vault.keyWrapper, secrets).run();
      const failed = report.failed.map((f) => ({ id: f.id, org_id: f.orgId, kek_id: f.kekId, reason: f.reason }));
      emit(ctx, {
        kek_id: report.kekId, scanned: report.scanned, rewrapped: report.rewrapped, already_current: report.alreadyCurrent, changed: report.changed, failed,
      }, fields([
        ['current key', report.kekId],
        ['scanned', report.scanned],
        ['rewrapped', report.rewrapped],
        ['already current', report.alreadyCurrent],
        ['changed meanwhile', report.changed],
        ['failed', report.failed.length],
      ]));
      for (const f of report.failed) ctx.io.stderr.write(`keyward: ${f.id} (org ${f.orgId}, key ${f.kekId}) not rewrapped: ${f.reason}\n`);
      if (report.failed.length > 0) throw new RewrapIncomplete(report.failed.length);
    },
  },
];

/** Some data keys could not be moved: exit 1 (the report is already printed). */
export class RewrapIncomplete extends Error {
  constructor(readonly count: number) {
    super(`${count} credential${count === 1 ? '' : 's'} could not be rewrapped`);
    this.name = 'RewrapIncomplete';
  }
}
