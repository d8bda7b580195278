/**
 * Test set-up for single sign-on: a front door (the gateway's public URL, known before it listens), a real
 * OpenID provider (oidc-provider) whose client redirects there, and a gateway behind it with an
 * organisation that has single sign-on configured (`admins` → admin, `viewers` → viewer, acme.test only).
 */
import type { ExecutionContext } from 'ava';
import { api, createOrg, startApp, type Org, type StartOptions, type TestApp } from '../support/app.js';
import { startFrontDoor, startProvider, type TestProvider } from '../support/openid-provider.js';

export interface SsoSetup {
  app: TestApp;
  /** The gateway's public URL (the front door). */
  gateway: string;
  provider: TestProvider;
  org: Org;
}

export const ROLE_MAP = { admins: 'admin', viewers: 'viewer' };

export async function ssoSetup(t: ExecutionContext, options: StartOptions & { otherClients?: Array<{ id: string; secret: string }>; deviceFlow?: boolean } = {}): Promise<SsoSetup> {
  const front = await startFrontDoor();
  t.teardown(() => front.close());
  const provider = await startProvider({
    redirectUri: `${front.url}/v1/sso/callback`, ...(options.otherClients ? { otherClients: options.otherClients } : {}), ...(options.deviceFlow !== undefined ? { deviceFlow: options.deviceFlow } : {}),
  });
  t.teardown(() => provider.close());
  const app = await startApp(t, { ...options, env: { KEYWARD_PUBLIC_URL: front.url, KEYWARD_OIDC_ALLOW_HTTP_LOOPBACK: '1', ...options.env } });
  front.target(app.port);
  const org = await createOrg(app);
  const put = await api(app, 'PUT', '/v1/orgs/self/sso', {
    token: org.token,
    body: { issuer: provider.issuer, client_id: provider.clientId, client_secret: provider.clientSecret, allowed_domains: ['acme.test'], role_map: ROLE_MAP },
  });
  if (put.status !== 200) throw new Error(`sso put failed: ${put.status} ${put.text}`);
  return { app, gateway: front.url, provider, org };
}
