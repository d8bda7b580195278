/**
 * Signing in by single sign-on. The console's flow: `start` sends the browser to the organisation's
 * provider (authorization code, PKCE S256, fresh `state` and `nonce`) and keeps what the callback must
 * check in a short-lived cookie, encrypted (A256GCM, a deployment secret) so no store write is needed
 * and no instance has to be the one that started; `callback` checks it all through openid-client and
 * issues the browser session. The CLI's flow (RFC 8628) runs through the same confidential client: the
 * device code stays sealed inside a handle only this deployment can open, and each poll is one token
 * request. Each flow's sealed state lives ten minutes at most (the injected clock). Where the provider
 * offers no device grant, `keyward login` runs the console's flow with a loopback redirect (RFC 8252): the
 * callback sends the browser to the CLI's 127.0.0.1 listener with a one-time code, sealed, that holds a
 * fresh refresh value; only the CLI's PKCE verifier redeems it, and the refresh value works once, so a
 * replayed code is refused. An organisation is named by its id or, for the sign-in pages, by its name.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import { timingSafeEqual } from 'node:crypto';
import { Errors } from '../errors.js';
import { isId } from '../ids.js';
import type { SsoClient } from '../identity/sso-client.js';
import { loadJose } from '../identity/jose.js';
import { loadOidcClient } from '../identity/sso-client.js';
import type { MemberRecord, OrgStore } from '../store/ports.js';
import { Symbols } from '../symbols.js';
import { DeploymentSecrets, SSO_FLOW_KEY } from './deployment-secrets.js';
import { MemberService } from './members.js';
import { ORG_NAME } from './org-service.js';
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
  /** `keyward login`'s loopback sign-in: where the browser goes back to, and the CLI's PKCE challenge. */
  cli?: { redirect: string; challenge: string };
}

/** What the loopback redirect carries to the CLI: a refresh value, redeemable once with the CLI's verifier. */
interface CliCodeState {
  kind: 'cli_code';
  refresh: string;
  challenge: string;
}

const CLI_CODE_S = 120;
/** Organisations read at most when one is named by its name (the pages of a deployment's list). */
const NAME_SCAN_PAGES = 20;
const NAME_INDEX_MS = 60_000;

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

/** One answer for an unknown organisation and one without single sign-on: the sign-in pages learn nothing more. */
const notFound = () => Errors.notFound('No such organisation, or it has no single sign-on configured.');

@injectable()
export class SignInService {
  private names: { at: number; index: Map<string, string[]> } | undefined;

  constructor(
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(Symbols.OrgStore) private readonly orgs: OrgStore,
    @inject(SsoConfigService) private readonly configs: SsoConfigService,
    @inject(Symbols.SsoClient) private readonly client: SsoClient,
    @inject(MemberService) private readonly members: MemberService,
    @inject(SessionService) private readonly sessions: SessionService,
    @inject(DeploymentSecrets) private readonly secrets: DeploymentSecrets,
  ) {}

  /** What the sign-in pages may say of an organisation: that it has single sign-on, the provider's host, and whether it offers the device grant. */
  async provider(org: string): Promise<{ provider: string; deviceGrant: boolean }> {
    const config = await this.configOf(org);
    const metadata = await this.client.metadata(await this.configs.providerClient(config));
    return { provider: new URL(config.issuer).host, deviceGrant: typeof metadata.device_authorization_endpoint === 'string' };
  }

  /** Where to send the browser, and the sealed flow state for its cookie; `cli`: `keyward login`'s loopback redirect and PKCE challenge. */
  async start(org: string, cli?: { redirect: string; challenge: string }): Promise<{ location: string; flow: string }> {
    const config = await this.configOf(org);
    const oidc = await loadOidcClient();
    const checks = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier() };
    const url = await this.client.authorizationUrl(await this.configs.providerClient(config), this.configs.redirectUri(), checks);
    return { location: url.href, flow: await this.seal({ kind: 'code', org: config.orgId, ...checks, ...(cli ? { cli } : {}) }) };
  }

  /**
   * The provider's redirect back (its query, and the flow cookie) → the member and its browser session, or, for
   * `keyward login`'s loopback sign-in, where to send the browser with the one-time code.
   */
  async callback(query: URLSearchParams, flowCookie: string | undefined): Promise<{ member: MemberRecord; session: IssuedSession; cliRedirect?: undefined } | { member: MemberRecord; cliRedirect: string; session?: undefined }> {
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
    if (flow.cli) {
      const refresh = await this.sessions.issue(member, 'refresh');
      const code = await this.seal({ kind: 'cli_code', refresh: refresh.session, challenge: flow.cli.challenge }, CLI_CODE_S);
      const to = new URL(flow.cli.redirect);
      to.searchParams.set('code', code);
      return { member, cliRedirect: to.href };
    }
    return { member, session: await this.sessions.issue(member, 'browser') };
  }

  /** `keyward login`'s loopback code and its PKCE verifier → a CLI session and refresh value (once: the refresh value inside works once). */
  async redeemCliCode(code: string, verifier: string): Promise<{ member: MemberRecord; cli: IssuedSession; refresh: IssuedSession }> {
    const flow = await this.open(code);
    if (!flow || flow.kind !== 'cli_code') throw Errors.signInFailed('This sign-in code is unknown or expired: run `keyward login` again.');
    const oidc = await loadOidcClient();
    const challenge = Buffer.from(await oidc.calculatePKCECodeChallenge(verifier));
    if (challenge.length !== Buffer.byteLength(flow.challenge) || !timingSafeEqual(challenge, Buffer.from(flow.challenge))) {
      throw Errors.signInFailed('The code verifier does not match the sign-in\'s challenge.');
    }
    try {
      return await this.sessions.refresh(flow.refresh);
    } catch {
      throw Errors.signInFailed('This sign-in code was already used: run `keyward login` again.');
    }
  }

  /** `keyward login`: a device sign-in at the organisation's provider. */
  async startDevice(org: string): Promise<DeviceStarted> {
    const config = await this.configOf(org);
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

  /** The organisation's single sign-on configuration (404 alike when the organisation or its configuration is missing). */
  private async configOf(org: string) {
    const config = await this.configs.find(await this.orgId(org));
    if (!config) throw notFound();
    return config;
  }

  /**
   * An organisation's id, checked to exist; or the one organisation with single sign-on of that name (exact,
   * ignoring case). 404 otherwise, the same as for an organisation without single sign-on; 400 when several share it.
   */
  private async orgId(org: string): Promise<string> {
    const none = notFound;
    if (isId('org', org)) {
      if (!(await this.orgs.getOrg(org))) throw none();
      return org;
    }
    if (!ORG_NAME.test(org)) throw none();
    const found = (await this.namesIndex()).get(org.toLowerCase()) ?? [];
    const withSso: string[] = [];
    for (const id of found) if (await this.configs.find(id)) withSso.push(id);
    if (withSso.length > 1) throw Errors.invalidRequest('Several organisations have this name: sign in with the organisation\'s id (org_…).', 'org');
    if (withSso.length === 0) throw none();
    return withSso[0]!;
  }

  /**
   * Organisation names (lower case) → ids, read at most once a minute per instance (the sign-in pages are
   * public: a stream of made-up names costs a map lookup, not a scan). An organisation made within the
   * minute is found by its id until then.
   */
  private async namesIndex(): Promise<Map<string, string[]>> {
    const now = this.clock.now();
    if (this.names && now - this.names.at < NAME_INDEX_MS) return this.names.index;
    const index = new Map<string, string[]>();
    let after: string | undefined;
    for (let i = 0; i < NAME_SCAN_PAGES; i++) {
      const page = await this.orgs.listOrgs({ limit: 100, ...(after ? { startingAfter: after } : {}) });
      if (typeof page !== 'object' || !('data' in page)) break;
      for (const o of page.data) index.set(o.name.toLowerCase(), [...(index.get(o.name.toLowerCase()) ?? []), o.id]);
      if (!page.hasMore || page.data.length === 0) break;
      after = page.data[page.data.length - 1]!.id;
    }
    this.names = { at: now, index };
    return index;
  }

  private async seal(state: CodeFlowState | DeviceFlowState | CliCodeState, lifetimeS = FLOW_S): Promise<string> {
    const { EncryptJWT } = await loadJose();
    const now = Math.floor(this.clock.now() / 1000);
    return new EncryptJWT({ ...state }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt(now).setExpirationTime(now + lifetimeS)
      .encrypt(await this.secrets.get(SSO_FLOW_KEY));
  }

  private async open(sealed: string): Promise<CodeFlowState | DeviceFlowState | CliCodeState | undefined> {
    if (sealed.length > 8192) return undefined;
    const { jwtDecrypt } = await loadJose();
    try {
      const { payload } = await jwtDecrypt(sealed, await this.secrets.get(SSO_FLOW_KEY), {
        currentDate: new Date(this.clock.now()), keyManagementAlgorithms: ['dir'], contentEncryptionAlgorithms: ['A256GCM'],
      });
      return payload as unknown as CodeFlowState | DeviceFlowState | CliCodeState;
    } catch {
      return undefined;
    }
  }
}
