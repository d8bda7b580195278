/**
 * Keyward as the OAuth 2.1 authorization server of its MCP routes: authorization code with PKCE (S256 only),
 * resource indicators (RFC 8707: one MCP route per grant, `<issuer>/v1/mcp/<credential id>`), refresh tokens
 * that rotate on use, revocation (RFC 7009). A grant (mcp-grant-port.ts) goes `consent` (the page shown to a
 * signed-in principal, its form bound to a secret) → `code` (consented: a code, 60 s, single use) → `active`
 * (redeemed) → `revoked`. Replaying a redeemed code revokes the grant and every token from it; presenting an
 * earlier refresh token again does the same (its family). Access tokens are proxy tokens of the credential whose
 * `tools` scope is the consented tools and whose `resource` scope is the route (accepted there alone), recorded
 * with the principal as their creator; they live KEYWARD_MCP_TOKEN_TTL and never past the grant, which never
 * outlives its principal. Codes and refresh tokens carry their grant's id and are stored only as SHA-256.
 * Consent given or refused, a token issued, a refresh rotated, a revocation and a replay are put on the audit trail
 * by id (grant, client, principal, token): never a code's or a token's value.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuditAction } from '../../controls/audit-actions.js';
import { OAuthError } from '../../errors.js';
import { isId, newId, randomBase62, sha256Hex } from '../../ids.js';
import type { McpGrantRecord, McpGrantStore, TokenRecord } from '../../store/ports.js';
import { ClientRefusal, redirectListed, type McpClient, type McpClients } from './clients.js';
import type { ConsentPrincipal } from './principals.js';
import { endGrant, endPrincipalGrants } from './grant-ends.js';

export interface McpTool {
  name: string;
  description?: string;
}

/** Where a request came from, for the audit trail. */
export interface RequestAt {
  requestId: string;
  ip: string;
}

/** One of the authorization server's audit entries: ids only. */
export interface McpAuditEntry {
  org: string;
  /** The principal (consent), the client id (token endpoint), or the access token revoked by itself. */
  actor: string;
  action: AuditAction;
  /** A grant id (`mcpg_…`), or an access token's id (`tok_…`) revoked by itself. */
  target: string;
  outcome: 'success' | 'failure';
}

/** What the authorization server needs of the rest of Keyward (the boot wires the vault's services in). */
export interface McpAuthDeps {
  store: McpGrantStore;
  clients: McpClients;
  /** KEYWARD_ISSUER_URL: the issuer, and the base of every resource URL. */
  issuer: string;
  tokenTtlMs: number;
  /** How long a grant's refresh tokens may be used (KEYWARD_MAX_TTL), never past the principal. */
  grantTtlMs: number;
  now: () => number;
  /** The MCP credential of this organisation (undefined: none of that id, or not an MCP server's). */
  credential(orgId: string, id: string): Promise<{ id: string; orgId: string; provider: string } | undefined>;
  /** The upstream's tools/list, asked with the vault's credential. */
  listTools(credential: { id: string; orgId: string; provider: string }): Promise<McpTool[]>;
  mintAccess(grant: McpGrantRecord, ttlMs: number, clientName: string): Promise<{ record: TokenRecord; token: string }>;
  /** Revokes a proxy token by id (already gone: nothing). */
  revokeAccess(orgId: string, id: string, by: string): Promise<void>;
  /** The live proxy token with this hash, if any (RFC 7009 on an access token). */
  findAccess(hash: string): Promise<TokenRecord | undefined>;
  /** Records an entry on the audit trail (never rejects). */
  audit(entry: McpAuditEntry, at: RequestAt): Promise<void>;
}

/** An authorize request whose client and redirect URI were checked: refusals after this go to the redirect URI. */
export interface AuthorizeRequest {
  client: McpClient;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  resource: string;
  credentialId: string;
}

/** A refusal sent back to the client's (checked) redirect URI as `?error=…`. */
export class AuthorizeRedirect extends Error {
  constructor(readonly location: string) {
    super('authorization refused');
  }
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

const CODE_TTL_MS = 60_000;
const CONSENT_TTL_MS = 10 * 60_000;
const USED_REFRESH_KEPT = 32;
const CODE = /^kwc_(mcpg_[0-9A-Za-z]{24})_[0-9A-Za-z]{43}$/;
const REFRESH = /^kwr_(mcpg_[0-9A-Za-z]{24})_[0-9A-Za-z]{43}$/;
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

const s256 = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');
const sameHash = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
const invalidGrant = (why: string): OAuthError => new OAuthError('invalid_grant', why);

export class McpAuthorization {
  constructor(private readonly deps: McpAuthDeps) {}

  /** The resource URL of an MCP credential's route. */
  resourceOf(credentialId: string): string {
    return `${this.deps.issuer}/v1/mcp/${credentialId}`;
  }

  /** The credential id a resource URL names, if it is one of Keyward's MCP routes. */
  credentialOf(resource: unknown): string | undefined {
    if (typeof resource !== 'string') return undefined;
    const prefix = `${this.deps.issuer}/v1/mcp/`;
    const id = resource.startsWith(prefix) ? resource.slice(prefix.length) : '';
    return isId('cred', id) ? id : undefined;
  }

  /**
   * Checks an authorize request: the client and its redirect URI first (a ClientRefusal: an error page, never a
   * redirect), then everything else (an AuthorizeRedirect carrying the error to the client).
   */
  async check(q: URLSearchParams): Promise<AuthorizeRequest> {
    for (const name of ['client_id', 'redirect_uri', 'response_type', 'code_challenge', 'code_challenge_method', 'resource', 'state']) {
      if (q.getAll(name).length > 1) throw new ClientRefusal(`\`${name}\` is given more than once.`);
    }
    const client = await this.deps.clients.resolve(q.get('client_id') ?? undefined);
    const redirectUri = q.get('redirect_uri') ?? (client.redirectUris.length === 1 ? client.redirectUris[0]! : '');
    if (!redirectListed(client.redirectUris, redirectUri)) throw new ClientRefusal('The `redirect_uri` is not one the client lists, so Keyward will not send you there.');
    const state = q.get('state') ?? undefined;
    const refuse = (error: string, description: string): never => {
      throw new AuthorizeRedirect(this.errorLocation(redirectUri, error, description, state));
    };
    if (q.get('response_type') !== 'code') refuse('unsupported_response_type', 'Only response_type=code is supported.');
    const challenge = q.get('code_challenge') ?? '';
    if (q.get('code_challenge_method') !== 'S256' || !CHALLENGE.test(challenge)) refuse('invalid_request', 'PKCE is required: code_challenge with code_challenge_method=S256.');
    const resource = q.get('resource') ?? '';
    const credentialId = this.credentialOf(resource);
    if (!credentialId) refuse('invalid_target', `The resource must be one of this server's MCP routes, ${this.deps.issuer}/v1/mcp/<credential id>.`);
    return { client, redirectUri, state, codeChallenge: challenge, resource, credentialId: credentialId! };
  }

  errorLocation(redirectUri: string, error: string, description: string, state: string | undefined): string {
    const url = new URL(redirectUri);
    url.searchParams.set('error', error);
    url.searchParams.set('error_description', description);
    if (state !== undefined) url.searchParams.set('state', state);
    url.searchParams.set('iss', this.deps.issuer);
    return url.href;
  }

  /**
   * A signed-in principal's consent page: the credential (of the principal's organisation, and allowed to a
   * limited minter), the upstream's tools, and a grant in `consent` state whose secret the page's form carries.
   */
  async offer(request: AuthorizeRequest, principal: ConsentPrincipal): Promise<{ grantId: string; secret: string; tools: McpTool[] }> {
    const credential = await this.deps.credential(principal.orgId, request.credentialId);
    if (!credential) throw new ClientRefusal('Your organisation has no MCP server credential with that id.');
    if (principal.credentialIds && !principal.credentialIds.includes(credential.id)) throw new ClientRefusal('Your key may not give tokens for this credential.');
    const tools = await this.deps.listTools(credential);
    const secret = randomBase62(43);
    const now = this.deps.now();
    const grant: McpGrantRecord = {
      id: newId('mcpg'), orgId: principal.orgId, credentialId: credential.id, resource: request.resource, clientId: request.client.id,
      principal: principal.id, tools: tools.map((t) => t.name), state: 'consent', codeHash: sha256Hex(secret), redirectUri: request.redirectUri,
      codeChallenge: request.codeChallenge, codeExpiresAt: now + CONSENT_TTL_MS, refreshHash: null, usedRefreshHashes: [], issued: [],
      createdAt: now, expiresAt: Math.min(now + this.deps.grantTtlMs, principal.expiresAt ?? Infinity), version: 1,
    };
    await this.deps.store.createMcpGrant(grant);
    // A registered client a person is asked about is in use: the clean-up (sweep.ts) keeps it.
    if (request.client.kind === 'registered') await this.deps.store.touchMcpClient(request.client.id, now);
    return { grantId: grant.id, secret, tools };
  }

  /**
   * The consent form's answer: `tools` (a subset of those offered) allowed, or denied (`tools` undefined). The
   * redirect's location: the code, or `access_denied`. A form whose grant or secret does not match is refused.
   */
  async decide(request: AuthorizeRequest, grantId: string, secret: string, tools: readonly string[] | undefined, at: RequestAt): Promise<string> {
    const grant = isId('mcpg', grantId) ? await this.deps.store.getMcpGrant(grantId) : undefined;
    const now = this.deps.now();
    if (!grant || grant.state !== 'consent' || !sameHash(grant.codeHash, sha256Hex(secret)) || grant.codeExpiresAt <= now
      || grant.clientId !== request.client.id || grant.redirectUri !== request.redirectUri || grant.resource !== request.resource || grant.codeChallenge !== request.codeChallenge) {
      throw new ClientRefusal('This consent page has expired or was already answered: start again from your MCP client.');
    }
    if (tools === undefined) {
      if (await this.deps.store.updateMcpGrant({ ...grant, state: 'revoked', version: grant.version + 1 }, grant.version)) {
        await this.deps.audit({ org: grant.orgId, actor: grant.principal, action: 'mcp_grant.deny', target: grant.id, outcome: 'success' }, at);
      }
      return this.errorLocation(request.redirectUri, 'access_denied', 'The request was denied.', request.state);
    }
    const chosen = [...new Set(tools)].filter((t) => grant.tools.includes(t));
    const code = `kwc_${grant.id}_${randomBase62(43)}`;
    const next: McpGrantRecord = { ...grant, tools: chosen, state: 'code', codeHash: sha256Hex(code), codeExpiresAt: now + CODE_TTL_MS, version: grant.version + 1 };
    if (!(await this.deps.store.updateMcpGrant(next, grant.version))) throw new ClientRefusal('This consent page was already answered.');
    await this.deps.audit({ org: grant.orgId, actor: grant.principal, action: 'mcp_grant.consent', target: grant.id, outcome: 'success' }, at);
    const url = new URL(request.redirectUri);
    url.searchParams.set('code', code);
    if (request.state !== undefined) url.searchParams.set('state', request.state);
    url.searchParams.set('iss', this.deps.issuer);
    return url.href;
  }

  /** The token endpoint: authorization_code or refresh_token (public clients: `client_id` in the body). */
  async token(body: Readonly<Record<string, unknown>>, at: RequestAt): Promise<TokenResponse> {
    const text = (name: string): string | undefined => (typeof body[name] === 'string' ? body[name] as string : undefined);
    const grantType = text('grant_type');
    if (grantType === 'authorization_code') return this.redeem(text('code') ?? '', text('code_verifier') ?? '', text('redirect_uri'), text('client_id'), text('resource'), at);
    if (grantType === 'refresh_token') return this.refresh(text('refresh_token') ?? '', text('client_id'), text('resource'), at);
    throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.');
  }

  private async redeem(code: string, verifier: string, redirectUri: string | undefined, clientId: string | undefined, resource: string | undefined, at: RequestAt): Promise<TokenResponse> {
    const id = CODE.exec(code)?.[1];
    for (let round = 0; round < 3; round++) {
      const grant = id ? await this.deps.store.getMcpGrant(id) : undefined;
      if (!grant || !sameHash(grant.codeHash, sha256Hex(code)) || grant.state === 'consent') throw invalidGrant('The authorization code is not valid.');
      if (grant.state !== 'code') {
        // A code redeemed before: whoever holds it now may have stolen it. Everything issued from it ends.
        await this.revokeGrant(grant, 'oauth:code-replay');
        await this.deps.audit({ org: grant.orgId, actor: grant.clientId, action: 'mcp_grant.replay', target: grant.id, outcome: 'failure' }, at);
        throw invalidGrant('The authorization code was already used; every token issued from it is revoked.');
      }
      const now = this.deps.now();
      if (grant.codeExpiresAt <= now) throw invalidGrant('The authorization code has expired.');
      if (clientId !== grant.clientId) throw new OAuthError('invalid_client', 'The code was issued to another client.', 401);
      if (redirectUri !== grant.redirectUri) throw invalidGrant('The redirect_uri differs from the authorization request\'s.');
      if (!VERIFIER.test(verifier) || !sameHash(s256(verifier), grant.codeChallenge)) throw invalidGrant('The code_verifier does not match the code_challenge (PKCE).');
      if (resource !== undefined && resource !== grant.resource) throw new OAuthError('invalid_target', 'The resource differs from the one the code was issued for.');
      const issued = await this.issue(grant, now);
      if (issued) {
        await this.deps.audit({ org: grant.orgId, actor: grant.clientId, action: 'mcp_grant.token', target: grant.id, outcome: 'success' }, at);
        return issued;
      }
    }
    throw new OAuthError('temporarily_unavailable', 'The grant kept changing; try again.', 503);
  }

  private async refresh(token: string, clientId: string | undefined, resource: string | undefined, at: RequestAt): Promise<TokenResponse> {
    const id = REFRESH.exec(token)?.[1];
    const hash = sha256Hex(token);
    for (let round = 0; round < 3; round++) {
      const grant = id ? await this.deps.store.getMcpGrant(id) : undefined;
      if (!grant) throw invalidGrant('The refresh token is not valid.');
      if (grant.usedRefreshHashes.includes(hash)) {
        // An earlier refresh token again: two parties hold the family. It ends, for both.
        await this.revokeGrant(grant, 'oauth:refresh-reuse');
        await this.deps.audit({ org: grant.orgId, actor: grant.clientId, action: 'mcp_grant.replay', target: grant.id, outcome: 'failure' }, at);
        throw invalidGrant('The refresh token was already used; every token of its family is revoked.');
      }
      const now = this.deps.now();
      if (grant.state !== 'active' || grant.refreshHash === null || !sameHash(grant.refreshHash, hash) || grant.expiresAt <= now) throw invalidGrant('The refresh token is not valid.');
      if (clientId !== undefined && clientId !== grant.clientId) throw new OAuthError('invalid_client', 'The refresh token was issued to another client.', 401);
      if (resource !== undefined && resource !== grant.resource) throw new OAuthError('invalid_target', 'The resource differs from the one the grant is for.');
      const issued = await this.issue(grant, now);
      if (issued) {
        await this.deps.audit({ org: grant.orgId, actor: grant.clientId, action: 'mcp_grant.refresh', target: grant.id, outcome: 'success' }, at);
        return issued;
      }
    }
    throw new OAuthError('temporarily_unavailable', 'The grant kept changing; try again.', 503);
  }

  /** A new access token and refresh token for an active (or just redeemed) grant; undefined: another instance changed it first. */
  private async issue(grant: McpGrantRecord, now: number): Promise<TokenResponse | undefined> {
    const ttlMs = Math.min(this.deps.tokenTtlMs, grant.expiresAt - now);
    if (ttlMs <= 0) throw invalidGrant('The grant has ended.');
    const client = await this.deps.clients.resolve(grant.clientId).catch(() => undefined);
    const minted = await this.deps.mintAccess(grant, ttlMs, client?.name ?? 'MCP client');
    const refresh = `kwr_${grant.id}_${randomBase62(43)}`;
    const next: McpGrantRecord = {
      ...grant, state: 'active', refreshHash: sha256Hex(refresh),
      usedRefreshHashes: grant.refreshHash === null ? grant.usedRefreshHashes : [grant.refreshHash, ...grant.usedRefreshHashes].slice(0, USED_REFRESH_KEPT),
      issued: [...grant.issued.filter((t) => t.expiresAt > now), { id: minted.record.id, expiresAt: minted.record.expiresAt }],
      version: grant.version + 1,
    };
    if (!(await this.deps.store.updateMcpGrant(next, grant.version))) {
      await this.deps.revokeAccess(grant.orgId, minted.record.id, 'oauth:race');
      return undefined;
    }
    return { access_token: minted.token, token_type: 'Bearer', expires_in: Math.floor((minted.record.expiresAt - now) / 1000), refresh_token: refresh };
  }

  /** Ends a grant: no refresh token works again, and every access token from it is revoked. */
  private revokeGrant(grant: McpGrantRecord, by: string): Promise<void> {
    return endGrant(this.deps.store, this.deps.revokeAccess, grant, by);
  }

  /**
   * RFC 7009: an access token Keyward issued for an MCP route, or a refresh token (its whole family). Anything
   * else, unknown or already revoked, changes nothing and is answered the same (200).
   */
  async revoke(body: Readonly<Record<string, unknown>>, at: RequestAt): Promise<void> {
    const token = typeof body.token === 'string' ? body.token : '';
    if (token === '') throw new OAuthError('invalid_request', '`token` is required.');
    const refreshGrant = REFRESH.exec(token)?.[1];
    if (refreshGrant) {
      const grant = await this.deps.store.getMcpGrant(refreshGrant);
      const hash = sha256Hex(token);
      if (grant && (grant.refreshHash === hash || grant.usedRefreshHashes.includes(hash))) {
        await this.revokeGrant(grant, 'oauth:revocation');
        if (grant.state !== 'revoked') await this.deps.audit({ org: grant.orgId, actor: grant.clientId, action: 'mcp_grant.revoke', target: grant.id, outcome: 'success' }, at);
      }
      return;
    }
    const access = await this.deps.findAccess(sha256Hex(token));
    if (access?.scopes.resource !== undefined) {
      await this.deps.revokeAccess(access.orgId, access.id, 'oauth:revocation');
      await this.deps.audit({ org: access.orgId, actor: access.id, action: 'mcp_grant.revoke', target: access.id, outcome: 'success' }, at);
    }
  }

  /**
   * Ends every grant a principal consented to and every access token from them (a member removed, an admin key
   * deleted). How many grants were live.
   */
  revokePrincipal(principalId: string, by = 'oauth:principal-removed'): Promise<number> {
    return endPrincipalGrants(this.deps.store, this.deps.revokeAccess, principalId, by);
  }

}
