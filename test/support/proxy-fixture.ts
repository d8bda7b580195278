/** A gateway wired to a fake provider for openai, anthropic and gemini, with an org, keys and tokens ready. */
import type { ExecutionContext } from 'ava';
import { randomBytes } from 'node:crypto';
import { createCredential, createOrg, mintToken, startApp, type Org, type StartOptions, type TestApp } from './app.js';
import { startFakeProvider, type FakeProvider } from './fake-provider.js';

export interface ProxyFixture {
  app: TestApp;
  fake: FakeProvider;
  org: Org;
  keys: Record<'openai' | 'anthropic' | 'gemini', string>;
  credentials: Record<'openai' | 'anthropic' | 'gemini', string>;
  tokens: Record<'openai' | 'anthropic' | 'gemini', { id: string; token: string }>;
  /** `${app.url}/v1/proxy/` + path */
  proxyUrl(path: string): string;
}

export const canaryKey = (provider: string): string => `sk-${provider}-canary-${randomBytes(12).toString('hex')}`;

export async function proxyFixture(t: ExecutionContext, options: StartOptions = {}): Promise<ProxyFixture> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const app = await startApp(t, {
    ...options,
    env: {
      KEYWARD_UPSTREAM_OPENAI: fake.url,
      KEYWARD_UPSTREAM_ANTHROPIC: fake.url,
      KEYWARD_UPSTREAM_GEMINI: fake.url,
      ...options.env,
    },
  });
  const org = await createOrg(app);
  const keys = { openai: canaryKey('openai'), anthropic: canaryKey('anthropic'), gemini: canaryKey('gemini') };
  const credentials = {
    openai: await createCredential(app, org, 'openai', keys.openai),
    anthropic: await createCredential(app, org, 'anthropic', keys.anthropic),
    gemini: await createCredential(app, org, 'gemini', keys.gemini),
  };
  const tokens = {
    openai: await mintToken(app, org, credentials.openai),
    anthropic: await mintToken(app, org, credentials.anthropic),
    gemini: await mintToken(app, org, credentials.gemini),
  };
  return { app, fake, org, keys, credentials, tokens, proxyUrl: (path) => `${app.url}/v1/proxy/${path}` };
}
