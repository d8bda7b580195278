/**
 * MCP authorization's composition: on when KEYWARD_ISSUER_URL is set and has no path (the issuer is also the
 * authorization server's, and every MCP route's resource URL starts with it). Builds the authorization service
 * over the store, the vault's tokens and credentials and the upstream's tools/list; registers the token,
 * registration and revocation routes; returns the front door the HTTP server routes /v1/mcp/…, the metadata
 * documents and the authorization page to, and starts the hourly clean-up of ended grants and unused clients. Off: none of them exists, and /v1/proxy/… is as before.
 */
import type { DependencyContainer } from 'tsyringe';
import { registerMcpOAuth } from '../api/mcp-oauth.js';
import type { ProviderRegistry } from '../catalog/registry.js';
import type { Clock, Timers } from '../clock.js';
import { AuditLog } from '../controls/audit-log.js';
import { Gateway } from '../gateway/entry/gateway.js';
import { signerFor } from '../gateway/upstream/signers/index.js';
import { listUpstreamTools } from '../gateway/wire/mcp/upstream-tools.js';
import { McpFrontDoor } from '../http/mcp-front-door.js';
import type { Router } from '../http/router.js';
import { McpAuthorization } from '../identity/mcp-auth/authorization.js';
import { McpClients } from '../identity/mcp-auth/clients.js';
import { MemberSessionSignIn } from '../identity/mcp-auth/member-sign-in.js';
import { OrgKeySignIn, type ConsentSignIn } from '../identity/mcp-auth/principals.js';
import { accessRevoker } from '../identity/mcp-auth/grant-ends.js';
import { McpGrantSweep } from '../identity/mcp-auth/sweep.js';
import type { Logger } from '../log.js';
import type { Config } from '../settings/config.js';
import type { Store } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import { OrgService } from '../vault/org-service.js';
import { SessionService } from '../vault/sessions.js';
import { TeamService } from '../vault/team-service.js';
import { NAME } from '../vault/names.js';
import { TokenService } from '../vault/token-service.js';

export interface McpAuthorizationParts {
  authorization: McpAuthorization;
  frontDoor: McpFrontDoor;
  /** Deletes ended grants and unused clients hourly; closed at shutdown. */
  sweep: McpGrantSweep;
}

/** The issuer MCP authorization runs under, or undefined (off) with the reason logged once. */
function mcpIssuer(config: Config, log: Logger): string | undefined {
  if (config.issuerUrl === undefined) return undefined;
  if (new URL(config.issuerUrl).pathname !== '/') {
    log.warn({ issuer: config.issuerUrl }, 'MCP authorization is off: KEYWARD_ISSUER_URL has a path, and an authorization server\'s issuer has none');
    return undefined;
  }
  return config.issuerUrl.replace(/\/$/, '');
}

/**
 * Registers the JSON endpoints on `router` and returns the parts. Who consents: a member signed in by single
 * sign-on (the console's session cookie), else an org token or admin key pasted into the page; `signIn` replaces both.
 */
export function buildMcpAuthorization(c: DependencyContainer, config: Config, log: Logger, router: Router, signIn?: ConsentSignIn): McpAuthorizationParts | undefined {
  const issuer = mcpIssuer(config, log);
  if (issuer === undefined) return undefined;
  const store = c.resolve<Store>(Symbols.Store);
  const clock = c.resolve<Clock>(Symbols.Clock);
  const providers = c.resolve<ProviderRegistry>(Symbols.ProviderRegistry);
  const tokens = c.resolve(TokenService);
  const credentials = c.resolve(CredentialService);
  const audit = c.resolve(AuditLog);
  const now = () => clock.now();
  const clients = new McpClients(store, config.oidcAllowHttpLoopback, now);
  const authorization = new McpAuthorization({
    store, clients, issuer, tokenTtlMs: config.mcpTokenTtlMs, grantTtlMs: config.maxTtlMs, now,
    credential: async (orgId, id) => {
      const found = await store.getCredential(orgId, id);
      return found && providers.get(found.provider)?.kind === 'mcp' ? { id: found.id, orgId: found.orgId, provider: found.provider } : undefined;
    },
    listTools: async (credential) => {
      const provider = providers.get(credential.provider)!;
      const secrets = await credentials.secretsFor(credential);
      return listUpstreamTools(provider, { ...secrets, owner: { orgId: credential.orgId, credentialId: credential.id } }, signerFor(provider, { log, clock }));
    },
    mintAccess: (grant, ttlMs, clientName) => {
      // The token list shows which client holds it, under the house's name rule (else unnamed).
      const name = `MCP ${clientName}`.replace(/[^\x20-\x7e]/g, '').trim().slice(0, 60).trim();
      // A member's grant: its tokens are the member's too (revoked with it; a per-member upstream account is its own).
      const memberId = grant.principal.startsWith('usr_') ? grant.principal : undefined;
      return tokens.mint(grant.orgId, grant.credentialId, ttlMs, { tools: grant.tools, resource: grant.resource }, grant.principal, { endsBy: grant.expiresAt, ...(NAME.test(name) ? { name } : {}), ...(memberId ? { memberId } : {}) });
    },
    revokeAccess: accessRevoker(tokens),
    findAccess: (hash) => store.findTokenByHash(hash),
    audit: (entry, at) => audit.record({ requestId: at.requestId, ip: at.ip, ...entry }),
  });
  c.register(McpAuthorization, { useValue: authorization });
  // A member removed or an admin key deleted ends its grants in the vault's core (boot/core.ts), for the CLI too.
  registerMcpOAuth(router, authorization, clients);
  const teams = c.resolve(TeamService);
  const consentSignIn = signIn ?? new MemberSessionSignIn(c.resolve(SessionService), (m) => teams.teamOf(m.orgId, m.id, m.groups ?? []), new OrgKeySignIn(c.resolve(OrgService)));
  const frontDoor = new McpFrontDoor(issuer, authorization, consentSignIn, c.resolve(Gateway), log, config.trustedProxies);
  const sweep = new McpGrantSweep(store, now, c.resolve<Timers>(Symbols.Timers), log);
  sweep.start();
  return { authorization, frontDoor, sweep };
}
