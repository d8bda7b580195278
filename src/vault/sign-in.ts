/**
 * Signing in by single sign-on. The console's flow: `start` sends the browser to the organisation's
 * provider (authorization code, PKCE S256, fresh `state` and `nonce`) and keeps what the callback must
 * check in a short-lived cookie, encrypted (A256GCM, a deployment secret) so no store write is needed
 * and no instance has to be the one that started; `callback` checks it all through openid-client and
 * issues the browser session. The CLI's flow (RFC 8628) runs through the same confidential client: the
 * device code stays sealed inside a handle only this deployment can open, and each poll is one token
 * request. Each flow's sealed state lives ten minutes at most (the injected clock).
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { Errors } from '../errors.js';
import { isId } from '../ids.js';
import type { SsoClient } from '../identity/sso-client.js';
import { loadJose } from '../identity/jose.js';
import { loadOidcClient } from '../identity/sso-client.js';
import type { MemberRecord, OrgStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { DeploymentSecrets, SSO_FLOW_KEY } from './deployment-secrets.js';
import { MemberService } from './members.js';
import { SessionService, type IssuedSession } from './sessions.js';
import { SsoConfigService } from './sso-config.js';

export const FLOW_COOKIE = 'keyward_sso';
const FLOW_S = 600;

interface CodeFlowState {
  kind: 'code';
  org: string;
  state: string;
  nonce: string;
  verifier: string;
}

interface DeviceFlowState {
  kind: 'device';
  org: string;
  deviceCode: string;
}

export interface DeviceStarted {
  handle: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  expiresIn: number;
  interval: number;
}

@injectable()
export class SignInService {
  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.OrgStore) private readonly orgs: OrgStore,
    @inject(SsoConfigService) private readonly configs: SsoConfigService,
    @inject(Symbols.SsoClient) private readonly client: SsoClient,
    @inject(MemberService) private readonly members: MemberService,
    @inject(SessionService) private readonly sessions: SessionService,
    @inject(DeploymentSecrets) private readonly secrets: DeploymentSecrets,
  ) {}

  /** Where to send the browser, and the sealed flow state for its cookie. */
  async start(org: string): Promise<{ location: string; flow: string }> {
    const config = await this.configs.get(await this.orgId(org));
    const oidc = await loadOidcClient();
    const checks = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier() };
    const url = await this.client.authorizationUrl(await this.configs.providerClient(config), this.configs.redirectUri(), checks);
    return { location: url.href, flow: await this.seal({ kind: 'code', org: config.orgId, ...checks }) };
  }

  /** The provider's redirect back (its query, and the flow cookie) → the member and its browser session. */
  async callback(query: URLSearchParams, flowCookie: string | undefined): Promise<{ member: MemberRecord; session: IssuedSession }> {
    if (query.has('error')) {
      const code = query.get('error')!;
      throw Errors.signInFailed(`The provider refused the sign-in: ${/^[a-z_]{1,64}$/.test(code) ? code : 'error'}.`);
    }
    const flow = flowCookie === undefined ? undefined : await this.open(flowCookie);
    if (!flow || flow.kind !== 'code') throw Errors.signInFailed('This sign-in was not started here, or took longer than ten minutes: start again.');
    // openid-client checks it too; refusing first keeps a forged callback from costing a token request.
    if (query.get('state') !== flow.state) throw Errors.signInFailed('The sign-in\'s `state` does not match the one this browser started: start again.');
    const config = await this.configs.get(flow.org);
    const callbackUrl = new URL(`${this.configs.redirectUri()}?${query.toString()}`);
    const person = await this.client.completeCodeFlow(await this.configs.providerClient(config), callbackUrl, flow);
    if (person.issuer !== config.issuer) throw Errors.signInFailed('The ID token\'s issuer is not the organisation\'s provider.');
    const member = await this.members.signIn(config, person);
    return { member, session: await this.sessions.issue(member, 'browser') };
  }

  /** `keyward login`: a device sign-in at the organisation's provider. */
  async startDevice(org: string): Promise<DeviceStarted> {
    const config = await this.configs.get(await this.orgId(org));
    const d = await this.client.startDevice(await this.configs.providerClient(config));
    const handle = await this.seal({ kind: 'device', org: config.orgId, deviceCode: d.deviceCode }, Math.min(d.expiresIn, 1800));
    return { handle, userCode: d.userCode, verificationUri: d.verificationUri, ...(d.verificationUriComplete ? { verificationUriComplete: d.verificationUriComplete } : {}), expiresIn: d.expiresIn, interval: d.interval };
  }

  /** One poll: 400 authorization_pending until the person has signed in; then a CLI session and its refresh value. */
  async pollDevice(handle: string): Promise<{ member: MemberRecord; cli: IssuedSession; refresh: IssuedSession }> {
    const flow = await this.open(handle);
    if (!flow || flow.kind !== 'device') throw Errors.signInFailed('This device sign-in is unknown or expired: run `keyward login` again.');
    const config = await this.configs.get(flow.org);
    const person = await this.client.pollDevice(await this.configs.providerClient(config), flow.deviceCode);
    if (person.issuer !== config.issuer) throw Errors.signInFailed('The ID token\'s issuer is not the organisation\'s provider.');
    const member = await this.members.signIn(config, person);
    return { member, cli: await this.sessions.issue(member, 'cli'), refresh: await this.sessions.issue(member, 'refresh') };
  }

  /** An organisation's id, checked to exist (404 otherwise, as for an organisation without single sign-on). */
  private async orgId(org: string): Promise<string> {
    if (!isId('org', org) || !(await this.orgs.getOrg(org))) throw Errors.notFound('No such organisation, or it has no single sign-on configured.');
    return org;
  }

  private async seal(state: CodeFlowState | DeviceFlowState, lifetimeS = FLOW_S): Promise<string> {
    const { EncryptJWT } = await loadJose();
    const now = Math.floor(this.clock.now() / 1000);
    return new EncryptJWT({ ...state }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt(now).setExpirationTime(now + lifetimeS)
      .encrypt(await this.secrets.get(SSO_FLOW_KEY));
  }

  private async open(sealed: string): Promise<CodeFlowState | DeviceFlowState | undefined> {
    if (sealed.length > 8192) return undefined;
    const { jwtDecrypt } = await loadJose();
    try {
      const { payload } = await jwtDecrypt(sealed, await this.secrets.get(SSO_FLOW_KEY), {
        currentDate: new Date(this.clock.now()), keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'],
      });
      return payload as unknown as CodeFlowState | DeviceFlowState;
    } catch {
      return undefined;
    }
  }
}
