/**
 * The `keyward` commands. Each works straight on the store with the same
 * configuration (environment) as the server, through the vault services, so
 * the CLI and the API share every rule (limits, ttl grammar, scopes). Changes
 * reach running servers through the store's change feed within a second.
 */
import { HELD_MEANS } from '../api/schemas/usage.js';
import { auditView, credentialView, mintedTokenView, revokedTokenView, tokenView, usageSummaryView } from '../api/views.js';
import { AuditActors } from '../controls/audit-actors.js';
import { RewrapService } from '../vault/rewrap-service.js';
import { fields, readSecret, UsageError } from './io.js';
import { audited, emit, emitCreated, idArg, listText, one, page, required, scopeFlags, SHOWN_ONCE, withOrg, type Command } from './command-kit.js';

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
      const usage = await vault.usage.get('tok', t.id);
      const view = tokenView(t, Date.now(), usage, await vault.tokenCaps.of(t, usage));
      // Each cap as its refusals read it (the same figures as GET /v1/tokens/:id's `caps`).
      const { budget_usd: budget, tokens_per_minute: tpm, max_requests: max } = view.caps!;
      emit(ctx, view, fields([
        ['id', view.id], ['name', view.name], ['credential_id', view.credential_id], ['status', view.status], ['created_at', view.created_at], ['expires_at', view.expires_at],
        ['models', view.models?.join(', ')], ['paths', view.paths?.join(', ')], ['max_requests', max && `${max.used} used, ${max.held} held of ${max.limit}`], ['rate_limit', view.rate_limit],
        ['budget_usd', budget && `${budget.used} used, ${budget.held} held of ${budget.limit}`],
        ['tokens_per_minute', tpm && `${tpm.used_in_window} used in the window, ${tpm.held} held of ${tpm.limit}`], ['max_concurrent', view.max_concurrent],
        ['tools', view.tools?.join(', ')], ['requests', view.usage!.requests], ['spend_usd', view.usage!.spend_usd],
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
      const actors = await new AuditActors(vault.store, vault.store, vault.store).describe(org.id, p.data.map((e) => e.actor));
      const data = p.data.map((e) => auditView(e, actors.get(e.actor)));
      const named = (id: string, name: string | undefined) => (name !== undefined ? `${id} (${name})` : id);
      // The person behind a member's token: `tok_… (name) for grace@acme.test`.
      const person = (e: (typeof data)[number]) => (e.member_id !== undefined && e.member_id !== e.actor ? ` for ${e.member_email ?? e.member_id}` : '');
      const rows = data.map((e) => [e.time, e.action, e.outcome, named(e.actor, e.actor_name) + person(e), named(e.target, e.target_name), e.ip, String(e.count)]);
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
