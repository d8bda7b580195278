/**
 * `keyward trust-policies create|list|delete`: which workload identities may exchange their OIDC
 * token for a proxy token (POST /v1/tokens/exchange). Straight on the store through the trust
 * policy service, so the CLI and the API share every rule (allowed issuers, subject, claims, ttl,
 * scopes); shown as the API shows them.
 */
import { trustPolicyView } from '../api/trust-policies.js';
import { isId } from '../ids.js';
import { audited, emit, emitCreated, one, page, required, scopeFlags, withOrg, type Command, type Context } from './command-kit.js';
import { fields, table, UsageError } from './io.js';

/** `--claim name=value`, repeatable: the claims the token must hold (string values). */
function claimFlags(ctx: Context): Record<string, string> | undefined {
  const given = ctx.options.claim === undefined ? [] : ([] as string[]).concat(ctx.options.claim);
  if (given.length === 0) return undefined;
  const claims: Record<string, string> = {};
  for (const c of given) {
    const eq = c.indexOf('=');
    if (eq < 1) throw new UsageError(`--claim takes name=value, got ${JSON.stringify(c.slice(0, 40))}`);
    claims[c.slice(0, eq)] = c.slice(eq + 1);
  }
  return claims;
}

function policyId(ctx: Context): string {
  const id = ctx.args[0]!;
  if (!isId('tp', id)) throw new UsageError(`the trust policy must be an id such as tp_…, got ${JSON.stringify(id.slice(0, 40))}`);
  return id;
}

export const TRUST_POLICY_COMMANDS: Command[] = [
  {
    words: ['trust-policies', 'create'],
    args: [],
    options: ['org', 'issuer', 'audience', 'subject', 'claim', 'credential', 'ttl', 'model', 'path', 'max-requests', 'rate-limit', 'tools'],
    flags: {
      credential: 'the credential the exchanged tokens are bound to',
      ttl: 'each exchanged token\'s lifetime: a positive integer and one unit of s m h d (default 15m)',
      'max-requests': 'at most n proxied requests over each exchanged token\'s life',
      'rate-limit': 'at most n proxied requests per minute, per exchanged token',
      model: 'exchanged tokens may use only this model (repeatable)',
      path: 'exchanged tokens may use only this provider path (repeatable)',
      tools: 'an MCP server\'s tools exchanged tokens may call, comma-separated (repeatable)',
    },
    creates: true,
    summary: 'let workloads with a matching OIDC token exchange it for a proxy token',
    details: [
      'Workloads whose OIDC token has this issuer, audience and subject (exact, or a prefix and *) and every --claim',
      'may call POST /v1/tokens/exchange for a proxy token of --credential, with --ttl (default 15m) and the scopes given.',
      '',
      'Example (GitHub Actions, main branch of acme/app):',
      '  keyward trust-policies create --org org_… --issuer https://token.actions.githubusercontent.com \\',
      '    --audience https://keyward.example.com --subject repo:acme/app:ref:refs/heads/main --credential cred_… --ttl 15m',
    ].join('\n'),
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const claims = claimFlags(ctx);
      const record = await vault.trustPolicies.create(org.id, {
        issuer: required(ctx, 'issuer'), audience: required(ctx, 'audience'), subject: required(ctx, 'subject'), ...(claims ? { claims } : {}),
        credentialId: required(ctx, 'credential'), ttl: one(ctx, 'ttl') ?? '15m', scopes: scopeFlags(ctx),
      });
      await audited(vault, org.id, 'trust_policy.create', record.id);
      const view = trustPolicyView(record);
      emitCreated(ctx, view, fields([
        ['id', view.id], ['issuer', view.issuer], ['audience', view.audience], ['subject', view.subject],
        ['claims', Object.keys(view.claims).length ? JSON.stringify(view.claims) : undefined], ['credential_id', view.credential_id], ['ttl', view.ttl],
      ]));
    },
  },
  {
    words: ['trust-policies', 'list'],
    args: [],
    options: ['org', 'limit', 'starting-after'],
    summary: 'list an organisation\'s trust policies, newest first',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const p = await vault.trustPolicies.list(org.id, page(ctx));
      const data = p.data.map(trustPolicyView);
      const rows = data.map((v) => [v.id, v.issuer, v.audience, v.subject, v.credential_id, v.ttl]);
      const more = p.hasMore ? `\n(more: --starting-after ${data[data.length - 1]!.id})` : '';
      emit(ctx, { data, has_more: p.hasMore }, data.length ? table(['ID', 'ISSUER', 'AUDIENCE', 'SUBJECT', 'CREDENTIAL', 'TTL'], rows) + more : 'No trust policies.');
    },
  },
  {
    words: ['trust-policies', 'delete'],
    args: ['<tp_id>'],
    options: ['org'],
    summary: 'delete a trust policy (exchanges through it stop; tokens it minted live out their ttl)',
    async run(ctx) {
      const [vault, org] = await withOrg(ctx);
      const id = policyId(ctx);
      await vault.trustPolicies.delete(org.id, id);
      await audited(vault, org.id, 'trust_policy.delete', id);
      emit(ctx, { id, deleted: true }, `Deleted trust policy ${id}.`);
    },
  },
];
