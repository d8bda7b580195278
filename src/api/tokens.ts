/**
 * /v1/tokens: mint, list (by name prefix; revoked ones on request), read, rename and revoke proxy tokens
 * (org token or admin key). A minter mints only for its listed credentials (if it has a list) and sees
 * only the tokens it minted (others answer 404). A revoked token is listed with `status=revoked` and
 * never found by id (GET and DELETE answer 404, as the contract says).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { TokenCaps } from '../accounting/token-caps.js';
import { UsageRecorder } from '../accounting/usage-recorder.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { TokenService } from '../vault/token-service.js';
import { Errors } from '../errors.js';
import type { AdminRequest } from '../http/router.js';
import { READERS } from '../vault/roles.js';
import { orgOf } from './params.js';
import { NAME_CHANGE } from './schemas/common.js';
import { TOKEN_LIST } from './schemas/query.js';
import { Token, TOKEN_CREATE, TokenCreated, TokenList, TokenRevoked } from './schemas/tokens.js';
import { listView, mintedTokenView, revokedTokenView, tokenView } from './views.js';

/** The minter's id when the caller is a minter (whose view of tokens is its own), else undefined. */
function minterOf(r: AdminRequest<unknown, unknown>): string | undefined {
  return r.principal.kind === 'org' && r.principal.role === 'minter' ? r.principal.actor : undefined;
}

@injectable()
export class TokensApi {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(TokenService) private readonly tokens: TokenService,
    @inject(UsageRecorder) private readonly usage: UsageRecorder,
    @inject(TokenCaps) private readonly caps: TokenCaps,
  ) {}

  register(router: Router): void {
    router.add('POST', '/v1/tokens', {
      auth: 'org', roles: ['owner', 'admin', 'minter'], action: 'token.create', idempotent: true, body: TOKEN_CREATE,
      operationId: 'createToken', tag: 'tokens', summary: 'Mint a proxy token',
      description: 'A short-lived `ptok_…` for one credential, with optional scopes. Shown once. A minter limited to `credential_ids` mints only for those (else 403 `forbidden`). A caller whose own key ends (an admin key with a ttl, a retiring organisation token) mints only tokens that end by then (else 403 `forbidden`). A token for a team (`team_id`) uses one of the team\'s credentials or pools (else 403 `forbidden`) within its `max_ttl` (else 400 `invalid_ttl`); its spend and tokens count against the team\'s budget and tokens_per_minute too, and against its member\'s budget with `member_id`.',
      response: { status: 201, schema: TokenCreated, description: 'The token (its value shown once).' },
      errors: ['invalid_ttl', 'invalid_scope', 'unknown_provider', 'not_found'],
    }, async (r) => {
      const org = orgOf(r);
      const { credential_id: credentialId, pool_id: poolId, ttl, name, team_id: teamId, member_id: memberId, ...scopes } = await r.body();
      const p = r.principal;
      // A minter limited to credentials mints for those only (a pool is not one of them).
      if (p.kind === 'org' && p.role === 'minter' && p.credentialIds && (credentialId === undefined || !p.credentialIds.includes(credentialId))) {
        throw Errors.forbidden('This minter key may not mint tokens for that credential.');
      }
      const createdBy = p.kind === 'org' ? p.actor : undefined;
      // A token made by an ending key or a retiring org token ends with it at the latest (a longer ttl → 403).
      const { record, token } = await this.tokens.mintFor(org.id, { credentialId, poolId, ttl, scopes, name, teamId, memberId, ...(createdBy ? { createdBy } : {}), ...(p.kind === 'org' ? { creator: p } : {}) });
      return { status: 201, body: mintedTokenView(record, token, this.clock.now()), secretFields: ['token'] };
    });

    router.add('GET', '/v1/tokens', {
      auth: 'org', roles: [...READERS, 'minter'], query: TOKEN_LIST, operationId: 'listTokens', tag: 'tokens', summary: 'List proxy tokens',
      description: 'Live tokens (`active`, `expired`), newest first; with `status=revoked`, the revoked ones, most recently revoked first. `name` keeps those whose name starts with it (case-insensitive). A minter lists only the tokens it minted.',
      response: { status: 200, schema: TokenList, description: 'A page of tokens (never a token value).' },
    }, async (r) => {
      const { page, revoked } = r.query;
      if (revoked) return { status: 200, body: listView(await this.tokens.listRevoked(orgOf(r).id, page, minterOf(r)), revokedTokenView) };
      const now = this.clock.now();
      return { status: 200, body: listView(await this.tokens.list(orgOf(r).id, page, minterOf(r)), (t) => tokenView(t, now)) };
    });

    router.add('GET', '/v1/tokens/:id', {
      auth: 'org', roles: [...READERS, 'minter'], operationId: 'getToken', tag: 'tokens', summary: 'Get a proxy token, with its usage and caps',
      description: 'A minter reads only the tokens it minted (another\'s answers 404). `caps` shows each of the token\'s caps (`budget_usd`, `tokens_per_minute`, `max_requests`) from the ledger its refusals use: `used` and `held` against `limit`, so a token refused for a cap is never shown room left under it.',
      response: { status: 200, schema: Token, description: 'The token with `usage` and `caps`.' },
      errors: ['not_found'],
    }, async (r) => {
      const record = await this.tokens.get(orgOf(r).id, r.params.id!);
      const minter = minterOf(r);
      if (minter !== undefined && record.createdBy !== minter) throw Errors.notFound('No such token.');
      const usage = await this.usage.get('tok', record.id);
      return { status: 200, body: tokenView(record, this.clock.now(), usage, await this.caps.of(record, usage)) };
    });

    router.add('PATCH', '/v1/tokens/:id', {
      auth: 'org', action: 'token.update', body: NAME_CHANGE, operationId: 'updateToken', tag: 'tokens', summary: 'Rename a proxy token',
      description: 'Sets its `name` (null removes it); its value, scopes and lifetime are untouched. A revoked token answers 404.',
      response: { status: 200, schema: Token, description: 'The token with its new name.' },
      errors: ['not_found'],
    }, async (r) => {
      const { name } = await r.body();
      return { status: 200, body: tokenView(await this.tokens.rename(orgOf(r).id, r.params.id!, name), this.clock.now()) };
    });

    router.add('DELETE', '/v1/tokens/:id', {
      auth: 'org', action: 'token.revoke', operationId: 'revokeToken', tag: 'tokens', summary: 'Revoke a proxy token',
      description: 'Takes effect at once on this instance, within a second on every other; later GET or DELETE → 404. What is kept of it (never its value or hash) is listed by `GET /v1/tokens?status=revoked`.',
      response: { status: 200, schema: TokenRevoked, description: 'Revoked.' },
      errors: ['not_found'],
    }, async (r) => {
      const gone = await this.tokens.revoke(orgOf(r).id, r.params.id!, r.principal.kind === 'org' ? r.principal.actor : 'admin');
      return { status: 200, body: { id: r.params.id!, object: 'token' as const, revoked: true as const }, ...(gone.name !== undefined ? { targetName: gone.name } : {}) };
    });
  }
}
