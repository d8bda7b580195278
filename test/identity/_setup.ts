/**
 * Shared set-up of the identity tests: a gateway (fake provider upstream, a manual clock) that
 * trusts one local OIDC issuer, an organisation with an OpenAI credential, and helpers to create
 * trust policies, call the exchange (JSON or form) and read the audit trail straight from the store.
 */
import type { ExecutionContext } from 'ava';
import { api, type ApiResponse } from '../support/app.js';
import { ManualClock } from '../support/clocks.js';
import { proxyFixture, type ProxyFixture } from '../support/proxy-fixture.js';
import { startIssuer, GITHUB_SUBJECT, type TestIssuer } from '../support/oidc-issuer.js';
import { AuditLog } from '../../src/controls/audit-log.js';
import { BAD_CURSOR, type AuditRecord, type Store } from '../../src/store/ports.js';
import { Symbols } from '../../src/symbols.js';

export const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
export const AUDIENCE = 'https://keyward.test';

export interface IdentitySetup {
  f: ProxyFixture;
  issuer: TestIssuer;
  clock: ManualClock;
  /** A policy for the GitHub-shaped token, overridable; its id. */
  policy(over?: Record<string, unknown>, token?: string): Promise<string>;
  exchange(subjectToken: string, extra?: Record<string, string>, form?: boolean): Promise<ApiResponse>;
  /** Every audit record of `org` ('' for none), after flushing the aggregated refusals. */
  audit(org: string): Promise<AuditRecord[]>;
}

/** `timers`: the gateway's timers (rate-limit refills, flushes), when the test moves them itself. */
export async function identitySetup(t: ExecutionContext, env: Record<string, string> = {}, timers?: ManualClock): Promise<IdentitySetup> {
  const issuer = await startIssuer();
  t.teardown(() => issuer.close());
  const clock = new ManualClock(Date.now());
  const f = await proxyFixture(t, { clock, ...(timers ? { timers } : {}), env: { KEYWARD_OIDC_ISSUERS: issuer.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', ...env } });
  return {
    f, issuer, clock,
    async policy(over = {}, token = f.org.token) {
      const r = await api(f.app, 'POST', '/v1/trust-policies', {
        token,
        body: { issuer: issuer.url, audience: AUDIENCE, subject: GITHUB_SUBJECT, claims: { repository: 'acme/app' }, credential_id: f.credentials.openai, ttl: '10m', ...over },
      });
      if (r.status !== 201) throw new Error(`policy create failed: ${r.status} ${r.text}`);
      return r.body.id;
    },
    async exchange(subjectToken, extra = {}, form = false) {
      const fields = { grant_type: GRANT, subject_token: subjectToken, subject_token_type: JWT_TYPE, ...extra };
      if (!form) return api(f.app, 'POST', '/v1/tokens/exchange', { body: fields });
      return api(f.app, 'POST', '/v1/tokens/exchange', { rawBody: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    },
    async audit(org) {
      await f.app.server.container.resolve(AuditLog).flush();
      const page = await f.app.server.container.resolve<Store>(Symbols.Store).listAudit(org, { limit: 100 }, clock.now());
      if (page === BAD_CURSOR) throw new Error('bad cursor');
      return page.data;
    },
  };
}
