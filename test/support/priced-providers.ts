/**
 * Test support: three provider files with price tables of their own, one per
 * usage shape the fake provider speaks (OpenAI, Anthropic, Gemini), so spend
 * tests price known models at known prices whatever the built-in provider
 * files' tables say. `pricedFixture` starts a gateway whose providers folder
 * holds them, upstream of each the fake provider, with an org, a credential
 * and a token per shape; its `spend` sends one priced request through the
 * proxy, the fake answering FAKE_EVENTS output tokens.
 */
import type { ExecutionContext } from 'ava';
import { createCredential, createOrg, mintToken, startApp, type Org, type StartOptions, type TestApp } from './app.js';
import { startFakeProvider, type FakeProvider } from './fake-provider.js';
import { providersDir } from './providers-dir.js';
import { canaryKey } from './proxy-fixture.js';
import { request, type Reply } from './request.js';

export type Shape = 'openai' | 'anthropic' | 'gemini';

/** How many output tokens (events) the fake answers a `spend` request with. */
export const FAKE_EVENTS = 7;

/** USD per million tokens, as a provider file writes them. */
export const PRICES = {
  openai: { 'spend-4o*': { input: 2.5, cachedInput: 1.25, output: 10 }, 'spend-mini': { input: 0.15, cachedInput: 0.075, output: 0.6 } },
  anthropic: { 'spend-claude*': { input: 3, cachedInput: 0.3, cacheWriteInput: 3.75, output: 15 } },
  gemini: { 'spend-gem*': { input: 0.3, cachedInput: 0.075, output: 2.5 } },
} as const;

/** Each shape's test provider id. */
export const PROVIDER: Record<Shape, string> = { openai: 'spendai', anthropic: 'spendant', gemini: 'spendgem' };

const ROUTES: Record<Shape, string> = {
  openai: "[{ method: 'POST', path: 'v1/chat/completions' }]",
  anthropic: "[{ method: 'POST', path: 'v1/messages' }]",
  gemini: "[{ method: 'POST', path: 'v1beta/models/{model}:generateContent' }, { method: 'POST', path: 'v1beta/models/{model}:streamGenerateContent' }]",
};

function source(shape: Shape): string {
  return `// A ${shape}-shaped test provider with a price table (test/support/priced-providers.ts).
export default {
  apiVersion: 1,
  id: '${PROVIDER[shape]}',
  name: 'Spend test (${shape})',
  upstream: 'https://${PROVIDER[shape]}.test',
  auth: { kind: 'header', header: 'x-${PROVIDER[shape]}-key' },
  usage: '${shape}',
  routes: ${ROUTES[shape]},
  prices: ${JSON.stringify(PRICES[shape])},
  pricesAsOf: '2026-11-01',
  pricesSource: 'https://prices.example/test',
};
`;
}

export interface PricedFixture {
  app: TestApp;
  fake: FakeProvider;
  org: Org;
  credentials: Record<Shape, string>;
  tokens: Record<Shape, { id: string; token: string }>;
  /** The providers folder (for a CLI or a second server on the same data). */
  providersDir: string;
  env: Record<string, string>;
  proxyUrl(path: string): string;
  /** POSTs `body` as JSON to the proxy path with the token, the fake answering FAKE_EVENTS events; read whole; throws unless 200. */
  spend(path: string, body: unknown, token: string): Promise<Reply>;
}

export async function pricedFixture(t: ExecutionContext, options: StartOptions = {}): Promise<PricedFixture> {
  const fake = await startFakeProvider();
  t.teardown(() => fake.close());
  const dir = providersDir(t, [], Object.fromEntries((['openai', 'anthropic', 'gemini'] as const).map((s) => [`${PROVIDER[s]}.js`, source(s)])));
  const env = {
    KEYWARD_PROVIDERS_DIR: dir,
    ...Object.fromEntries(Object.values(PROVIDER).map((id) => [`KEYWARD_UPSTREAM_${id.toUpperCase()}`, fake.url])),
    ...options.env,
  };
  const app = await startApp(t, { ...options, env });
  const org = await createOrg(app);
  const credentials = {} as Record<Shape, string>;
  const tokens = {} as Record<Shape, { id: string; token: string }>;
  for (const shape of ['openai', 'anthropic', 'gemini'] as const) {
    credentials[shape] = await createCredential(app, org, PROVIDER[shape], canaryKey(shape));
    tokens[shape] = await mintToken(app, org, credentials[shape]);
  }
  const proxyUrl = (path: string) => `${app.url}/v1/proxy/${path}`;
  const spend = async (path: string, body: unknown, token: string) => {
    const r = await request(proxyUrl(path), { headers: { 'x-proxy-token': token, 'x-fake-events': String(FAKE_EVENTS) }, body: JSON.stringify(body) });
    if (r.status !== 200) throw new Error(`proxy ${path}: ${r.status} ${r.text.slice(0, 200)}`);
    return r;
  };
  return { app, fake, org, credentials, tokens, providersDir: dir, env, proxyUrl, spend };
}
