/**
 * Connecting an upstream OAuth credential: Keyward as the OAuth client of the SaaS, authorization code with
 * PKCE (S256). `POST /v1/credentials/:id/connect` (an admin, or for a per-member credential the signed-in
 * member) answers where the browser goes; the SaaS sends it back to the console's callback page
 * (`<KEYWARD_ISSUER_URL>/console/oauth-callback`), which posts what it got to `POST /v1/oauth/callback`;
 * Keyward exchanges the code at the token endpoint and seals the tokens (vault/oauth-connections.ts).
 *
 * The flow keeps nothing on the server between its two steps: `state` is a JWT encrypted under a deployment
 * secret (A256GCM, 10 minutes) holding the organisation, credential, member, who started, the PKCE verifier
 * and a hash of the `binding` the start gave the browser; the completion needs that binding, so a callback
 * URL carried to another browser (someone luring an admin into connecting *their* SaaS account to another
 * organisation, or the reverse) is refused. Any instance completes what any other started. Nothing logged
 * or answered holds a code, verifier or token.
 *
 * Members: the member a request acts for comes from `memberOf`: the member signed in by single sign-on (its
 * session). An org token or admin key acts for no member, and cannot connect a per-member credential.
 */
import { createHash, randomBytes } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { AuditLog } from '../controls/audit-log.js';
import { Errors } from '../errors.js';
import type { AdminRequest, Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { CredentialService } from '../vault/credential-service.js';
import { DeploymentSecrets, OAUTH_STATE_KEY } from '../vault/deployment-secrets.js';
import { authorizationUrl, codeGrant, newVerifier, oauthClient, OAuthGrantError } from '../vault/oauth-client.js';
import { OAuthConnections, type ConnectionRef } from '../vault/oauth-connections.js';
import { isOAuthCredential, isPerMember, oauthSettings } from '../vault/oauth-credential.js';
import { EVERYONE, WRITERS } from '../vault/roles.js';
import { orgOf } from './params.js';
import { OAUTH_COMPLETE, OAUTH_START, OAuthAuthorization } from './schemas/oauth-connect.js';
import type { CredentialRecord } from '../store/ports.js';
import type { TObject } from '@sinclair/typebox';
import { credentialView, iso } from './views.js';

/** How long a started connect may be completed. */
const FLOW_TTL_S = 600;
export const CALLBACK_PATH = '/console/oauth-callback';

/** The member a request acts for (a signed-in member's session or personal token), if any. */
export type MemberOf = (r: AdminRequest<unknown, unknown>) => string | undefined;

interface FlowClaims {
  org: string;
  cred: string;
  member: string;
  actor: string;
  verifier: string;
  binding: string;
}

const sha256 = (s: string): string => createHash('sha256').update(s).digest('base64url');

@injectable()
export class OAuthConnectApi {
  /** The member signed in by single sign-on (its session, cookie or `keyward login`'s bearer); an org token or admin key acts for none. */
  memberOf: MemberOf = (r) => (r.principal.kind === 'org' && r.principal.session ? r.principal.actor : undefined);
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(CredentialService) private readonly credentials: CredentialService,
    @inject(OAuthConnections) private readonly connections: OAuthConnections,
    @inject(DeploymentSecrets) private readonly secrets: DeploymentSecrets,
    @inject(AuditLog) private readonly audit: AuditLog,
  ) {}

  private redirectUri(): string {
    if (this.config.issuerUrl === undefined) {
      throw Errors.invalidRequest('This gateway has no public URL (its operator has not set KEYWARD_ISSUER_URL), so no SaaS can send a browser back to it: OAuth credentials cannot be connected here.');
    }
    return `${this.config.issuerUrl}${CALLBACK_PATH}`;
  }

  /** The connection a request may act on: the organisation's, or for a per-member credential the caller's own. */
  private async connectionFor(r: AdminRequest<unknown, unknown>, orgId: string, id: string): Promise<{ record: CredentialRecord; ref: ConnectionRef }> {
    const record = await this.credentials.get(orgId, id);
    if (!isOAuthCredential(record.fields)) throw Errors.invalidRequest('This credential is not an OAuth credential (`kind: oauth`): it holds a key, there is nothing to connect.');
    let memberId = '';
    if (isPerMember(record.fields)) {
      const member = this.memberOf(r);
      if (member === undefined) throw Errors.forbidden('This credential connects each member\'s own account: sign in as a member (single sign-on) to connect yours.');
      memberId = member;
    } else if (r.principal.kind === 'org' && !WRITERS.includes(r.principal.role)) {
      // Any member may connect its own account; the organisation's is an admin's to connect.
      throw Errors.forbidden('The organisation\'s account is connected by the owner or an admin.');
    }
    return { record, ref: { orgId, credentialId: id, provider: record.provider, memberId } };
  }

  /** The view with the connection's summary (the caller's own, for a per-member credential). */
  async viewOf(r: AdminRequest<unknown, unknown>, record: CredentialRecord) {
    const connection = isOAuthCredential(record.fields)
      ? await this.connections.summary(record.orgId, record.id, isPerMember(record.fields), this.memberOf(r))
      : undefined;
    return credentialView(record, undefined, connection);
  }

  register(router: Router, view: TObject): void {
    router.add('POST', '/v1/credentials/:id/connect', {
      auth: 'org', roles: EVERYONE, body: OAUTH_START, idempotent: true, operationId: 'connectCredential', tag: 'credentials', summary: 'Start connecting an OAuth credential',
      description: [
        'Answers where the browser goes: the SaaS\'s authorization endpoint with `state` and a PKCE (S256) challenge. The SaaS sends the browser back to `redirect_uri`, the console\'s callback page, which completes with POST /v1/oauth/callback.',
        'An admin connects the organisation\'s account; a per-member credential is connected by each signed-in member for themselves. Needs KEYWARD_ISSUER_URL (the gateway\'s public URL).',
      ].join('\n\n'),
      response: { status: 200, schema: OAuthAuthorization, description: 'Where to send the browser, and its binding.' },
      errors: ['not_found', 'forbidden'],
    }, async (r) => {
      const org = orgOf(r);
      await r.body();
      const { record, ref } = await this.connectionFor(r, org.id, r.params.id!);
      const redirectUri = this.redirectUri();
      const settings = oauthSettings(await this.credentials.secretsFor(record));
      const config = oauthClient(settings, this.config.oidcAllowHttpLoopback);
      const binding = randomBytes(32).toString('base64url');
      const verifier = newVerifier();
      const now = Math.floor(this.clock.now() / 1000);
      const claims: FlowClaims = { org: org.id, cred: ref.credentialId, member: ref.memberId, actor: r.principal.kind === 'org' ? r.principal.actor : 'admin', verifier, binding: sha256(binding) };
      const state = await new EncryptJWT({ ...claims }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt(now).setExpirationTime(now + FLOW_TTL_S)
        .encrypt(await this.secrets.get(OAUTH_STATE_KEY));
      const target = await authorizationUrl(config, settings, redirectUri, state, verifier);
      // A replay under the same Idempotency-Key answers without the flow's state and binding (never stored).
      return {
        status: 200, body: { object: 'oauth_authorization' as const, authorization_url: target, redirect_uri: redirectUri, binding, expires_at: iso((now + FLOW_TTL_S) * 1000) },
        secretFields: ['authorization_url', 'binding'],
      };
    });

    router.add('POST', '/v1/oauth/callback', {
      auth: 'none', body: OAUTH_COMPLETE, operationId: 'completeCredentialConnect', tag: 'credentials', summary: 'Complete connecting an OAuth credential',
      description: 'What the SaaS put on the callback URL, with the binding the start gave this browser. Keyward exchanges the code at the token endpoint (with the PKCE verifier) and seals the tokens; the credential\'s `connection.state` is `connected`.',
      response: { status: 200, schema: view, description: 'The credential, connected.' },
      errors: ['not_found', 'upstream_auth_failed', 'upstream_unreachable'],
    }, async (r) => {
      const body = await r.body();
      const claims = await this.openState(body.state);
      if (sha256(body.binding) !== claims.binding) throw Errors.invalidRequest('This connection was started in another browser: start it again from the console here.', 'binding');
      const record = await this.credentials.get(claims.org, claims.cred);
      if (!isOAuthCredential(record.fields)) throw Errors.notFound('No such credential.');
      const ref: ConnectionRef = { orgId: claims.org, credentialId: claims.cred, provider: record.provider, memberId: claims.member };
      if (body.error !== undefined || body.code === undefined) {
        const words = (body.error_description ?? body.error ?? 'no code').replace(/[^\x20-\x7e]/g, ' ').slice(0, 200);
        throw Errors.invalidRequest(`The SaaS did not authorise the connection (${(body.error ?? 'no code').slice(0, 64)}): ${words}.`);
      }
      const settings = oauthSettings(await this.credentials.secretsFor(record));
      const callback = new URL(this.redirectUri());
      callback.searchParams.set('code', body.code);
      callback.searchParams.set('state', body.state);
      let granted;
      try {
        granted = await codeGrant(oauthClient(settings, this.config.oidcAllowHttpLoopback), settings, callback, { state: body.state, verifier: claims.verifier });
      } catch (err) {
        if (!(err instanceof OAuthGrantError)) throw err;
        throw err.refusedWith !== undefined ? Errors.upstreamAuthFailed(`${err.message}.`) : Errors.upstreamUnreachable(`${err.message}.`);
      }
      const now = this.clock.now();
      await this.connections.connect(ref, { accessToken: granted.accessToken, ...(granted.refreshToken !== undefined ? { refreshToken: granted.refreshToken } : {}), issuedAt: now, expiresAt: now + granted.lifetimeMs }, claims.actor);
      await this.audit.record({ requestId: r.requestId, org: claims.org, actor: claims.member || claims.actor, action: 'credential.connect', target: claims.cred, ...(record.name !== undefined ? { targetName: record.name } : {}), outcome: 'success', ip: r.ip });
      return { status: 200, body: await this.viewOf(r, record) as never };
    });

    router.add('DELETE', '/v1/credentials/:id/connection', {
      auth: 'org', roles: EVERYONE, action: 'credential.disconnect', operationId: 'disconnectCredential', tag: 'credentials', summary: 'Forget an OAuth credential\'s connection',
      description: 'Deletes the sealed tokens (the organisation\'s, or for a per-member credential the caller\'s own); requests get 502 `upstream_auth_failed` until it is connected again. Revoke the grant at the SaaS too.',
      response: { status: 200, schema: view, description: 'The credential, not connected.' },
      errors: ['not_found', 'forbidden'],
    }, async (r) => {
      const { record, ref } = await this.connectionFor(r, orgOf(r).id, r.params.id!);
      await this.connections.disconnect(ref.orgId, ref.credentialId, ref.memberId);
      return { status: 200, body: await this.viewOf(r, record) as never };
    });
  }

  private async openState(state: string): Promise<FlowClaims> {
    try {
      const { payload } = await jwtDecrypt(state, await this.secrets.get(OAUTH_STATE_KEY), { currentDate: new Date(this.clock.now()), keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'] });
      const c = payload as unknown as FlowClaims;
      if (typeof c.org !== 'string' || typeof c.cred !== 'string' || typeof c.member !== 'string' || typeof c.verifier !== 'string' || typeof c.binding !== 'string' || typeof c.actor !== 'string') throw new Error('claims');
      return c;
    } catch {
      throw Errors.invalidRequest('This connection has expired (10 minutes) or was not started on this gateway: start it again from the console.', 'state');
    }
  }
}
