/**
 * Single sign-on's routes: the organisation's configuration (PUT/GET /v1/orgs/self/sso, owner only), the
 * console's sign-in (GET /v1/sso/start sends the browser to the provider; GET /v1/sso/callback is where it
 * comes back, and sets the session cookie), `keyward login`'s device sign-in (POST /v1/sso/device, then
 * POST /v1/sso/device/token until the person has signed in), and the session itself (GET /v1/session: who
 * is signed in and the console's anti-CSRF value; POST /v1/session/refresh; DELETE /v1/session signs out).
 * The session cookie is HttpOnly, SameSite=Strict, Secure unless the public URL is plain http (loopback),
 * on /v1 only, for 12 hours at most. GET /v1/sso/provider tells the sign-in pages whether an organisation (id
 * or name) signs in by single sign-on and with what, nothing more. A browser whose sign-in is refused at the
 * callback is sent back to the console, which shows why (a one-minute cookie readable there, set by this
 * gateway alone, so no link can put words on that page); any other client gets the JSON refusal. `keyward
 * login`'s loopback sign-in (`cli_redirect`, `cli_challenge`) ends at POST /v1/sso/cli/token.
 */
import { inject, injectable } from 'tsyringe';
import type { Clock } from '../clock.js';
import type { Config } from '../settings/config.js';
import { ApiError, Errors } from '../errors.js';
import type { Router } from '../http/router.js';
import { Symbols } from '../symbols.js';
import { EVERYONE, OWNER } from '../vault/roles.js';
import { SessionService, SESSION_COOKIE } from '../vault/sessions.js';
import { FLOW_COOKIE, SignInService } from '../vault/sign-in.js';
import { SsoConfigService } from '../vault/sso-config.js';
import { MemberService } from '../vault/members.js';
import { orgOf } from './params.js';
import { cookie, memberView, ssoConfigView } from './people-views.js';
import {
  CALLBACK_QUERY, CLI_CODE_REDEEM, CliSession, DEVICE_POLL, PROVIDER_QUERY, SsoProvider, DEVICE_START, DeviceStarted, Session, SESSION_REFRESH, SessionEnded, SIGN_IN_START, SignInRedirect, SSO_CONFIG_PUT, SsoConfig,
} from './schemas/people.js';
import { iso } from './views.js';

/** Why the browser's sign-in was refused, for the console's sign-in page (fixed words of this gateway). */
export const SIGN_IN_ERROR_COOKIE = 'keyward_sign_in_error';
/**
 * Readable by the console, worth nothing to anyone: that this browser holds a session cookie, so the console asks
 * GET /v1/session only then (a page load without one would count as a failed authentication).
 */
export const SIGNED_IN_MARKER = 'keyward_console_sso';

@injectable()
export class SsoApi {
  constructor(
    @inject(Symbols.Config) private readonly config: Config,
    @inject(Symbols.Clock) private readonly clock: Clock,
    @inject(SsoConfigService) private readonly configs: SsoConfigService,
    @inject(SignInService) private readonly signIn: SignInService,
    @inject(SessionService) private readonly sessions: SessionService,
    @inject(MemberService) private readonly members: MemberService,
  ) {}

  /** Secure unless the gateway is reached over plain http (a loopback address: KEYWARD_PUBLIC_URL checks that). */
  private get secure(): boolean {
    return !this.config.publicUrl?.startsWith('http:');
  }

  register(router: Router): void {
    router.add('PUT', '/v1/orgs/self/sso', {
      auth: 'org', roles: OWNER, action: 'sso.update', body: SSO_CONFIG_PUT, operationId: 'putSso', tag: 'single sign-on', summary: 'Configure single sign-on',
      description: 'The organisation\'s OpenID provider and confidential client (organisation token only). The provider\'s discovery document is fetched first (https; SSRF rules); the client secret is sealed and never returned. Register `redirect_uri` at the provider.',
      response: { status: 200, schema: SsoConfig, description: 'The configuration (never the secret).' },
      errors: ['forbidden', 'sso_unavailable'],
    }, async (r) => {
      const org = orgOf(r);
      const record = await this.configs.put(org.id, await r.body());
      return { status: 200, body: ssoConfigView(record, this.configs.redirectUri()), target: org.id };
    });

    router.add('GET', '/v1/orgs/self/sso', {
      auth: 'org', roles: OWNER, operationId: 'getSso', tag: 'single sign-on', summary: 'Read the single sign-on configuration',
      response: { status: 200, schema: SsoConfig, description: 'The configuration (never the secret).' },
      errors: ['forbidden', 'not_found'],
    }, async (r) => ({ status: 200, body: ssoConfigView(await this.configs.get(orgOf(r).id), this.configs.redirectUri()) }));

    router.add('GET', '/v1/sso/provider', {
      auth: 'none', query: PROVIDER_QUERY, operationId: 'getSignInProvider', tag: 'single sign-on', summary: 'Whether an organisation signs in by single sign-on',
      description: 'For the sign-in pages: the provider\'s host (what "Sign in with …" names) and whether it offers the device grant. 404 alike for an unknown organisation and one without single sign-on.',
      response: { status: 200, schema: SsoProvider, description: 'The provider.' },
      errors: ['not_found', 'sso_unavailable'],
    }, async (r) => {
      const p = await this.signIn.provider(r.query.org);
      return { status: 200, body: { object: 'sso_provider' as const, provider: p.provider, device_grant: p.deviceGrant } };
    });

    router.add('GET', '/v1/sso/start', {
      auth: 'none', query: SIGN_IN_START, operationId: 'startSignIn', tag: 'single sign-on', summary: 'Start the console\'s sign-in',
      description: 'Answers 302 to the organisation\'s provider (authorization code, PKCE S256, `state`, `nonce`, `response_mode=query`) and sets a ten-minute, HttpOnly cookie holding what the callback checks (encrypted). `org` is the organisation\'s id or name. With `cli_redirect` and `cli_challenge` (`keyward login` without a device grant) the callback sends the browser to that loopback address with a one-time code instead of signing the console in.',
      response: { status: 302, schema: SignInRedirect, description: 'To the provider.' },
      errors: ['not_found', 'sso_unavailable'],
    }, async (r) => {
      const { org, cli_redirect: redirect, cli_challenge: challenge } = r.query;
      if ((redirect === undefined) !== (challenge === undefined)) throw Errors.invalidRequest('`cli_redirect` and `cli_challenge` go together.', redirect === undefined ? 'cli_redirect' : 'cli_challenge');
      const { location, flow } = await this.signIn.start(org, redirect !== undefined && challenge !== undefined ? { redirect, challenge } : undefined);
      // Lax: the provider's redirect back is a top-level navigation from another site, which a Strict cookie would miss.
      return { status: 302, body: { location }, headers: { location, 'set-cookie': cookie(FLOW_COOKIE, flow, { path: '/v1/sso', maxAgeS: 600, sameSite: 'Lax', secure: this.secure }) } };
    });

    router.add('GET', '/v1/sso/callback', {
      auth: 'none', query: CALLBACK_QUERY, action: 'member.sign_in', operationId: 'signInCallback', tag: 'single sign-on', summary: 'The provider\'s redirect back',
      description: 'Checks `state` against this browser\'s sign-in, exchanges the code with its PKCE verifier, verifies the ID token (JWKS signature, issuer, audience, nonce, expiry) and the e-mail domain, makes or updates the member, then answers 302 to the console with the session cookie set (or, for `keyward login`, to its loopback address with a one-time code). A refusal is 400 `sign_in_failed`; a browser\'s navigation is sent to the console instead, which says why.',
      response: { status: 302, schema: SignInRedirect, description: 'To the console, signed in.' },
      errors: ['sign_in_failed', 'not_found', 'sso_unavailable'],
    }, async (r) => {
      const clearFlow = cookie(FLOW_COOKIE, '', { path: '/v1/sso', maxAgeS: 0, sameSite: 'Lax', secure: this.secure });
      let outcome: Awaited<ReturnType<SignInService['callback']>>;
      try {
        outcome = await this.signIn.callback(r.query, flowCookie(r.req.headers.cookie));
      } catch (err) {
        if (!(err instanceof ApiError) || err.status >= 500 || r.req.headers['sec-fetch-mode'] !== 'navigate') throw err;
        const why = cookie(SIGN_IN_ERROR_COOKIE, encodeURIComponent(err.message.slice(0, 300)), { path: '/console', maxAgeS: 60, sameSite: 'Lax', secure: this.secure, readable: true });
        return { status: 303, refusal: true, body: { location: '/console/' }, headers: { location: '/console/', 'set-cookie': [why, clearFlow] } };
      }
      const { member } = outcome;
      const audit = { org: member.orgId, actor: member.id, target: member.id, ...(member.email ? { targetName: member.email } : {}) };
      if (outcome.cliRedirect !== undefined) {
        return { status: 302, body: { location: outcome.cliRedirect }, ...audit, headers: { location: outcome.cliRedirect, 'set-cookie': clearFlow } };
      }
      const maxAgeS = Math.floor((outcome.session.expiresAt - this.clock.now()) / 1000);
      return {
        status: 302, body: { location: '/console/' }, ...audit,
        headers: {
          location: '/console/',
          'set-cookie': [
            cookie(SESSION_COOKIE, outcome.session.session, { path: '/v1', maxAgeS, sameSite: 'Strict', secure: this.secure }), clearFlow,
            cookie(SIGNED_IN_MARKER, '1', { path: '/console', maxAgeS, sameSite: 'Lax', secure: this.secure, readable: true }),
          ],
        },
      };
    });

    router.add('POST', '/v1/sso/cli/token', {
      auth: 'none', body: CLI_CODE_REDEEM, action: 'member.sign_in', operationId: 'redeemCliSignIn', tag: 'single sign-on', summary: 'Finish `keyward login`\'s loopback sign-in',
      description: 'The one-time code the loopback redirect carried, with the PKCE verifier whose S256 challenge started the sign-in: the CLI\'s session and refresh value, shown once. A code works once.',
      response: { status: 201, schema: CliSession, description: 'The CLI session.' },
      errors: ['sign_in_failed'],
    }, async (r) => {
      const body = await r.body();
      const { member, cli, refresh } = await this.signIn.redeemCliCode(body.code, body.code_verifier);
      return {
        status: 201, org: member.orgId, actor: member.id, target: member.id, secretFields: ['session', 'refresh_token'],
        body: { object: 'session' as const, session: cli.session, refresh_token: refresh.session, expires_at: iso(cli.expiresAt), refresh_expires_at: iso(refresh.expiresAt), member: memberView(member) },
      };
    });

    router.add('POST', '/v1/sso/device', {
      auth: 'none', body: DEVICE_START, operationId: 'startDeviceSignIn', tag: 'single sign-on', summary: 'Start `keyward login`\'s device sign-in',
      description: 'RFC 8628 through the organisation\'s confidential client: the person opens `verification_uri` and enters `user_code`; the CLI polls POST /v1/sso/device/token with `device_handle`.',
      response: { status: 200, schema: DeviceStarted, description: 'The codes to show.' },
      errors: ['not_found', 'sso_unavailable'],
    }, async (r) => {
      const d = await this.signIn.startDevice((await r.body()).org);
      return {
        status: 200,
        body: {
          object: 'device_sign_in' as const, device_handle: d.handle, user_code: d.userCode, verification_uri: d.verificationUri,
          ...(d.verificationUriComplete ? { verification_uri_complete: d.verificationUriComplete } : {}), expires_in: d.expiresIn, interval: d.interval,
        },
      };
    });

    router.add('POST', '/v1/sso/device/token', {
      auth: 'none', body: DEVICE_POLL, action: 'member.sign_in', operationId: 'pollDeviceSignIn', tag: 'single sign-on', summary: 'Poll `keyward login`\'s device sign-in',
      description: '400 `authorization_pending` until the person has signed in; then the CLI\'s session and refresh value, shown once.',
      response: { status: 201, schema: CliSession, description: 'The CLI session.' },
      errors: ['authorization_pending', 'sign_in_failed', 'sso_unavailable'],
    }, async (r) => {
      const { member, cli, refresh } = await this.signIn.pollDevice((await r.body()).device_handle);
      return {
        status: 201, org: member.orgId, actor: member.id, target: member.id, secretFields: ['session', 'refresh_token'],
        body: { object: 'session' as const, session: cli.session, refresh_token: refresh.session, expires_at: iso(cli.expiresAt), refresh_expires_at: iso(refresh.expiresAt), member: memberView(member) },
      };
    });

    router.add('POST', '/v1/session/refresh', {
      auth: 'none', body: SESSION_REFRESH, operationId: 'refreshSession', tag: 'single sign-on', summary: 'Renew `keyward login`\'s session',
      description: 'The refresh value works once: the answer carries a new session and a new refresh value. A removed member\'s refresh is refused.',
      response: { status: 201, schema: CliSession, description: 'The renewed CLI session.' },
      errors: ['unauthenticated'],
    }, async (r) => {
      const { member, cli, refresh } = await this.sessions.refresh((await r.body()).refresh_token);
      return {
        status: 201, secretFields: ['session', 'refresh_token'],
        body: { object: 'session' as const, session: cli.session, refresh_token: refresh.session, expires_at: iso(cli.expiresAt), refresh_expires_at: iso(refresh.expiresAt), member: memberView(member) },
      };
    });

    router.add('GET', '/v1/session', {
      auth: 'org', roles: EVERYONE, operationId: 'getSession', tag: 'single sign-on', summary: 'Who is signed in',
      description: 'A member\'s session only (cookie or `keyward login`\'s bearer). With the console\'s cookie it also answers `csrf`, the value every other admin call made with the cookie sends as `X-Keyward-CSRF` (this call alone needs none).',
      response: { status: 200, schema: Session, description: 'The member and its session.' },
      errors: ['not_found'],
    }, async (r) => {
      const p = r.principal;
      if (p.kind !== 'org' || !p.session) throw Errors.notFound('No session: an organisation token or admin key has none (GET /v1/orgs/self describes the caller).');
      const member = await this.members.get(p.org.id, p.actor);
      return {
        status: 200,
        body: {
          object: 'session' as const, org: { id: p.org.id, name: p.org.name }, member: memberView(member), expires_at: iso(p.expiresAt!),
          ...(p.session.via === 'cookie' ? { csrf: await this.sessions.csrf(p.session.hash) } : {}),
        },
      };
    });

    router.add('DELETE', '/v1/session', {
      auth: 'org', roles: EVERYONE, action: 'session.delete', operationId: 'endSession', tag: 'single sign-on', summary: 'Sign out',
      description: 'Deletes the presented session at once (every instance reads sessions on each call) and clears the cookie.',
      response: { status: 200, schema: SessionEnded, description: 'Signed out.' },
      errors: ['not_found', 'csrf_required'],
    }, async (r) => {
      const p = r.principal;
      if (p.kind !== 'org' || !p.session) throw Errors.notFound('No session: an organisation token or admin key has none to end.');
      await this.sessions.end(p.session.hash);
      return {
        status: 200, target: p.actor, body: { object: 'session' as const, deleted: true as const },
        headers: {
          'set-cookie': [
            cookie(SESSION_COOKIE, '', { path: '/v1', maxAgeS: 0, sameSite: 'Strict', secure: this.secure }),
            cookie(SIGNED_IN_MARKER, '', { path: '/console', maxAgeS: 0, sameSite: 'Lax', secure: this.secure, readable: true }),
          ],
        },
      };
    });
  }
}

/** The sign-in cookie's value; undefined when absent or given twice. */
function flowCookie(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const values = header.split(';').map((p) => p.trim()).filter((p) => p.startsWith(`${FLOW_COOKIE}=`)).map((p) => p.slice(FLOW_COOKIE.length + 1));
  return values.length === 1 && values[0] !== '' ? values[0] : undefined;
}
